//! The topology tree as a petgraph graph: GPU -> NVLink domain -> node -> leaf ->
//! spine -> core -> cluster, with multi-node NVLink domains (GB200 NVL72 racks) as
//! extra vertices joined to their member nodes.
//!
//! [`Topology::domains`] groups GPUs by tier: the unit in which a gang's `required` or
//! `preferred` tier is checked.

use super::{Cluster, NodeIdx};
use crate::spec::SwitchTier;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::Serialize;
use std::collections::BTreeMap;

/// Topology tiers, innermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Nvlink,
    Node,
    Leaf,
    Spine,
    Core,
    Cluster,
}

impl Tier {
    pub const ALL: [Tier; 6] = [
        Tier::Nvlink,
        Tier::Node,
        Tier::Leaf,
        Tier::Spine,
        Tier::Core,
        Tier::Cluster,
    ];

    pub fn parse(s: &str) -> Option<Tier> {
        Some(match s {
            "nvlink" => Tier::Nvlink,
            "node" => Tier::Node,
            "leaf" => Tier::Leaf,
            "spine" => Tier::Spine,
            "core" => Tier::Core,
            "cluster" => Tier::Cluster,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Nvlink => "nvlink",
            Tier::Node => "node",
            Tier::Leaf => "leaf",
            Tier::Spine => "spine",
            Tier::Core => "core",
            Tier::Cluster => "cluster",
        }
    }

    fn of_switch(t: SwitchTier) -> Tier {
        match t {
            SwitchTier::Leaf => Tier::Leaf,
            SwitchTier::Spine => Tier::Spine,
            SwitchTier::Core => Tier::Core,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vertex {
    Cluster,
    Switch(usize),
    Node(NodeIdx),
    Nvlink(usize),
    Gpu(NodeIdx, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Parent contains child.
    Contains,
    /// A multi-node NVLink domain spans this node.
    NvlinkMember,
}

/// A group of GPUs that forms one domain of a tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain {
    pub name: String,
    pub gpus: Vec<(NodeIdx, u32)>,
    /// Usable GPUs per (node, model), for capacity sums without walking every GPU.
    pub per_node: Vec<(NodeIdx, String, u32)>,
}

#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub graph: DiGraph<Vertex, Edge>,
    pub root: NodeIndex,
    node_vertex: BTreeMap<NodeIdx, NodeIndex>,
    /// Domains per tier, computed once (the cluster does not change after building).
    cache: BTreeMap<Tier, Vec<Domain>>,
}

impl Topology {
    /// Builds the graph from a cluster's nodes, switches and NVLink domains.
    pub fn build(c: &Cluster) -> Topology {
        let mut g = DiGraph::new();
        let root = g.add_node(Vertex::Cluster);
        let sw: Vec<NodeIndex> = (0..c.switches.len())
            .map(|i| g.add_node(Vertex::Switch(i)))
            .collect();
        for (i, s) in c.switches.iter().enumerate() {
            let parent = s.parent.map(|p| sw[p]).unwrap_or(root);
            g.add_edge(parent, sw[i], Edge::Contains);
        }
        let mnnvl: BTreeMap<usize, NodeIndex> = c
            .nvlink_domains
            .iter()
            .enumerate()
            .filter(|(_, d)| d.multi_node)
            .map(|(i, _)| (i, g.add_node(Vertex::Nvlink(i))))
            .collect();
        let mut node_vertex = BTreeMap::new();
        for (ni, n) in c.nodes.iter().enumerate() {
            let v = g.add_node(Vertex::Node(ni));
            node_vertex.insert(ni, v);
            if n.leaves.is_empty() {
                g.add_edge(root, v, Edge::Contains);
            }
            for &l in &n.leaves {
                g.add_edge(sw[l], v, Edge::Contains);
            }
            for d in &n.mnnvl {
                if let Some(&dv) = mnnvl.get(d) {
                    g.add_edge(dv, v, Edge::NvlinkMember);
                }
            }
            let mut local: BTreeMap<usize, NodeIndex> = BTreeMap::new();
            for gpu in &n.gpus {
                let gv = g.add_node(Vertex::Gpu(ni, gpu.index));
                let parent = match gpu.nvlink_domain {
                    Some(d) if !c.nvlink_domains[d].multi_node => {
                        *local.entry(d).or_insert_with(|| {
                            let dv = g.add_node(Vertex::Nvlink(d));
                            g.add_edge(v, dv, Edge::Contains);
                            dv
                        })
                    }
                    _ => v,
                };
                g.add_edge(parent, gv, Edge::Contains);
            }
        }
        let mut t = Topology {
            graph: g,
            root,
            node_vertex,
            cache: BTreeMap::new(),
        };
        // The tiers' domains are independent: on the machine's cores (0.06 s at 100,000
        // GPUs on one).
        let computed = crate::par::map(&Tier::ALL, |tier| t.compute_domains(c, *tier));
        t.cache = Tier::ALL.into_iter().zip(computed).collect();
        t
    }

    /// The parent (containing) vertex of `v`.
    fn parent(&self, v: NodeIndex) -> Option<NodeIndex> {
        self.graph
            .edges_directed(v, petgraph::Direction::Incoming)
            .filter(|e| *e.weight() == Edge::Contains)
            .map(|e| e.source())
            .min()
    }

    /// The vertex that is `node`'s domain at `tier` (node, leaf, spine, core, cluster):
    /// the nearest ancestor of at least that tier; the cluster root when none is.
    pub fn ancestor_at(&self, c: &Cluster, node: NodeIdx, tier: Tier) -> NodeIndex {
        let Some(&start) = self.node_vertex.get(&node) else {
            return self.root;
        };
        if tier <= Tier::Node {
            return start;
        }
        let mut v = start;
        while let Some(p) = self.parent(v) {
            match &self.graph[p] {
                Vertex::Switch(s) if Tier::of_switch(c.switches[*s].tier) >= tier => return p,
                Vertex::Cluster => return p,
                _ => v = p,
            }
        }
        self.root
    }

    fn vertex_name(&self, c: &Cluster, v: NodeIndex) -> String {
        match &self.graph[v] {
            Vertex::Cluster => "cluster".to_string(),
            Vertex::Switch(s) => c.switches[*s].name.clone(),
            Vertex::Node(n) => c.nodes[*n].name.clone(),
            Vertex::Nvlink(d) => c.nvlink_domains[*d].name.clone(),
            Vertex::Gpu(n, i) => format!("{}/gpu{i}", c.nodes[*n].name),
        }
    }

    /// All domains of a tier with their usable GPUs, sorted by name.
    pub fn domains(&self, c: &Cluster, tier: Tier) -> Vec<Domain> {
        match self.cache.get(&tier) {
            Some(d) => d.clone(),
            None => self.compute_domains(c, tier),
        }
    }

    /// Like [`Topology::domains`], without copying (empty before `build`).
    pub fn domains_ref(&self, tier: Tier) -> &[Domain] {
        self.cache.get(&tier).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The topology of the same nodes after every GPU model was renamed per node
    /// (`rename(node, model)`, distinct models of a node keeping distinct names), as
    /// [`Topology::build`] would give it: the graph and domains are the nodes' and stay,
    /// each node's per-model counts take the new names, in their order. For the solver's
    /// view ([`super::authority::solver_view`]), which only renames models: building it
    /// again was a third of the view's 0.14 s at 100,000 GPUs.
    pub fn renamed(mut self, rename: impl Fn(NodeIdx, &str) -> String) -> Topology {
        for domains in self.cache.values_mut() {
            for d in domains {
                for run in d.per_node.chunk_by_mut(|a, b| a.0 == b.0) {
                    for (n, m, _) in run.iter_mut() {
                        *m = rename(*n, m);
                    }
                    run.sort_unstable_by(|a, b| a.1.cmp(&b.1));
                }
            }
        }
        self
    }

    fn compute_domains(&self, c: &Cluster, tier: Tier) -> Vec<Domain> {
        // Per domain name, its usable GPUs with their models, in node order. A node's
        // name is looked up once per node (every tier but NVLink puts all its usable GPUs
        // in one domain): 100,000 GPUs and six tiers made this a tenth of `validate`.
        let mut groups: BTreeMap<String, Vec<(NodeIdx, u32, &str)>> = BTreeMap::new();
        fn group<'g, 'a>(
            groups: &'g mut BTreeMap<String, Vec<(NodeIdx, u32, &'a str)>>,
            key: &str,
        ) -> &'g mut Vec<(NodeIdx, u32, &'a str)> {
            if !groups.contains_key(key) {
                groups.insert(key.to_string(), Vec::new());
            }
            groups.get_mut(key).expect("inserted above")
        }
        for (ni, n) in c.nodes.iter().enumerate() {
            let mut usable = n.usable_gpus().peekable();
            if usable.peek().is_none() {
                continue;
            }
            if tier != Tier::Nvlink {
                let key = self.vertex_name(c, self.ancestor_at(c, ni, tier));
                let v = group(&mut groups, &key);
                v.extend(usable.map(|g| (ni, g.index, g.model.as_deref().unwrap_or(""))));
                continue;
            }
            let usable: Vec<&super::Gpu> = usable.collect();
            // One lookup per run of GPUs in the same NVLink domain.
            for run in usable
                .chunk_by(|a, b| a.nvlink_domain.is_some() && a.nvlink_domain == b.nvlink_domain)
            {
                let key = match run[0].nvlink_domain {
                    Some(d) => std::borrow::Cow::Borrowed(c.nvlink_domains[d].name.as_str()),
                    None => format!("{}/gpu{}", n.name, run[0].index).into(),
                };
                let v = group(&mut groups, &key);
                v.extend(
                    run.iter()
                        .map(|g| (ni, g.index, g.model.as_deref().unwrap_or(""))),
                );
            }
        }
        groups
            .into_iter()
            .map(|(name, members)| {
                // Usable GPUs per (node, model), by node then model name: a node's GPUs
                // are consecutive (nodes are visited in order).
                let mut per_node = Vec::new();
                for run in members.chunk_by(|a, b| a.0 == b.0) {
                    let mut models: Vec<&str> = run.iter().map(|(_, _, m)| *m).collect();
                    models.sort_unstable();
                    for same in models.chunk_by(|a, b| a == b) {
                        per_node.push((run[0].0, same[0].to_string(), same.len() as u32));
                    }
                }
                Domain {
                    name,
                    gpus: members.iter().map(|(n, i, _)| (*n, *i)).collect(),
                    per_node,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renaming the models of a topology gives what building it over the renamed GPUs
    /// gives, also where the new names order a node's models the other way.
    #[test]
    fn a_renamed_topology_is_the_one_built_over_the_new_names() {
        let mut c = crate::model::from_text(
            r#"
node-class "x" {
    cpu sockets=2 cores-per-socket=16
    gpus 4 model="a100-sxm4-80gb"
    gpus 2 model="t4-16gb"
    nvlink-domain gpus="0-3"
}
nodes "x-[1-3]" class="x"
fabric { leaf "l" nodes="x-[1-3]"; }
"#,
        );
        // t4 before a100 after the renaming; node 2's names carry its index.
        let rename = |n: NodeIdx, m: &str| {
            let m = m.replace("t4-16gb", "0-t4");
            if n == 2 { format!("{m}#{n}") } else { m }
        };
        let renamed = c.topology.clone().renamed(rename);
        for (n, node) in c.nodes.iter_mut().enumerate() {
            for g in &mut node.gpus {
                g.model = g.model.as_deref().map(|m| rename(n, m));
            }
        }
        let built = Topology::build(&c);
        for tier in Tier::ALL {
            assert_eq!(
                renamed.domains_ref(tier),
                built.domains_ref(tier),
                "{tier:?}"
            );
        }
        let node = &built.domains_ref(Tier::Node)[0].per_node;
        assert_eq!(node[0].1, "0-t4", "the renamed order: {node:?}");
    }
}
