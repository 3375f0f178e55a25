//! The realizability checker (`gpuplan::realize`) on a tiny hand-written folder
//! (tests/fixtures/realize/tiny: a cluster, a hand-written plan, and a rendered folder
//! that carries it out exactly): the folder passes, and each invariant fires on a
//! small change that breaks it.

use crate::common;

use gpuplan::model::Cluster;
use gpuplan::placement::Placement;
use gpuplan::realize::{self, Invariant, Report, Target};
use std::collections::BTreeMap;
use std::path::Path;

const DIR: &str = "tests/fixtures/realize/tiny";

fn files() -> BTreeMap<String, String> {
    let root = Path::new(DIR).join("rendered");
    common::tree(&root)
        .into_iter()
        .filter(|(p, _)| !p.ends_with('/'))
        .map(|(p, b)| (p, String::from_utf8(b).unwrap()))
        .collect()
}

fn cluster() -> Cluster {
    common::load_dir(DIR)
}

fn plan() -> Placement {
    serde_json::from_str(&std::fs::read_to_string(Path::new(DIR).join("plan.json")).unwrap())
        .unwrap()
}

/// The folder with only the given target folders kept.
fn only(targets: &[&str]) -> BTreeMap<String, String> {
    files()
        .into_iter()
        .filter(|(p, _)| targets.iter().any(|t| p.starts_with(&format!("{t}/"))))
        .collect()
}

fn check(f: &BTreeMap<String, String>) -> Report {
    realize::check(f, &cluster(), &plan())
}

fn show(r: &Report) -> String {
    realize::view::human(r)
}

/// Replaces `from` by `to` in one file (which must contain it).
fn edit(f: &mut BTreeMap<String, String>, file: &str, from: &str, to: &str) {
    let text = f.get_mut(file).unwrap_or_else(|| panic!("no {file}"));
    assert!(text.contains(from), "{file} lacks {from:?}");
    *text = text.replacen(from, to, 1);
}

/// The report has a violation of `inv` under `t` whose message contains `text`.
fn fires(r: &Report, t: Target, inv: Invariant, text: &str) {
    assert!(
        r.violations
            .iter()
            .any(|v| v.target == t && v.invariant == inv && v.message.contains(text)),
        "expected {t} {} containing {text:?}:\n{}",
        inv.as_str(),
        show(r)
    );
}

#[test]
fn the_tiny_folder_carries_out_its_plan() {
    let r = check(&files());
    assert!(r.realizable, "{}", show(&r));
    for t in [Target::K8s, Target::Kueue, Target::Volcano, Target::Slurm] {
        let c = &r.checked[&t];
        assert_eq!((c.classes, c.units), (4, 7), "{t}");
    }
    assert_eq!(r.checked[&Target::Mig].nodes, 3);
}

// ---------------------------------------------------------------- 1. coverage

#[test]
fn a_class_without_an_object_or_label_is_not_covered() {
    let mut f = only(&["k8s"]);
    f.remove("k8s/workloads/serve.yaml");
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Coverage,
        "class `serve` has 2 planned unit(s) and no object",
    );
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/workloads/frac.yaml",
        "    gpuplan.io/class: frac\nspec:",
        "spec:",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Coverage,
        "carries no gpuplan.io/class label (taken as class `frac`",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/small.sbatch",
        "#SBATCH --comment=gpuplan.io/class=small\n",
        "",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Coverage,
        "has no --comment=gpuplan.io/class",
    );
}

// ---------------------------------------------------------------- 2. carried

#[test]
fn a_unit_needs_an_object_that_selects_tolerates_and_asks_exactly() {
    let k = "k8s/workloads/serve.yaml";
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        k,
        "      tolerations:\n        - key: gpuplan.io/pool\n          operator: Equal\n          value: \"whole\"\n          effect: NoSchedule\n",
        "",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Carried,
        "does not tolerate taint gpuplan.io/pool=whole:NoSchedule",
    );
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        k,
        "values: [\"h100-sxm5-80gb\"]",
        "values: [\"a100-sxm4-80gb\"]",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Carried,
        "does not select n-1: `gpuplan.io/gpu-model` In [a100-sxm4-80gb]",
    );
    let mut f = only(&["k8s"]);
    let frac = "k8s/workloads/frac.yaml";
    edit(
        &mut f,
        frac,
        "limits:\n              nvidia.com/gpu.shared: 1",
        "limits:\n              nvidia.com/gpu: 1",
    );
    edit(
        &mut f,
        frac,
        "requests:\n              nvidia.com/gpu.shared: 1",
        "requests:\n              nvidia.com/gpu: 1",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Carried,
        "asks nvidia.com/gpu: 1 where the plan gives nvidia.com/gpu.shared: 1",
    );
    let mut f = only(&["k8s"]);
    edit(&mut f, frac, "cpu: \"1\"", "cpu: 500m");
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Carried,
        "asks cpu 500m where the class declares 1",
    );
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/workloads/train.yaml",
        "spec:\n  parallelism",
        "spec:\n  suspend: true\n  parallelism",
    );
    fires(&check(&f), Target::K8s, Invariant::Carried, "is suspended");
}

#[test]
fn kueue_volcano_and_slurm_objects_must_carry_their_units() {
    let mut f = only(&["k8s", "kueue"]);
    edit(
        &mut f,
        "kueue/resourceflavors.yaml",
        "gpuplan.io/pool: \"shared\"",
        "gpuplan.io/pool: \"elsewhere\"",
    );
    fires(
        &check(&f),
        Target::Kueue,
        Invariant::Carried,
        "no flavor of ClusterQueue/a for nvidia.com/gpu.shared selects node n-3",
    );
    let mut f = only(&["k8s", "volcano"]);
    edit(
        &mut f,
        "volcano/workloads/train.yaml",
        "minAvailable: 2",
        "minAvailable: 1",
    );
    fires(
        &check(&f),
        Target::Volcano,
        Invariant::Carried,
        "has minAvailable 1, not its 2 pods",
    );
    let mut f = only(&["k8s", "volcano"]);
    edit(
        &mut f,
        "volcano/workloads/serve.yaml",
        "      schedulerName: volcano\n",
        "",
    );
    fires(
        &check(&f),
        Target::Volcano,
        Invariant::Carried,
        "is not scheduled by Volcano",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/frac.sbatch",
        "--gres=shard:250",
        "--gres=gpu:h100:1",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Carried,
        "asks --gres=gpu:h100:1 where the plan gives shard:250",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/serve.sbatch",
        "--partition=whole",
        "--partition=shared",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Carried,
        "runs in partition shared, which does not hold n-1",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/train.sbatch",
        "--nodes=2",
        "--nodes=1",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Carried,
        "runs a gang of 1 node(s); the plan's gang 0 has 2",
    );
}

// ---------------------------------------------------------------- 3. excess

#[test]
fn objects_asking_for_more_than_the_plan_are_excess() {
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/workloads/serve.yaml",
        "replicas: 2",
        "replicas: 3",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Excess,
        "ask for 3 unit(s): Deployment/a/serve (3); the plan gives it 2",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/small.sbatch",
        "--array=0-1",
        "--array=0-3",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Excess,
        "submit 4 job(s)",
    );
    let mut f = only(&["k8s"]);
    let extra = f["k8s/workloads/serve.yaml"]
        .replace("name: serve", "name: stray")
        .replace("gpuplan.io/class: serve", "gpuplan.io/class: stray");
    f.insert("k8s/workloads/stray.yaml".into(), extra);
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Excess,
        "class `stray`, which the plan does not place under k8s",
    );
}

// ---------------------------------------------------------------- 4. capacity

#[test]
fn no_node_is_asked_for_more_than_it_advertises() {
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/nodes.yaml",
        "nvidia.com/device-plugin.config: \"default\"",
        "nvidia.com/device-plugin.config: \"mig-ts\"",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Capacity,
        "n-1 is asked for 5 nvidia.com/gpu (by serve, train) but advertises 0",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/gres.conf",
        "File=/dev/nvidia[0-7]",
        "File=/dev/nvidia[0-3]",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Capacity,
        "slurm.conf gives n-1 8 gpu:h100, gres.conf defines 4: slurmd refuses the node",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/slurm.conf",
        "CPUs=32 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=262144 Gres=gpu:h100:8",
        "CPUs=64 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=262144 Gres=gpu:h100:8",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Capacity,
        "CPUs=64; it has 32 hardware threads",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/train.sbatch",
        "--mem=65536",
        "--mem=250000",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Capacity,
        "266384 MiB of memory; it has 262144",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/workloads/serve.sbatch",
        "#SBATCH --mem=16384\n",
        "",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Capacity,
        "without --mem",
    );
}

// ---------------------------------------------------------------- 5. sharing

#[test]
fn a_shared_slot_gives_at_least_the_planned_share() {
    for dir in ["k8s/gpu-operator.yaml", "mig/device-plugin/mig-ts.yaml"] {
        let mut f = only(&["k8s", "mig"]);
        if dir.starts_with("mig/") {
            f.retain(|p, _| !p.ends_with("gpu-operator.yaml"));
        }
        edit(&mut f, dir, "replicas: 4", "replicas: 8");
        fires(
            &check(&f),
            Target::K8s,
            Invariant::Sharing,
            "n-3 splits each GPU in 8 (12% each), less than the 25% `frac` is planned with",
        );
    }
    let mut f = only(&["k8s"]);
    edit(&mut f, "k8s/gpu-operator.yaml", "timeSlicing:", "mps:");
    let r = check(&f);
    assert!(
        !r.violations
            .iter()
            .any(|v| v.invariant == Invariant::Sharing),
        "a fraction class declares no mode:\n{}",
        show(&r)
    );
    // MPS refuses a request above 1 of its shared resource.
    let mut f = only(&["k8s"]);
    let mps = "  mps-2: |\n    version: v1\n    sharing:\n      mps:\n        resources:\n          - name: nvidia.com/gpu\n            replicas: 2\n";
    let text = format!("{}{mps}", f["k8s/gpu-operator.yaml"]);
    f.insert("k8s/gpu-operator.yaml".into(), text);
    edit(
        &mut f,
        "k8s/nodes.yaml",
        "nvidia.com/device-plugin.config: \"default\"",
        "nvidia.com/device-plugin.config: \"mps-2\"",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Sharing,
        "asks 4 nvidia.com/gpu on n-1, whose device plugin refuses more than 1",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/gres.conf",
        "NodeName=n-3 Name=shard Count=1000 File=/dev/nvidia2\n",
        "",
    );
    edit(&mut f, "slurm/slurm.conf", "shard:6000", "shard:5000");
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Sharing,
        "GPU 2 of n-3 has no shard in gres.conf",
    );
}

// ---------------------------------------------------------------- 6. MIG

#[test]
fn mig_configs_create_exactly_the_planned_layouts() {
    let mut f = only(&["k8s", "mig"]);
    for file in ["k8s/gpu-operator.yaml", "mig/mig-parted.yaml"] {
        edit(&mut f, file, "\"1g.10gb\": 7", "\"3g.40gb\": 2");
    }
    let r = check(&f);
    for t in [Target::K8s, Target::Mig] {
        fires(
            &r,
            t,
            Invariant::Mig,
            "GPU 0, 1 of n-3: config `n3` gives 3g.40gb x2; the plan has 1g.10gb x7",
        );
    }
    let mut f = only(&["mig"]);
    edit(
        &mut f,
        "mig/node-configs.tsv",
        "n-3\tn3",
        "n-3\tall-disabled",
    );
    fires(
        &check(&f),
        Target::Mig,
        Invariant::Mig,
        "config `all-disabled` gives MIG disabled; the plan has 1g.10gb x7",
    );
    let mut f = only(&["slurm"]);
    let gres = f["slurm/gres.conf"].replace(
        "Type=1g.10gb MultipleFiles=/dev/nvidia1",
        "Type=1g.20gb MultipleFiles=/dev/nvidia1",
    );
    f.insert("slurm/gres.conf".into(), gres);
    edit(
        &mut f,
        "slurm/slurm.conf",
        "gpu:1g.10gb:14",
        "gpu:1g.10gb:7,gpu:1g.20gb:7",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Mig,
        "n-3 has MIG devices 1g.10gb x7, 1g.20gb x7 in slurm.conf; the plan creates 1g.10gb x14",
    );
}

// ---------------------------------------------------------------- 7. quotas

#[test]
fn quotas_admit_the_planned_amounts() {
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/resourcequotas.yaml",
        "requests.nvidia.com/gpu: \"10\"",
        "requests.nvidia.com/gpu: \"5\"",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Quota,
        "namespace a: the planned pods ask 10 nvidia.com/gpu (classes serve, train); the quota allows 5",
    );
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/resourcequotas.yaml",
        "  hard:\n",
        "  hard:\n    requests.cpu: \"8\"\n",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Quota,
        "pods of serve, small, train request no cpu",
    );
    let mut f = only(&["k8s", "kueue"]);
    edit(
        &mut f,
        "kueue/clusterqueues.yaml",
        "nominalQuota: \"10\"",
        "nominalQuota: \"4\"",
    );
    let r = check(&f);
    fires(
        &r,
        Target::Kueue,
        Invariant::Quota,
        "flavor whole: the planned pods ask 10 nvidia.com/gpu (classes serve, train); nominal + borrowing allow 4",
    );
    fires(
        &r,
        Target::Kueue,
        Invariant::Quota,
        "cohort tiny, flavor whole",
    );
    let mut f = only(&["k8s", "kueue"]);
    edit(
        &mut f,
        "kueue/clusterqueues.yaml",
        ", \"cpu\", \"memory\"]",
        "]",
    );
    fires(
        &check(&f),
        Target::Kueue,
        Invariant::Quota,
        "ClusterQueue/a does not cover cpu, which pods of `frac` ask",
    );
}

/// Volcano queues (with a parent: its hierarchy) and Slurm accounts that hold less than
/// the plan places.
#[test]
fn volcano_and_slurm_quotas_admit_the_planned_amounts() {
    let mut f = only(&["k8s", "volcano"]);
    edit(
        &mut f,
        "volcano/queues.yaml",
        "nvidia.com/gpu: \"10\"",
        "nvidia.com/gpu: \"8\"",
    );
    fires(
        &check(&f),
        Target::Volcano,
        Invariant::Quota,
        "ask 10 nvidia.com/gpu (classes serve, train, children included); capability is 8",
    );
    // A child queue above its parent (Volcano's hierarchical capacity plugin).
    let mut f = only(&["k8s", "volcano"]);
    let parent = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: org\nspec:\n  capability:\n    nvidia.com/gpu: \"8\"\n  deserved:\n    nvidia.com/gpu: \"4\"\n---\n";
    let text = format!("{parent}{}", f["volcano/queues.yaml"]);
    f.insert("volcano/queues.yaml".into(), text);
    edit(
        &mut f,
        "volcano/queues.yaml",
        "  reclaimable: true\n",
        "  parent: org\n  deserved:\n    nvidia.com/gpu: \"6\"\n",
    );
    let r = check(&f);
    fires(
        &r,
        Target::Volcano,
        Invariant::Quota,
        "capability 10 nvidia.com/gpu exceeds its parent's 8",
    );
    fires(
        &r,
        Target::Volcano,
        Invariant::Quota,
        "its children's deserved add up to 6 nvidia.com/gpu, above its own 4",
    );
    fires(
        &r,
        Target::Volcano,
        Invariant::Quota,
        "ask 10 nvidia.com/gpu (classes serve, train, children included); capability is 8",
    );
    let mut f = only(&["slurm"]);
    edit(&mut f, "slurm/sacctmgr.sh", "gres/gpu=24", "gres/gpu=10");
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Quota,
        "account a: the planned jobs ask gres/gpu=12 (classes serve, small, train); GrpTRES allows 10",
    );
}

// ---------------------------------------------------------------- 8. topology

#[test]
fn gangs_bound_to_one_domain_have_their_nodes_in_one() {
    let mut f = only(&["k8s", "kueue"]);
    edit(
        &mut f,
        "kueue/workloads/train.yaml",
        "podset-required-topology: gpuplan.io/leaf",
        "podset-required-topology: kubernetes.io/hostname",
    );
    fires(
        &check(&f),
        Target::Kueue,
        Invariant::Topology,
        "requires one kubernetes.io/hostname domain; the plan's gang 0 spans n-1, n-2",
    );
    let mut f = only(&["k8s", "volcano"]);
    edit(
        &mut f,
        "volcano/hypernodes.yaml",
        "          name: n-2\n",
        "          name: n-3\n",
    );
    fires(
        &check(&f),
        Target::Volcano,
        Invariant::Topology,
        "no such HyperNode holds n-1, n-2",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/topology.conf",
        "SwitchName=l1 Nodes=n-[1-2]",
        "SwitchName=l1 Nodes=n-1\nSwitchName=l3 Nodes=n-2",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Topology,
        "no leaf switch of topology.conf holds n-1, n-2",
    );
    let mut f = only(&["k8s"]);
    let pin = "              - key: gpuplan.io/pool\n                operator: In\n                values: [\"whole\"]\n";
    let with_leaf = format!(
        "{pin}              - key: gpuplan.io/leaf\n                operator: In\n                values: [\"l2\"]\n"
    );
    let text = f["k8s/workloads/train.yaml"].replace(
        &pin.replace("          ", "              "),
        &with_leaf.replace("          ", "              "),
    );
    f.insert("k8s/workloads/train.yaml".into(), text);
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Topology,
        "`gpuplan.io/leaf` In [l2]",
    );
}

// ---------------------------------------------------------------- 9. references

#[test]
fn names_resolve() {
    let mut f = only(&["k8s"]);
    edit(
        &mut f,
        "k8s/workloads/small.yaml",
        "priorityClassName: p",
        "priorityClassName: q",
    );
    fires(
        &check(&f),
        Target::K8s,
        Invariant::Reference,
        "priorityClassName `q` is not a PriorityClass",
    );
    let mut f = only(&["k8s", "kueue"]);
    edit(
        &mut f,
        "kueue/workloads/serve.yaml",
        "kueue.x-k8s.io/queue-name: a",
        "kueue.x-k8s.io/queue-name: b",
    );
    fires(
        &check(&f),
        Target::Kueue,
        Invariant::Reference,
        "no LocalQueue `b` in namespace `a`",
    );
    let mut f = only(&["k8s", "kueue"]);
    edit(
        &mut f,
        "kueue/workloads/serve.yaml",
        "kueue.x-k8s.io/priority-class: p",
        "kueue.x-k8s.io/priority-class: q",
    );
    fires(
        &check(&f),
        Target::Kueue,
        Invariant::Reference,
        "`q` is not a WorkloadPriorityClass",
    );
    let mut f = only(&["k8s", "volcano"]);
    edit(
        &mut f,
        "volcano/workloads/train.yaml",
        "queue: a",
        "queue: b",
    );
    fires(
        &check(&f),
        Target::Volcano,
        Invariant::Reference,
        "queue `b` is not a Queue of volcano/",
    );
    let mut f = only(&["slurm"]);
    edit(&mut f, "slurm/workloads/train.sbatch", "--qos=p", "--qos=q");
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Reference,
        "QOS `q` is not among account a's QOS (p)",
    );
    let mut f = only(&["slurm"]);
    edit(
        &mut f,
        "slurm/slurm.conf",
        "GresTypes=gpu,shard",
        "GresTypes=gpu",
    );
    fires(
        &check(&f),
        Target::Slurm,
        Invariant::Reference,
        "gres `shard`, which GresTypes does not list",
    );
}

// ---------------------------------------------------------------- 10. parse

#[test]
fn unparseable_files_are_violations() {
    let mut f = only(&["k8s", "slurm"]);
    edit(
        &mut f,
        "k8s/workloads/serve.yaml",
        "replicas: 2",
        "replicas: [2",
    );
    edit(&mut f, "slurm/slurm.conf", "NodeName=n-3", "NodeName=n-[3");
    edit(
        &mut f,
        "slurm/workloads/serve.sbatch",
        "--array=0-1",
        "--array=1-0",
    );
    let r = check(&f);
    fires(&r, Target::K8s, Invariant::Parse, "");
    fires(&r, Target::Slurm, Invariant::Parse, "unclosed `[`");
    fires(
        &r,
        Target::Slurm,
        Invariant::Parse,
        "--array=1-0 is not an array spec",
    );
}

// ---------------------------------------------------------------- bad input

/// Random small edits of every file (characters that matter to the parsers put in,
/// lines dropped or doubled) give violations, never a panic.
#[test]
fn random_edits_never_panic() {
    let base = files();
    let (c, p) = (cluster(), plan());
    let pieces = [
        "[",
        "]",
        "-",
        ":",
        "'",
        "\"",
        "\\",
        "#",
        "=",
        ",",
        "é",
        "0",
        "99999999999",
        "\n",
        " ",
        "{",
        "}",
        "*",
        "&",
        "|",
        "e9",
        "Gi",
        "m",
        "\t",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    };
    let paths: Vec<String> = base.keys().cloned().collect();
    for _ in 0..2000 {
        let mut f = base.clone();
        let path = &paths[next(paths.len())];
        let text = f[path].clone();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let at = next(lines.len());
        match next(3) {
            0 => {
                lines.remove(at);
            }
            1 => lines.insert(at, lines[at].clone()),
            _ => {
                let line = &lines[at];
                let cut = (0..=next(line.len() + 1).min(line.len()))
                    .rev()
                    .find(|i| line.is_char_boundary(*i))
                    .unwrap_or(0);
                lines[at] = format!(
                    "{}{}{}",
                    &line[..cut],
                    pieces[next(pieces.len())],
                    &line[cut..]
                );
            }
        }
        f.insert(path.clone(), lines.join("\n"));
        let _ = realize::check(&f, &c, &p);
    }
}
