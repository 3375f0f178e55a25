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

pub mod kdl;

/// A whole KDL document: items in the order they are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    pub items: Vec<Item>,
}

/// One top-level item of a [`Document`].
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
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
    pub fn comments(&mut self, text: &str) {
        for line in text.lines() {
            self.items.push(Item::Comment(line.to_string()));
        }
    }

    /// One comment line.
    pub fn comment(&mut self, line: impl Into<String>) {
        self.items.push(Item::Comment(line.into()));
    }

    pub fn blank(&mut self) {
        self.items.push(Item::Blank);
    }

    pub fn push(&mut self, item: Item) {
        self.items.push(item);
    }
}

/// `cluster NAME { scheduler "..." }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub name: String,
    pub scheduler: Option<String>,
}

/// A `gpu-model` declaration: a model the catalog lacks, or a catalog model refined with
/// the driver's MIG profile names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuModel {
    /// Comment lines above it.
    pub notes: Vec<String>,
    pub name: String,
    /// `memory="80GiB"`.
    pub memory: Option<String>,
    pub nvlink_gen: Option<u32>,
    pub product_name: Option<String>,
    /// `mig-name CATALOG driver=DRIVER` children.
    pub mig_names: Vec<(String, String)>,
    pub comment: Option<String>,
}

/// A `node-class` and its hardware, in the order the text has it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeClass {
    pub name: String,
    /// Comment lines first inside the block.
    pub notes: Vec<String>,
    pub cpu: Option<Cpu>,
    pub memory: Option<Memory>,
    pub gpus: Vec<Gpus>,
    /// Comment lines where the `gpus` lines go (after them).
    pub gpu_notes: Vec<String>,
    pub nvlink_domains: Vec<GpuDomain>,
    pub numa: Vec<Numa>,
    pub pcie_switches: Vec<PcieSwitch>,
    pub nics: Option<Nics>,
}

/// `cpu sockets=N cores-per-socket=N threads-per-core=N`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cpu {
    pub sockets: u64,
    pub cores_per_socket: u64,
    pub threads_per_core: Option<u64>,
    pub comment: Option<String>,
}

/// `memory "512GiB"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Memory {
    pub size: String,
    pub comment: Option<String>,
}

/// `gpus N model=M driver=D bus-ids=B`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gpus {
    pub count: u64,
    pub model: String,
    pub driver: Option<String>,
    pub bus_ids: Option<String>,
}

/// An NVLink domain inside a node: `nvlink-domain gpus=SET`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuDomain {
    pub gpus: String,
    pub comment: Option<String>,
}

/// `numa ID gpus=SET nics=SET cores=SET`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Numa {
    pub id: u32,
    pub gpus: Option<String>,
    pub nics: Option<String>,
    pub cores: Option<String>,
    pub comment: Option<String>,
}

/// `pcie-switch NAME gpus=SET nics=SET`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PcieSwitch {
    pub name: String,
    pub gpus: Option<String>,
    pub nics: Option<String>,
}

/// `nics N names="a,b"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Nics {
    pub count: usize,
    pub names: Option<String>,
    pub comment: Option<String>,
}

/// A `nodes PATTERN class=C` line, with its labels, taints and nodes of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Nodes {
    pub pattern: String,
    pub class: String,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
    /// `node NAME gpus-down=SET` children.
    pub down: Vec<NodeDown>,
}

/// `taint KEY VALUE effect=E`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

/// `node NAME gpus-down=SET`: GPUs of one node that are not usable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeDown {
    pub name: String,
    pub gpus: String,
    pub comment: Option<String>,
}

/// `pool NAME mode=M nodes=PATTERN`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pool {
    pub name: String,
    pub mode: String,
    pub nodes: String,
    pub comment: Option<String>,
}

/// The `fabric` block: multi-node NVLink domains and the switch tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fabric {
    /// Comment lines first inside the block.
    pub notes: Vec<String>,
    pub nvlink: Vec<NodeDomain>,
    /// Comment lines between the NVLink domains and the switches.
    pub switch_notes: Vec<String>,
    pub switches: Vec<Switch>,
}

/// A multi-node NVLink domain: `nvlink-domain NAME nodes=PATTERN`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeDomain {
    pub name: String,
    pub nodes: String,
    pub comment: Option<String>,
}

/// A switch of one tier (`leaf`, `spine`, `core`): a leaf holds `nodes`, a switch without
/// nodes is a block of the switches below (`{}` when there are none).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Switch {
    pub tier: String,
    pub name: String,
    pub nodes: Option<String>,
    pub comment: Option<String>,
    pub children: Vec<Switch>,
}

/// `layout P... nodes=PATTERN gpus=SET current=#true`: a MIG layout the GPUs have now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    pub profiles: Vec<String>,
    pub nodes: String,
    pub gpus: Option<String>,
    pub comment: Option<String>,
}

/// `team NAME burst=N`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Team {
    pub name: String,
    pub burst: u64,
}

/// `priority NAME value=N`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Priority {
    pub name: String,
    pub value: i64,
}
