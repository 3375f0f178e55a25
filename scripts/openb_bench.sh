#!/usr/bin/env bash
# The Alibaba openb benchmark (FGD paper, ATC'23): for each pod list and seed, sample
# pods until their GPUs reach 100% of the cluster (`gpuplan import openb --load 1.0`),
# then plan the aggregated demand
#   with the ILP (`gpuplan plan`), RUNS times: the median wall of the whole command;
#   with the greedy baseline (`gpuplan plan --solver greedy`: first-fit decreasing,
#   best-fit node choice).
# Prints unallocated GPU % (100 - allocation %) per list (mean over seeds), the least
# unallocated % any placement of the sample can reach (from the ILP's bound on
# admission), next to FGD's and BestFit's published means (fgd_reference_metrics.csv).
# The checker verifies every plan (capacity, CPU, memory, GPU shares), so a figure
# exists only for a valid plan.
#
#   bash scripts/openb_bench.sh [LIST...]      (default: the five lists in ../shared)
#   SEEDS="42 43" RUNS=1 bash scripts/openb_bench.sh default
#   OPENB_DIR=/path/to/csv bash scripts/openb_bench.sh gpuspec33 cpu200
#
# OPENB_DIR: a folder with openb_node_list_gpu_node.csv and openb_pod_list_*.csv. The
# shared folder has five lists; the other 21 (gpushare20..100, gpuspec05..33,
# multigpu20..50, cpu0..300) are in the trace repository, alibaba/clusterdata,
# cluster-trace-gpu-v2023/csv. Lists the reference file has no row for print "-".
set -euo pipefail
cd "$(dirname "$0")/.."
B=${OPENB_DIR:-../shared/bench/openb}
REF=${OPENB_REF:-../shared/bench/openb/fgd_reference_metrics.csv}
SEEDS=${SEEDS:-"42"}
RUNS=${RUNS:-3}
LISTS=("$@")
[ ${#LISTS[@]} -gt 0 ] || LISTS=(default gpushare40 gpushare80 multigpu30 cpu050)
[ -n "${GPUPLAN_BIN:-}" ] || cargo build --release --locked -q
G=${GPUPLAN_BIN:-target/release/gpuplan}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
alloc() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["placement"]["summary"]["allocation_pct"])' "$1"; }
# The least unallocated % any placement can reach, from the ILP's bound on admission.
floor() { python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); b=p["solver"]["bound"]; t=p["placement"]["summary"]["gpus_total"]; print(max(0.0, 100*(1-b/t)) if b is not None else "nan")' "$1"; }
echo "| pod list | seeds | gpuplan ILP | least possible (ILP bound) | ILP - bound (points) | greedy (FFD, best fit) | FGD (paper) | BestFit (paper) | ILP wall s (median of $RUNS) |"
echo "|---|---|---|---|---|---|---|---|---|"
for l in "${LISTS[@]}"; do
  off=(); gr=(); secs=(); low=()
  for s in $SEEDS; do
    $G import openb --nodes "$B/openb_node_list_gpu_node.csv" --pods "$B/openb_pod_list_$l.csv" \
      --load 1.0 --seed "$s" -o "$T/agg" -q >/dev/null 2>&1
    for _ in $(seq "$RUNS"); do
      t0=$(date +%s.%N)
      $G plan "$T/agg" -q -o "$T/agg.json" >/dev/null 2>&1
      t1=$(date +%s.%N)
      secs+=("$(python3 -c "print($t1 - $t0)")")
    done
    $G plan "$T/agg" -q --solver greedy -o "$T/greedy.json" >/dev/null 2>&1
    off+=("$(alloc "$T/agg.json")"); gr+=("$(alloc "$T/greedy.json")"); low+=("$(floor "$T/agg.json")")
  done
  python3 - "$l" "$REF" "${off[*]}" "${gr[*]}" "${secs[*]}" "${low[*]}" <<'PY'
import csv, statistics as st, sys
l, ref, off, gr, secs, low = sys.argv[1:]
u = lambda xs: [100 - float(x) for x in xs.split()]
r = {row["sc_policy"]: row for row in csv.DictReader(open(ref)) if row["workload"] == f"openb_pod_list_{l}"}
fgd = r.get("06-FGD", {}).get("unalloc100_mean", "-")
bf = r.get("05-BestFit", {}).get("unalloc100_mean", "-")
ilp, lows = u(off), [float(x) for x in low.split()]
print(f"| {l} | {len(ilp)} | {st.mean(ilp):.2f} | {st.mean(lows):.2f} | {st.mean(ilp) - st.mean(lows):.2f} | {st.mean(u(gr)):.2f} | {fgd} | {bf} | {st.median(map(float, secs.split())):.2f} |")
PY
done
