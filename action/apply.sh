#!/usr/bin/env bash
# Applies the reviewed plan artifact: `gpuplan apply PLAN PATH... --out-dir DIR`, checked
# against the configuration checked out at INPUT_PATH (a saved plan names its inputs; it
# does not choose what apply reads: docs/apply.md). gpuplan refuses
# a plan whose inputs or state changed since it was made (stale plan), so what lands is
# exactly what was reviewed; plan again in that case.
# gpuplan's output (which quotes names from the configuration) reaches the log cleaned
# and with workflow commands stopped (action/lib.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=action/lib.sh
. "$here/lib.sh"
plan_file=${INPUT_PLAN_FILE:-plan.json}
state=${INPUT_STATE:-.gpuplan/state.json}
out_dir=${INPUT_OUT_DIR:-out}
if [ ! -f "$plan_file" ]; then
  echo "no plan file at $plan_file: download the plan artifact of the merged pull request first" >&2
  exit 1
fi
read -r -a paths <<< "${INPUT_PATH:-}"
gpuplan --color never apply "$plan_file" "${paths[@]}" --state "$state" --out-dir "$out_dir" 2>&1 | gp_log
