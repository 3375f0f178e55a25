//! The gpuplan language, as data.
//!
//! One table describes every KDL node gpuplan reads: where it may appear, its arguments,
//! its properties with their types, and its children. The decoder uses it to report
//! unknown nodes and properties (with a did-you-mean), `docs/language.md` documents each
//! entry (a test checks none is missing), and `schemas/gpuplan-language.schema.json` is
//! generated from it (a test checks the committed file is current).

/// The type of an argument or property value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// Any string.
    Str,
    /// A name (string) referring to another declaration.
    Ref(&'static str),
    /// A non-negative integer.
    Int,
    /// A number, integer or decimal.
    Number,
    Bool,
    /// A memory size string: `80GiB`, `2TiB`.
    Bytes,
    /// A duration string: `15m`, `1h30m`.
    Duration,
    /// A bandwidth string: `400Gbps`, `900GB/s`.
    Bandwidth,
    /// A percentage string: `10%`.
    Percent,
    /// An index set string: `0-3,6`.
    IndexSet,
    /// A node-name pattern: `dgx-[001-032]`.
    NamePattern,
    /// A version string: `22.05`, `1.12`.
    Version,
    /// An event rate: `3/day`, `0.5/hour`.
    Rate,
    /// One of a fixed list of strings.
    Enum(&'static [&'static str]),
}

impl Ty {
    pub(crate) fn describe(&self) -> String {
        match self {
            Ty::Str => "string".into(),
            Ty::Ref(what) => format!("name of a {what}"),
            Ty::Int => "integer".into(),
            Ty::Number => "number".into(),
            Ty::Bool => "boolean (#true / #false)".into(),
            Ty::Bytes => "memory size, e.g. \"80GiB\"".into(),
            Ty::Duration => "duration, e.g. \"15m\"".into(),
            Ty::Bandwidth => "bandwidth, e.g. \"400Gbps\"".into(),
            Ty::Percent => "percentage, e.g. \"10%\"".into(),
            Ty::IndexSet => "index set, e.g. \"0-3,6\"".into(),
            Ty::NamePattern => "node-name pattern, e.g. \"dgx-[001-032]\"".into(),
            Ty::Version => "version, e.g. \"22.05\"".into(),
            Ty::Rate => "rate, e.g. \"3/day\"".into(),
            Ty::Enum(v) => format!(
                "one of {}",
                v.iter()
                    .map(|s| format!("\"{s}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct ArgDef {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    /// Takes all remaining arguments.
    pub variadic: bool,
    pub doc: &'static str,
}

#[derive(Clone, Copy, Debug)]
pub struct PropDef {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub doc: &'static str,
}

#[derive(Clone, Copy, Debug)]
pub struct NodeDef {
    /// Unique id: the path of node names from the top, joined by `/`
    /// (`node-class/gpus`).
    pub id: &'static str,
    pub summary: &'static str,
    pub args: &'static [ArgDef],
    pub props: &'static [PropDef],
    /// Ids of the allowed children.
    pub children: &'static [&'static str],
    /// May appear more than once in its parent.
    pub repeatable: bool,
}

impl NodeDef {
    pub fn name(&self) -> &'static str {
        self.id.rsplit('/').next().unwrap_or(self.id)
    }
    pub(crate) fn prop(&self, name: &str) -> Option<&PropDef> {
        self.props.iter().find(|p| p.name == name)
    }
}

const fn a(name: &'static str, ty: Ty, doc: &'static str) -> ArgDef {
    ArgDef {
        name,
        ty,
        required: true,
        variadic: false,
        doc,
    }
}
const fn a_opt(name: &'static str, ty: Ty, doc: &'static str) -> ArgDef {
    ArgDef {
        name,
        ty,
        required: false,
        variadic: false,
        doc,
    }
}
const fn a_many(name: &'static str, ty: Ty, doc: &'static str) -> ArgDef {
    ArgDef {
        name,
        ty,
        required: true,
        variadic: true,
        doc,
    }
}
/// `cuda` properties (training, inference and dev alike).
const CUDA_PROPS: &[PropDef] = &[p(
    "compat",
    Ty::Bool,
    "the image ships NVIDIA's forward-compatibility package (cuda-compat); default #false",
)];

const fn p(name: &'static str, ty: Ty, doc: &'static str) -> PropDef {
    PropDef {
        name,
        ty,
        required: false,
        doc,
    }
}
const fn p_req(name: &'static str, ty: Ty, doc: &'static str) -> PropDef {
    PropDef {
        name,
        ty,
        required: true,
        doc,
    }
}

pub(crate) const TIERS: &[&str] = &["nvlink", "node", "leaf", "spine", "core", "cluster"];
pub(crate) const ISOLATION: &[&str] = &["mig", "time-slice", "mps", "whole-gpu"];
pub(crate) const SHARE: &[&str] = &["time-slice", "mps", "mig"];
pub(crate) const POOL_MODES: &[&str] = &["training", "mig", "time-slice", "mps", "whole-gpu"];
pub(crate) const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
pub(crate) const NIC_KINDS: &[&str] = &["infiniband", "ethernet", "roce"];
pub(crate) const PREEMPTION: &[&str] = &["lower-priority", "never"];
/// Scheduling authorities: the scheduler that owns a node (and runs a class).
pub(crate) const SCHEDULERS: &[&str] = &["kubernetes", "kueue", "volcano", "kai", "slurm"];
/// How Kubernetes-managed nodes hand out GPUs: NVIDIA's device plugin (extended
/// resources) or its DRA driver (resource claims).
pub(crate) const ALLOCATIONS: &[&str] = &["device-plugin", "dra"];

const LABEL_ARGS: &[ArgDef] = &[
    a("key", Ty::Str, "label key, e.g. `gpuplan.io/rack`"),
    a("value", Ty::Str, "label value"),
];
const TAINT_ARGS: &[ArgDef] = &[
    a("key", Ty::Str, "taint key"),
    a_opt("value", Ty::Str, "taint value (optional)"),
];
const TAINT_PROPS: &[PropDef] = &[p(
    "effect",
    Ty::Enum(TAINT_EFFECTS),
    "taint effect (default `NoSchedule`)",
)];
const WORKLOAD_PROPS: &[PropDef] = &[
    p_req("team", Ty::Ref("team"), "the team that owns the workload"),
    p_req("priority", Ty::Ref("priority"), "its priority class"),
    p("replicas", Ty::Int, "how many copies (default 1)"),
    p(
        "scheduler",
        Ty::Enum(SCHEDULERS),
        "the scheduler the class runs under (default: the cluster's `scheduler`, see Scheduling authority)",
    ),
];
const MODELS_ARGS: &[ArgDef] = &[a_many(
    "model",
    Ty::Ref("GPU model"),
    "acceptable GPU models, best first",
)];

const CAPACITY: &[&str] = &["on-demand", "reserved", "spot"];
/// Capacity, price and interruptions of a node class or range (the range wins).
const CAPACITY_PROPS: &[PropDef] = &[
    p(
        "capacity",
        Ty::Enum(CAPACITY),
        "how the nodes are bought: `on-demand` (default), `reserved` or `spot` (preemptible capacity the provider may take back)",
    ),
    p(
        "price-per-hour",
        Ty::Number,
        "price of one GPU-hour on these nodes (default: the GPU model's `price-per-hour`, the on-demand list price)",
    ),
    p(
        "interruptions",
        Ty::Rate,
        "spot only: how often the provider takes a node back, e.g. \"3/day\"",
    ),
];
const SPOT_ARGS: &[ArgDef] = &[a_opt(
    "allowed",
    Ty::Bool,
    "#false keeps the class off spot nodes; #true (default) asks for them and is refused unless the class may be interrupted",
)];

/// Every node of the language.
pub static NODES: &[NodeDef] = &[
    NodeDef {
        id: "cluster",
        summary: "The cluster's name and the versions of the schedulers gpuplan renders for.",
        args: &[a("name", Ty::Str, "cluster name (Slurm `ClusterName`)")],
        props: &[],
        children: &[
            "cluster/scheduler",
            "cluster/slurm",
            "cluster/kubernetes",
            "cluster/volcano",
            "cluster/kueue",
            "cluster/gpu-allocation",
            "cluster/kai",
        ],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/scheduler",
        summary: "The default scheduling authority: the scheduler that owns every node not in a pool with its own `scheduler`.",
        args: &[a(
            "name",
            Ty::Enum(SCHEDULERS),
            "`kubernetes` (kube-scheduler alone), `kueue` (with Kueue admission), `volcano`, `kai` (NVIDIA KAI Scheduler) or `slurm`",
        )],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/slurm",
        summary: "Target Slurm release; syntax newer than it is never emitted.",
        args: &[],
        props: &[p_req(
            "version",
            Ty::Version,
            "Slurm version (default 22.05, Debian 12)",
        )],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/kubernetes",
        summary: "Target Kubernetes release.",
        args: &[],
        props: &[p_req(
            "version",
            Ty::Version,
            "Kubernetes version, e.g. 1.31",
        )],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/volcano",
        summary: "Target Volcano release: fields newer than it are not rendered (HyperNode 1.12, tierName 1.14; docs/render.md).",
        args: &[],
        props: &[p_req("version", Ty::Version, "Volcano version, e.g. 1.12")],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/kueue",
        summary: "Target Kueue release (v1beta2 API from 0.15).",
        args: &[],
        props: &[p_req("version", Ty::Version, "Kueue version, e.g. 0.19")],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/gpu-allocation",
        summary: "How Kubernetes-managed nodes hand out GPUs: NVIDIA's device plugin (default) or its DRA driver (needs Kubernetes 1.34).",
        args: &[a(
            "mode",
            Ty::Enum(ALLOCATIONS),
            "`device-plugin` (extended resources `nvidia.com/gpu`, ...) or `dra` (resource claims, NVIDIA's DRA driver)",
        )],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "cluster/kai",
        summary: "Target NVIDIA KAI Scheduler release (kai.scheduler/v1alpha1 Topology from 0.12).",
        args: &[],
        props: &[p_req(
            "version",
            Ty::Version,
            "KAI Scheduler version, e.g. 0.13",
        )],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "gpu-model",
        summary: "Defines a GPU model, derives one from the catalog (`base`), or refines a catalog model (price, driver profile names).",
        args: &[a(
            "name",
            Ty::Str,
            "model name; a catalog id refines that model",
        )],
        props: &[
            p(
                "base",
                Ty::Ref("GPU model"),
                "catalog model this one is derived from (copies memory, NVLink and MIG)",
            ),
            p(
                "memory",
                Ty::Bytes,
                "GPU memory; required for a model not in the catalog",
            ),
            p("nvlink-gen", Ty::Int, "NVLink generation (0 = none)"),
            p(
                "nvlink-bandwidth",
                Ty::Bandwidth,
                "NVLink bandwidth per GPU, e.g. \"900GB/s\"",
            ),
            p(
                "price-per-hour",
                Ty::Number,
                "price of one GPU-hour, for cost reports and right-sizing",
            ),
            p("product-name", Ty::Str, "product name as NVML reports it"),
            p(
                "driver",
                Ty::Version,
                "NVIDIA driver version on nodes with this model, e.g. \"535.104.05\"; MIG profiles newer than it are refused (GP014)",
            ),
        ],
        children: &["gpu-model/mig-name"],
        repeatable: true,
    },
    NodeDef {
        id: "gpu-model/mig-name",
        summary: "Pins the name a driver uses for a MIG profile (e.g. 3g.40gb advertised as 3g.39gb by driver 535).",
        args: &[a("profile", Ty::Str, "catalog profile name")],
        props: &[p_req(
            "driver",
            Ty::Str,
            "name the driver and device plugin use",
        )],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "node-class",
        summary: "A kind of server: CPUs, memory, GPUs and how they are wired, and how it is bought.",
        args: &[a("name", Ty::Str, "class name")],
        props: CAPACITY_PROPS,
        children: &[
            "node-class/cpu",
            "node-class/memory",
            "node-class/gpus",
            "node-class/nvlink-domain",
            "node-class/numa",
            "node-class/pcie-switch",
            "node-class/nics",
            "node-class/label",
            "node-class/taint",
        ],
        repeatable: true,
    },
    NodeDef {
        id: "node-class/cpu",
        summary: "CPU sockets and cores.",
        args: &[],
        props: &[
            p_req("sockets", Ty::Int, "CPU sockets"),
            p_req("cores-per-socket", Ty::Int, "physical cores per socket"),
            p(
                "threads-per-core",
                Ty::Int,
                "hardware threads per core (default 1)",
            ),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "node-class/memory",
        summary: "Host memory.",
        args: &[a("size", Ty::Bytes, "host memory, e.g. \"2TiB\"")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "node-class/gpus",
        summary: "How many GPUs, of which model; one line per model on a node with several (GPU indexes run across the lines in order).",
        args: &[a("count", Ty::Int, "GPUs of this model per node")],
        props: &[
            p_req(
                "model",
                Ty::Ref("GPU model"),
                "catalog id or a `gpu-model` name",
            ),
            p(
                "bus-ids",
                Ty::Str,
                "PCI bus ids of this line's GPUs in index order, comma-separated (`nvidia-smi --query-gpu=pci.bus_id`), for NCCL's topology file",
            ),
            p(
                "driver",
                Ty::Version,
                "NVIDIA driver on the class's nodes, e.g. \"550.54.15\" (default: the GPU model's `driver`)",
            ),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "node-class/nvlink-domain",
        summary: "GPUs joined by NVLink/NVSwitch inside the node.",
        args: &[],
        props: &[p_req("gpus", Ty::IndexSet, "GPU indexes in the domain")],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "node-class/numa",
        summary: "A NUMA node and the GPUs, NICs and cores attached to it.",
        args: &[a("id", Ty::Int, "NUMA node id")],
        props: &[
            p("gpus", Ty::IndexSet, "GPU indexes local to it"),
            p("nics", Ty::IndexSet, "NIC indexes local to it"),
            p(
                "cores",
                Ty::IndexSet,
                "CPU core ids local to it (for Slurm gres.conf `Cores=`)",
            ),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "node-class/pcie-switch",
        summary: "GPUs and NICs behind one PCIe switch.",
        args: &[a("name", Ty::Str, "switch name, unique in the class")],
        props: &[
            p("gpus", Ty::IndexSet, "GPU indexes behind it"),
            p("nics", Ty::IndexSet, "NIC indexes behind it"),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "node-class/nics",
        summary: "Compute-fabric NICs; NIC i is on rail i.",
        args: &[a("count", Ty::Int, "number of compute NICs")],
        props: &[
            p("speed", Ty::Bandwidth, "per-NIC speed, e.g. \"400Gbps\""),
            p("kind", Ty::Enum(NIC_KINDS), "fabric kind"),
            p(
                "names",
                Ty::Str,
                "RDMA device names in rail order: patterns, comma-separated, like \"mlx5_[0-7]\" (NCCL_IB_HCA)",
            ),
            p(
                "socket-ifname",
                Ty::Str,
                "network interface(s) for NCCL's bootstrap sockets, e.g. \"eth0\" (NCCL_SOCKET_IFNAME)",
            ),
            p(
                "gid-index",
                Ty::Int,
                "RoCE GID index (NCCL_IB_GID_INDEX; default 3, RoCE v2 over IPv4)",
            ),
            p(
                "bus-ids",
                Ty::Str,
                "PCI bus ids of the NICs in rail order, comma-separated, for NCCL's topology file",
            ),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "node-class/label",
        summary: "A label put on every node of the class.",
        args: LABEL_ARGS,
        props: &[],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "node-class/taint",
        summary: "A taint put on every node of the class.",
        args: TAINT_ARGS,
        props: TAINT_PROPS,
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "nodes",
        summary: "Nodes by name range, all of one class.",
        args: &[a(
            "names",
            Ty::NamePattern,
            "node names, e.g. \"dgx-[001-032]\"",
        )],
        props: &[
            p_req("class", Ty::Ref("node class"), "their node class"),
            p(
                "capacity",
                Ty::Enum(CAPACITY),
                "how these nodes are bought (default: their class's)",
            ),
            p(
                "price-per-hour",
                Ty::Number,
                "price of one GPU-hour on these nodes (default: their class's, else the GPU model's)",
            ),
            p(
                "interruptions",
                Ty::Rate,
                "spot only: how often the provider takes a node back, e.g. \"3/day\" (default: their class's)",
            ),
        ],
        children: &["nodes/label", "nodes/taint", "nodes/node"],
        repeatable: true,
    },
    NodeDef {
        id: "nodes/label",
        summary: "A label on every node of the range.",
        args: LABEL_ARGS,
        props: &[],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "nodes/taint",
        summary: "A taint on every node of the range.",
        args: TAINT_ARGS,
        props: TAINT_PROPS,
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "nodes/node",
        summary: "Overrides for one node of the range.",
        args: &[a("name", Ty::Str, "a node of the range")],
        props: &[
            p(
                "gpus-down",
                Ty::IndexSet,
                "GPUs out of service (not planned on)",
            ),
            p("cordon", Ty::Bool, "take the whole node out of planning"),
        ],
        children: &["nodes/node/label", "nodes/node/taint"],
        repeatable: true,
    },
    NodeDef {
        id: "nodes/node/label",
        summary: "A label on this node only.",
        args: LABEL_ARGS,
        props: &[],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "nodes/node/taint",
        summary: "A taint on this node only.",
        args: TAINT_ARGS,
        props: TAINT_PROPS,
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "fabric",
        summary: "The network between nodes: switch tiers and multi-node NVLink domains.",
        args: &[],
        props: &[],
        children: &[
            "fabric/core",
            "fabric/spine",
            "fabric/leaf",
            "fabric/nvlink-domain",
        ],
        repeatable: true,
    },
    NodeDef {
        id: "fabric/core",
        summary: "A core switch (group) above spines.",
        args: &[a("name", Ty::Str, "switch name")],
        props: &[p("link-speed", Ty::Bandwidth, "uplink speed")],
        children: &["fabric/spine"],
        repeatable: true,
    },
    NodeDef {
        id: "fabric/spine",
        summary: "A spine switch (group) above leaves.",
        args: &[a("name", Ty::Str, "switch name")],
        props: &[p("link-speed", Ty::Bandwidth, "uplink speed")],
        children: &["fabric/leaf"],
        repeatable: true,
    },
    NodeDef {
        id: "fabric/leaf",
        summary: "A leaf switch (or rail group of leaf switches) and its nodes.",
        args: &[a("name", Ty::Str, "switch name")],
        props: &[
            p_req("nodes", Ty::NamePattern, "the nodes cabled to it"),
            p(
                "rails",
                Ty::Int,
                "rail-optimized: this group is one leaf per rail, NIC i to leaf i",
            ),
            p("link-speed", Ty::Bandwidth, "node link speed"),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "fabric/nvlink-domain",
        summary: "A multi-node NVLink domain (e.g. a GB200 NVL72 rack): all GPUs of these nodes share one NVLink fabric.",
        args: &[a("name", Ty::Str, "domain name")],
        props: &[p_req("nodes", Ty::NamePattern, "member nodes")],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "team",
        summary: "A team with a GPU quota: a guaranteed share and a burst ceiling.",
        args: &[a(
            "name",
            Ty::Str,
            "team name (also its namespace and queue)",
        )],
        props: &[
            p("guarantee", Ty::Int, "GPUs always available to the team"),
            p(
                "burst",
                Ty::Int,
                "GPUs the team may use at most, borrowing idle capacity",
            ),
            p(
                "parent",
                Ty::Ref("team"),
                "parent team (hierarchical quotas)",
            ),
            p(
                "weight",
                Ty::Int,
                "fair-share weight among its siblings, 1 to 1000000 (Kueue `fairSharing.weight`, KAI `overQuotaWeight`, Slurm `Fairshare`, Volcano `weight`; default: the guarantee)",
            ),
        ],
        children: &["team/quota"],
        repeatable: true,
    },
    NodeDef {
        id: "team/quota",
        summary: "A quota for one GPU model or pool.",
        args: &[],
        props: &[
            p("model", Ty::Ref("GPU model"), "GPU model the quota counts"),
            p("pool", Ty::Ref("pool"), "pool the quota counts"),
            p("guarantee", Ty::Int, "guaranteed GPUs"),
            p("burst", Ty::Int, "GPU ceiling"),
            p(
                "scheduler",
                Ty::Enum(SCHEDULERS),
                "the authority this part of the team's quota belongs to (default: the pool's, or the only one)",
            ),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "priority",
        summary: "A priority class; higher value is more important.",
        args: &[a("name", Ty::Str, "priority class name")],
        props: &[
            p_req(
                "value",
                Ty::Int,
                "priority value (higher wins), at most 1000000000",
            ),
            p(
                "preempts",
                Ty::Ref("priority"),
                "a lower class this one may preempt",
            ),
            p(
                "preemption",
                Ty::Enum(PREEMPTION),
                "`never`: this class never preempts (Kubernetes `preemptionPolicy: Never`)",
            ),
            p(
                "description",
                Ty::Str,
                "text for PriorityClass descriptions",
            ),
        ],
        children: &["priority/preempts"],
        repeatable: true,
    },
    NodeDef {
        id: "priority/preempts",
        summary: "Classes this one may preempt.",
        args: &[a_many(
            "priority",
            Ty::Ref("priority"),
            "priority class names",
        )],
        props: &[],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "training",
        summary: "A training workload class: gangs of GPUs placed all-or-nothing.",
        args: &[a("name", Ty::Str, "workload name")],
        props: WORKLOAD_PROPS,
        children: &[
            "training/gang",
            "training/memory",
            "training/topology",
            "training/checkpoint",
            "training/preemptible",
            "training/spot",
            "training/models",
            "training/cuda",
        ],
        repeatable: true,
    },
    NodeDef {
        id: "training/gang",
        summary: "The gang: total GPUs, and GPUs per node.",
        args: &[],
        props: &[
            p_req("gpus", Ty::Int, "GPUs in one gang"),
            p(
                "gpus-per-node",
                Ty::Int,
                "GPUs the gang takes on each node it uses (default: the most that divide the gang and fit a node: all of an 8-GPU node's for 16, 6 for 12)",
            ),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/memory",
        summary: "GPU memory one rank (one GPU of the gang) needs; the class runs only on GPU models that hold it.",
        args: &[a("size", Ty::Bytes, "per GPU, e.g. \"72GiB\"")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/topology",
        summary: "Where a gang may land: the tier it must stay inside, and the tier it should fit in.",
        args: &[],
        props: &[
            p(
                "required",
                Ty::Enum(TIERS),
                "the gang must fit in one domain of this tier",
            ),
            p(
                "preferred",
                Ty::Enum(TIERS),
                "the gang should fit in one domain of this tier",
            ),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/checkpoint",
        summary: "How often the job checkpoints, how much it writes, and how long a restart takes (what an interruption costs).",
        args: &[],
        props: &[
            p_req("every", Ty::Duration, "checkpoint interval"),
            p(
                "size",
                Ty::Bytes,
                "what one checkpoint of one gang writes, e.g. \"1.2TB\" (model, optimizer state)",
            ),
            p(
                "restart",
                Ty::Duration,
                "time from an interruption to training again: rescheduling, start-up, reading the checkpoint (default 10m)",
            ),
            p(
                "max-idle",
                Ty::Percent,
                "share of GPU time the class may spend writing checkpoints before the plan warns (default 5%)",
            ),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/preemptible",
        summary: "Higher classes may preempt this one.",
        args: &[a_opt("value", Ty::Bool, "default #true")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/spot",
        summary: "Whether gangs may run on spot capacity, and may mix spot and other nodes in one gang.",
        args: SPOT_ARGS,
        props: &[p(
            "straddle",
            Ty::Bool,
            "a gang may mix spot and other nodes (default #false: a gang is all spot or all not)",
        )],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/models",
        summary: "Acceptable GPU models.",
        args: MODELS_ARGS,
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "training/cuda",
        summary: "The CUDA runtime the class's image is built with; it lands only where the driver runs it.",
        args: &[a("version", Ty::Version, "CUDA release, e.g. \"12.4\"")],
        props: CUDA_PROPS,
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference",
        summary: "An inference workload class: replicas with a GPU memory footprint.",
        args: &[a("name", Ty::Str, "workload name")],
        props: WORKLOAD_PROPS,
        children: &[
            "inference/memory",
            "inference/isolation",
            "inference/models",
            "inference/profile",
            "inference/gpus",
            "inference/min-compute",
            "inference/requests",
            "inference/fraction",
            "inference/cuda",
            "inference/preemptible",
            "inference/spot",
        ],
        repeatable: true,
    },
    NodeDef {
        id: "inference/preemptible",
        summary: "Replicas may be interrupted: higher classes may preempt them, and they may run on spot capacity.",
        args: &[a_opt("value", Ty::Bool, "default #true")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/spot",
        summary: "Whether replicas may run on spot capacity.",
        args: SPOT_ARGS,
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/memory",
        summary: "GPU memory one replica needs.",
        args: &[a("size", Ty::Bytes, "footprint, e.g. \"18GiB\"")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/isolation",
        summary: "How a replica shares a GPU.",
        args: &[a("mode", Ty::Enum(ISOLATION), "isolation mode")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/models",
        summary: "Acceptable GPU models.",
        args: MODELS_ARGS,
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/profile",
        summary: "An explicit MIG profile (wins over right-sizing, and is checked).",
        args: &[a("name", Ty::Str, "MIG profile, e.g. \"2g.20gb\"")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/gpus",
        summary: "Whole GPUs per replica (isolation whole-gpu).",
        args: &[a("count", Ty::Int, "GPUs per replica")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/min-compute",
        summary: "Minimum MIG compute slices per replica.",
        args: &[a("slices", Ty::Int, "compute slices")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/requests",
        summary: "CPU and host memory one replica needs on its node (packed with the node's other replicas).",
        args: &[],
        props: &[
            p("cpu", Ty::Number, "CPU cores (hardware threads), e.g. 11.5"),
            p("memory", Ty::Bytes, "host memory, e.g. \"46GiB\""),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/fraction",
        summary: "A share of one GPU per replica: shared by the device plugin on Kubernetes (at most 50%), by shards on Slurm.",
        args: &[a(
            "share",
            Ty::Percent,
            "e.g. \"47%\" (above 0%, below 100%)",
        )],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "inference/cuda",
        summary: "The CUDA runtime the class's image is built with; it lands only where the driver runs it.",
        args: &[a("version", Ty::Version, "CUDA release, e.g. \"12.4\"")],
        props: CUDA_PROPS,
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "dev",
        summary: "Development / notebook sessions sharing GPUs.",
        args: &[a("name", Ty::Str, "workload name")],
        props: WORKLOAD_PROPS,
        children: &["dev/share", "dev/memory", "dev/models", "dev/cuda"],
        repeatable: true,
    },
    NodeDef {
        id: "dev/share",
        summary: "How sessions share a GPU.",
        args: &[a("mode", Ty::Enum(SHARE), "sharing mode")],
        props: &[p_req(
            "per-gpu",
            Ty::Int,
            "sessions per GPU (time-slice / MPS replicas)",
        )],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "dev/memory",
        summary: "GPU memory one session needs.",
        args: &[a("size", Ty::Bytes, "footprint")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "dev/models",
        summary: "Acceptable GPU models.",
        args: MODELS_ARGS,
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "dev/cuda",
        summary: "The CUDA runtime the class's image is built with; it lands only where the driver runs it.",
        args: &[a("version", Ty::Version, "CUDA release, e.g. \"12.4\"")],
        props: CUDA_PROPS,
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "mig",
        summary: "MIG policy: allowed profiles, fixed layouts, sizing headroom.",
        args: &[],
        props: &[],
        children: &["mig/allow", "mig/layout", "mig/headroom"],
        repeatable: true,
    },
    NodeDef {
        id: "mig/allow",
        summary: "MIG profiles the planner may use (default: all of the model's).",
        args: &[a_many("profile", Ty::Str, "profile names")],
        props: &[],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "mig/layout",
        summary: "A fixed MIG layout for named nodes and GPUs (or, with `current=#true`, the layout they have now); arguments are profiles, `*N` repeats.",
        args: &[a_many(
            "profile",
            Ty::Str,
            "profiles, e.g. \"3g.40gb\" \"1g.10gb*4\"",
        )],
        props: &[
            p_req("nodes", Ty::NamePattern, "nodes the layout applies to"),
            p("gpus", Ty::IndexSet, "GPU indexes (default: all)"),
            p(
                "current",
                Ty::Bool,
                "#true: the layout the GPUs have now (kept when it serves the plan), not a requirement",
            ),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "mig/headroom",
        summary: "Extra memory added to footprints before choosing a profile.",
        args: &[a("fraction", Ty::Percent, "e.g. \"10%\"")],
        props: &[],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "storage",
        summary: "Storage that checkpoints are written to: its write bandwidth, for the whole cluster or for one pool's or leaf's nodes.",
        args: &[a("name", Ty::Str, "storage name")],
        props: &[
            p_req(
                "write-bandwidth",
                Ty::Bandwidth,
                "sustained write bandwidth of the storage, shared by every gang that writes at once, e.g. \"200GB/s\"",
            ),
            p(
                "pool",
                Ty::Ref("pool"),
                "serves only this pool's nodes (default: every node no narrower storage serves)",
            ),
            p(
                "leaf",
                Ty::Ref("leaf switch"),
                "serves only this leaf switch's nodes",
            ),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "backend",
        summary: "Where the state is kept and locked: `local` (the state file, the default) or `pg` (PostgreSQL, shared by every runner). The connection and its credentials come only from the environment (`GPUPLAN_PG_DSN`, or `PGHOST`, `PGUSER`, `PGPASSWORD`...), never from the configuration.",
        args: &[a("kind", Ty::Enum(&["local", "pg"]), "the backend")],
        props: &[
            p(
                "workspace",
                Ty::Str,
                "pg: the state's name in the database, one state and one lock each (default `default`)",
            ),
            p(
                "keep",
                Ty::Int,
                "pg: how many state versions to keep, the newest (default: every version)",
            ),
        ],
        children: &[],
        repeatable: false,
    },
    NodeDef {
        id: "moved",
        summary: "Says that a class, a node or a pool was renamed, so that the plan treats the new name as the same thing: what ran under the old name keeps its GPUs, MIG instances and pool mode, and the diff shows a rename.",
        args: &[],
        props: &[
            p_req("from", Ty::Str, "the old name, as the last apply knew it"),
            p_req("to", Ty::Str, "the new name, declared in the configuration"),
            p(
                "kind",
                Ty::Enum(&["class", "node", "pool"]),
                "what was renamed (default: what `to` names; needed only when a class, a node or a pool share that name)",
            ),
        ],
        children: &[],
        repeatable: true,
    },
    NodeDef {
        id: "pool",
        summary: "Pins nodes to a pool with a sharing mode.",
        args: &[a("name", Ty::Str, "pool name")],
        props: &[
            p_req("mode", Ty::Enum(POOL_MODES), "what the pool's GPUs are for"),
            p_req("nodes", Ty::NamePattern, "member nodes"),
            p(
                "max-disrupted",
                Ty::Int,
                "nodes of the pool disrupted at once by a rollout (default 1)",
            ),
            p(
                "scheduler",
                Ty::Enum(SCHEDULERS),
                "the scheduler that owns the pool's nodes (default: the cluster's `scheduler`)",
            ),
            p(
                "gpu-allocation",
                Ty::Enum(ALLOCATIONS),
                "how the pool's Kubernetes nodes hand out GPUs: `device-plugin` or `dra` (default: the cluster's `gpu-allocation`)",
            ),
        ],
        children: &[],
        repeatable: true,
    },
];

/// Top-level node names, in documentation order.
pub fn top_level() -> impl Iterator<Item = &'static NodeDef> {
    NODES.iter().filter(|n| !n.id.contains('/'))
}

/// The definition with id `id` (the first, should the table repeat one).
pub fn def(id: &str) -> Option<&'static NodeDef> {
    static BY_ID: std::sync::OnceLock<std::collections::HashMap<&str, &NodeDef>> =
        std::sync::OnceLock::new();
    let by_id = BY_ID.get_or_init(|| {
        let mut m = std::collections::HashMap::new();
        for n in NODES {
            m.entry(n.id).or_insert(n);
        }
        m
    });
    by_id.get(id).copied()
}

/// The child definitions allowed under `parent` (`None` = top level).
pub(crate) fn children_of(parent: Option<&str>) -> Vec<&'static NodeDef> {
    match parent {
        None => top_level().collect(),
        Some(p) => def(p)
            .map(|d| d.children.iter().filter_map(|c| def(c)).collect())
            .unwrap_or_default(),
    }
}
