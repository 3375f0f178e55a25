//! The document model of an import: what a cluster has, as gpuplan writes it. Every
//! importer (`kubectl get nodes`, Slurm, `nvidia-smi` and `discover`'s inventory, the
//! openb trace's cluster, the `mig -lgip` profile check) builds one [`Document`] and
//! [`kdl::write`] turns it into text: one writer, one quoting, one fabric tree.
//!
//! The types are plain data in the order the text has them. Values are kept as the
//! text writes them (`"80GiB"`, an index set `"0-3"`, a name pattern), already decided
//! by the importer; comments are part of the model (`notes`: whole lines above or inside
//! an item; `comment`: the text after `//` at the end of its line), so an importer says
//! where the things it could not know are, and the writer never invents text.

pub(crate) mod kdl;

/// A whole KDL document: items in the order they are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Document {
    pub(crate) items: Vec<Item>,
}

/// One top-level item of a [`Document`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// A `//` comment line (`//` alone when empty).
    Comment(String),
    /// An empty line.
    Blank,
    Cluster(Cluster),
    GpuModel(GpuModel),
    NodeClass(NodeClass),
    Nodes(Nodes),
    Pool(Pool),
    Fabric(Fabric),
    /// A `mig { layout ... current=#true }` block.
    Mig(Vec<Layout>),
    Team(Team),
    Priority(Priority),
}

impl Document {
    /// One comment line per line of `text` (a header).
    pub(crate) fn comments(&mut self, text: &str) {
        for line in text.lines() {
            self.items.push(Item::Comment(line.to_string()));
        }
    }

    /// One comment line.
    pub(crate) fn comment(&mut self, line: impl Into<String>) {
        self.items.push(Item::Comment(line.into()));
    }

    pub(crate) fn blank(&mut self) {
        self.items.push(Item::Blank);
    }

    pub(crate) fn push(&mut self, item: Item) {
        self.items.push(item);
    }
}

/// `cluster NAME { scheduler "..." }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Cluster {
    pub(crate) name: String,
    pub(crate) scheduler: Option<String>,
}

/// A `gpu-model` declaration: a model the catalog lacks, or a catalog model refined with
/// the driver's MIG profile names.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct GpuModel {
    /// Comment lines above it.
    pub(crate) notes: Vec<String>,
    pub(crate) name: String,
    /// `memory="80GiB"`.
    pub(crate) memory: Option<String>,
    pub(crate) nvlink_gen: Option<u32>,
    pub(crate) product_name: Option<String>,
    /// `mig-name CATALOG driver=DRIVER` children.
    pub(crate) mig_names: Vec<(String, String)>,
    pub(crate) comment: Option<String>,
}

/// A `node-class` and its hardware, in the order the text has it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeClass {
    pub(crate) name: String,
    /// Comment lines first inside the block.
    pub(crate) notes: Vec<String>,
    pub(crate) cpu: Option<Cpu>,
    pub(crate) memory: Option<Memory>,
    pub(crate) gpus: Vec<Gpus>,
    /// Comment lines where the `gpus` lines go (after them).
    pub(crate) gpu_notes: Vec<String>,
    pub(crate) nvlink_domains: Vec<GpuDomain>,
    pub(crate) numa: Vec<Numa>,
    pub(crate) pcie_switches: Vec<PcieSwitch>,
    pub(crate) nics: Option<Nics>,
}

/// `cpu sockets=N cores-per-socket=N threads-per-core=N`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Cpu {
    pub(crate) sockets: u64,
    pub(crate) cores_per_socket: u64,
    pub(crate) threads_per_core: Option<u64>,
    pub(crate) comment: Option<String>,
}

/// `memory "512GiB"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Memory {
    pub(crate) size: String,
    pub(crate) comment: Option<String>,
}

/// `gpus N model=M driver=D bus-ids=B`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Gpus {
    pub(crate) count: u64,
    pub(crate) model: String,
    pub(crate) driver: Option<String>,
    pub(crate) bus_ids: Option<String>,
}

/// An NVLink domain inside a node: `nvlink-domain gpus=SET`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct GpuDomain {
    pub(crate) gpus: String,
    pub(crate) comment: Option<String>,
}

/// `numa ID gpus=SET nics=SET cores=SET`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Numa {
    pub(crate) id: u32,
    pub(crate) gpus: Option<String>,
    pub(crate) nics: Option<String>,
    pub(crate) cores: Option<String>,
    pub(crate) comment: Option<String>,
}

/// `pcie-switch NAME gpus=SET nics=SET`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PcieSwitch {
    pub(crate) name: String,
    pub(crate) gpus: Option<String>,
    pub(crate) nics: Option<String>,
}

/// `nics N names="a,b"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Nics {
    pub(crate) count: usize,
    pub(crate) names: Option<String>,
    pub(crate) comment: Option<String>,
}

/// A `nodes PATTERN class=C` line, with its labels, taints and nodes of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Nodes {
    pub(crate) pattern: String,
    pub(crate) class: String,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) taints: Vec<Taint>,
    /// `node NAME gpus-down=SET` children.
    pub(crate) down: Vec<NodeDown>,
}

/// `taint KEY VALUE effect=E`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Taint {
    pub(crate) key: String,
    pub(crate) value: Option<String>,
    pub(crate) effect: String,
}

/// `node NAME gpus-down=SET`: GPUs of one node that are not usable.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeDown {
    pub(crate) name: String,
    pub(crate) gpus: String,
    pub(crate) comment: Option<String>,
}

/// `pool NAME mode=M nodes=PATTERN`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Pool {
    pub(crate) name: String,
    pub(crate) mode: String,
    pub(crate) nodes: String,
    pub(crate) comment: Option<String>,
}

/// The `fabric` block: multi-node NVLink domains and the switch tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Fabric {
    /// Comment lines first inside the block.
    pub(crate) notes: Vec<String>,
    pub(crate) nvlink: Vec<NodeDomain>,
    /// Comment lines between the NVLink domains and the switches.
    pub(crate) switch_notes: Vec<String>,
    pub(crate) switches: Vec<Switch>,
}

/// A multi-node NVLink domain: `nvlink-domain NAME nodes=PATTERN`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeDomain {
    pub(crate) name: String,
    pub(crate) nodes: String,
    pub(crate) comment: Option<String>,
}

/// A switch of one tier (`leaf`, `spine`, `core`): a leaf holds `nodes`, a switch without
/// nodes is a block of the switches below (`{}` when there are none).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Switch {
    pub(crate) tier: String,
    pub(crate) name: String,
    pub(crate) nodes: Option<String>,
    pub(crate) comment: Option<String>,
    pub(crate) children: Vec<Switch>,
}

/// `layout P... nodes=PATTERN gpus=SET current=#true`: a MIG layout the GPUs have now.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Layout {
    pub(crate) profiles: Vec<String>,
    pub(crate) nodes: String,
    pub(crate) gpus: Option<String>,
    pub(crate) comment: Option<String>,
}

/// `team NAME burst=N`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Team {
    pub(crate) name: String,
    pub(crate) burst: u64,
}

/// `priority NAME value=N`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Priority {
    pub(crate) name: String,
    pub(crate) value: i64,
}
