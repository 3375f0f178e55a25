//! The Alibaba GPU cluster trace v2023 ("openb", the FGD paper's benchmark) in gpuplan's
//! language: `gpuplan import openb --nodes NODES.csv --pods PODS.csv`.
//!
//! Nodes keep their GPU model, CPU and memory (one node class per distinct
//! combination). Pods are sampled uniformly with replacement until the GPUs they
//! request (`num_gpu` x `gpu_milli`) reach `load` x the cluster's GPUs, as the paper's
//! protocol does; then either identical pods become one inference class with replicas
//! (`aggregate`, what a planner sees), or every sampled pod becomes its own class named
//! in arrival order (`pod-000001`...), so that the greedy solver's name order is the
//! arrival order (an online first-fit). Fractional pods get `fraction`, whole-GPU pods
//! `gpus N`, CPU-only pods `gpus 0`; all get `requests cpu= memory=`; `gpu_spec` becomes
//! `models` (each model once). Every name is one GP031 accepts: readable when it fits
//! 63 characters, else shortened with a hash of what it names ([`dns_name`]), and no
//! two classes share one. Pure: CSV text in, KDL files out.

use crate::generate::Rng;
use crate::import::doc::{
    Cluster, Cpu, Document, GpuModel, Gpus, Item, Memory, NodeClass, Nodes, Priority, Team,
};
use crate::limits::{MAX_GPUS_PER_NODE, MAX_NUMBER};
use crate::names;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenbNode {
    pub name: String,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub gpus: u32,
    pub model: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OpenbPod {
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub num_gpu: u32,
    pub gpu_milli: u32,
    /// Acceptable models (`|`-separated in the trace); empty = any.
    pub gpu_spec: Vec<String>,
}

impl OpenbPod {
    /// GPU requested in 1/1000 GPU.
    pub(crate) fn gpu(&self) -> u64 {
        self.num_gpu as u64 * self.gpu_milli as u64
    }
}

#[derive(Clone, Debug)]
pub struct OpenbOptions {
    pub load: f64,
    pub seed: u64,
    /// One class per distinct pod (true) or one class per sampled pod.
    pub aggregate: bool,
    /// Header line naming the command that made the files.
    pub command: String,
}

/// A CSV error: line number (1-based) and message.
pub type CsvError = (usize, String);

fn columns(header: &str) -> BTreeMap<String, usize> {
    header
        .split(',')
        .enumerate()
        .map(|(i, h)| (h.trim().to_string(), i))
        .collect()
}

/// One data row of a CSV file, fields looked up by header name.
struct Row<'a> {
    cols: &'a BTreeMap<String, usize>,
    fields: Vec<&'a str>,
    line: usize,
}

impl<'a> Row<'a> {
    fn text(&self, name: &str) -> Result<&'a str, CsvError> {
        let i = self
            .cols
            .get(name)
            .ok_or((1, format!("the header has no `{name}` column")))?;
        self.fields
            .get(*i)
            .map(|s| s.trim())
            .ok_or((self.line, format!("missing `{name}`")))
    }

    fn number(&self, name: &str) -> Result<u64, CsvError> {
        let s = self.text(name)?;
        let n = s
            .parse::<u64>()
            .map_err(|_| (self.line, format!("`{name}` is `{s}`, not a whole number")))?;
        // What is read is written (requests, capacities): past what the language reads
        // exactly, the output would not validate.
        if n > MAX_NUMBER {
            return Err((self.line, format!("`{name}` is {n}: at most {MAX_NUMBER}")));
        }
        Ok(n)
    }
}

/// The header's columns and the non-blank data lines (1-based line number, fields).
type Rows<'a> = (BTreeMap<String, usize>, Vec<(usize, Vec<&'a str>)>);

fn rows(text: &str) -> Result<Rows<'_>, CsvError> {
    let mut lines = text.lines();
    let cols = columns(lines.next().ok_or((1, "the file is empty".to_string()))?);
    let data = lines
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 2, l.split(',').collect()))
        .collect();
    Ok((cols, data))
}

/// Reads `openb_node_list_*.csv` (`sn,cpu_milli,memory_mib,gpu,model`).
pub fn parse_nodes(text: &str) -> Result<Vec<OpenbNode>, CsvError> {
    let (cols, data) = rows(text)?;
    let mut out = Vec::new();
    // Line of each node name: a name listed twice is an error, not two nodes (GP007).
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (line, fields) in data {
        let row = Row {
            cols: &cols,
            fields,
            line,
        };
        let gpus = row.number("gpu")?;
        if gpus > MAX_GPUS_PER_NODE {
            return Err((
                line,
                format!("{gpus} GPUs on one node: at most {MAX_GPUS_PER_NODE}"),
            ));
        }
        let name = row.text("sn")?.to_ascii_lowercase();
        if let Err(why) = names::dns_label(&name, names::DNS_LABEL_MAX) {
            return Err((
                line,
                format!(
                    "node name `{}` is not a DNS label: it {why}",
                    crate::fmt::comment(&name)
                ),
            ));
        }
        if let Some(first) = seen.insert(name.clone(), line) {
            return Err((
                line,
                format!("node `{name}` is listed twice (first on line {first})"),
            ));
        }
        out.push(OpenbNode {
            name,
            cpu_milli: row.number("cpu_milli")?,
            memory_mib: row.number("memory_mib")?,
            gpus: gpus as u32,
            model: row.text("model")?.to_string(),
        });
    }
    if out.is_empty() {
        return Err((1, "no nodes".to_string()));
    }
    Ok(out)
}

/// Reads `openb_pod_list_*.csv` (`cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec]`).
pub fn parse_pods(text: &str) -> Result<Vec<OpenbPod>, CsvError> {
    let (cols, data) = rows(text)?;
    let mut out = Vec::new();
    for (line, fields) in data {
        let row = Row {
            cols: &cols,
            fields,
            line,
        };
        let num_gpu = row.number("num_gpu")?;
        let gpu_milli = row.number("gpu_milli")?;
        if num_gpu > 64 || gpu_milli > 1000 || (gpu_milli < 1000 && num_gpu > 1) {
            return Err((
                line,
                format!("num_gpu {num_gpu} with gpu_milli {gpu_milli} is not a pod the trace has"),
            ));
        }
        let spec = if cols.contains_key("gpu_spec") {
            row.text("gpu_spec")?
        } else {
            ""
        };
        let mut gpu_spec: Vec<String> = spec
            .split('|')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        // Each model once: `T4|t4|T4` is one acceptable model.
        gpu_spec.sort_by_key(|m| m.to_ascii_lowercase());
        gpu_spec.dedup_by_key(|m| m.to_ascii_lowercase());
        out.push(OpenbPod {
            cpu_milli: row.number("cpu_milli")?,
            memory_mib: row.number("memory_mib")?,
            num_gpu: num_gpu as u32,
            gpu_milli: if num_gpu == 0 { 0 } else { gpu_milli as u32 },
            gpu_spec,
        });
    }
    if out.is_empty() {
        return Err((1, "no pods".to_string()));
    }
    Ok(out)
}

/// The paper's sampling: uniform with replacement until requested GPU reaches `load` x
/// capacity (a list without GPU pods stops after as many pods as it has).
/// At most [`MAX_SAMPLED_PODS`] pods ([`convert`] refuses a sample cut there).
pub(crate) fn sample(pods: &[OpenbPod], capacity_gpus: u64, load: f64, seed: u64) -> Vec<OpenbPod> {
    let target = target_milli(capacity_gpus, load);
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut total = 0;
    let any_gpu = pods.iter().any(|p| p.gpu() > 0);
    while total < target && out.len() < MAX_SAMPLED_PODS && (any_gpu || out.len() < pods.len()) {
        let p = rng.pick(pods).clone();
        total += p.gpu();
        out.push(p);
    }
    out
}

fn model_name(m: &str) -> String {
    let m = m.to_ascii_lowercase();
    dns_name(&format!("openb-{m}"), &m)
}

/// Hex digits of the key's SHA-256 a shortened name ends with.
const HASH_DIGITS: usize = 10;

/// A name GP031 accepts for the object `key` stands for: `readable` when it is a DNS
/// label of at most 63 characters (the limit of every name the importer writes: node
/// classes, GPU models and inference classes; it writes no training class, whose pods'
/// `-worker-N` suffix would need less), else [`hashed`]. Deterministic: the same key,
/// the same name.
fn dns_name(readable: &str, key: &str) -> String {
    if names::dns_label(readable, names::DNS_LABEL_MAX).is_ok() {
        readable.to_string()
    } else {
        hashed(readable, key)
    }
}

/// The longest DNS-label prefix of `readable` (lowercased, other characters as single
/// `-`) that leaves room for `-` and [`HASH_DIGITS`] hex digits of the SHA-256 of `key`:
/// the full key, so two keys with one prefix still differ.
fn hashed(readable: &str, key: &str) -> String {
    let digest = crate::state::sha256(key.as_bytes());
    let hash = digest.trim_start_matches("sha256:");
    let mut prefix = String::new();
    for c in readable.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && (prefix.is_empty() || prefix.ends_with('-'))) {
            prefix.push(c);
        }
    }
    prefix.truncate(names::DNS_LABEL_MAX - 1 - HASH_DIGITS);
    let prefix = prefix.trim_end_matches('-');
    let prefix = if prefix.is_empty() { "x" } else { prefix };
    format!("{prefix}-{}", &hash[..HASH_DIGITS])
}

/// Memory of the trace's GPU models (G2/G3 are undisclosed: 16 GiB is a placeholder;
/// pods in the trace give no GPU memory footprint, so it never decides a placement).
fn model_memory(m: &str) -> &'static str {
    match m.to_ascii_uppercase().as_str() {
        "V100M32" => "32GiB",
        "A10" => "24GiB",
        _ => "16GiB",
    }
}

fn class_name(n: &OpenbNode) -> String {
    if n.gpus == 0 {
        let key = format!("openb-cpu-{}c-{}m", n.cpu_milli, n.memory_mib);
        return dns_name(&key, &key);
    }
    let key = format!(
        "openb-{}-{}g-{}c-{}m",
        n.model.to_ascii_lowercase(),
        n.gpus,
        n.cpu_milli,
        n.memory_mib
    );
    dns_name(&key, &key)
}

fn pod_body(p: &OpenbPod) -> String {
    let mut s = String::new();
    if p.num_gpu == 0 {
        s.push_str("    gpus 0\n");
    } else if p.gpu_milli < 1000 {
        let _ = writeln!(s, "    fraction \"{}%\"", p.gpu_milli as f64 / 10.0);
    } else {
        let _ = writeln!(s, "    isolation \"whole-gpu\"\n    gpus {}", p.num_gpu);
    }
    let _ = writeln!(
        s,
        "    requests cpu={} memory=\"{}MiB\"",
        fmt_cores(p.cpu_milli),
        p.memory_mib
    );
    if !p.gpu_spec.is_empty() {
        let models: Vec<String> = p
            .gpu_spec
            .iter()
            .map(|m| format!("\"{}\"", model_name(m)))
            .collect();
        let _ = writeln!(s, "    models {}", models.join(" "));
    }
    s
}

fn fmt_cores(milli: u64) -> String {
    if milli % 1000 == 0 {
        format!("{}", milli / 1000)
    } else {
        let s = format!("{}.{:03}", milli / 1000, milli % 1000);
        s.trim_end_matches('0').to_string()
    }
}

/// The most pods one import samples: the published trace needs about 9,000 at load 1.0
/// and 90,000 at the largest load (10); a list of tiny GPU shares on many GPUs could
/// otherwise ask for millions (issue 30: never an unbounded allocation).
pub(crate) const MAX_SAMPLED_PODS: usize = 200_000;

/// GPU requested by `load` x the cluster's GPUs, in 1/1000 GPU.
fn target_milli(capacity_gpus: u64, load: f64) -> u64 {
    (load.max(0.0) * capacity_gpus as f64 * 1000.0).round() as u64
}

/// `(file name, KDL text)`: `cluster.kdl` (models, classes, nodes, team, priority) and
/// `workloads.kdl` (the sampled pods); an error when the load takes more than
/// [`MAX_SAMPLED_PODS`] pods to reach.
pub fn convert(
    nodes: &[OpenbNode],
    pods: &[OpenbPod],
    o: &OpenbOptions,
) -> Result<Vec<(String, String)>, String> {
    let capacity: u64 = nodes.iter().map(|n| n.gpus as u64).sum();
    let sampled = sample(pods, capacity, o.load, o.seed);
    let requested: u64 = sampled.iter().map(OpenbPod::gpu).sum();
    if sampled.len() >= MAX_SAMPLED_PODS && requested < target_milli(capacity, o.load) {
        return Err(format!(
            "--load {} of {capacity} GPUs takes more than {MAX_SAMPLED_PODS} sampled pods \
             ({MAX_SAMPLED_PODS} request {:.1} GPUs)",
            o.load,
            requested as f64 / 1000.0
        ));
    }
    Ok(vec![
        (
            "cluster.kdl".to_string(),
            cluster_kdl(nodes, pods, o, capacity),
        ),
        (
            "workloads.kdl".to_string(),
            workloads_kdl(&sampled, o, capacity),
        ),
    ])
}

/// `cluster.kdl`: GPU models (of nodes and pods), one node class per distinct node
/// shape, every node, one team and one priority.
fn cluster_kdl(nodes: &[OpenbNode], pods: &[OpenbPod], o: &OpenbOptions, capacity: u64) -> String {
    crate::import::doc::kdl::write(&cluster_document(nodes, pods, o, capacity))
}

/// The cluster part of the trace as a [`Document`].
fn cluster_document(
    nodes: &[OpenbNode],
    pods: &[OpenbPod],
    o: &OpenbOptions,
    capacity: u64,
) -> Document {
    let mut d = Document::default();
    d.comment(format!("Generated by `{}`.", o.command));
    d.comment(format!(
        "Alibaba GPU cluster trace v2023 (openb): {} nodes, {capacity} GPUs.",
        nodes.len()
    ));
    // The trace's cluster runs a GPU-sharing scheduler (any share of a GPU, beside
    // whole-GPU pods on one node) that none of the declared authorities carries: the
    // device plugin behind kubernetes, kueue and volcano gives a shared replica at most
    // half a GPU (GP048). No scheduler is declared, so the planner keeps the trace's
    // semantics (docs/render.md: sharing with no scheduler declared).
    d.push(Item::Cluster(Cluster {
        name: "openb".into(),
        scheduler: None,
    }));
    d.blank();
    let mut models: Vec<&str> = nodes
        .iter()
        .filter(|n| n.gpus > 0)
        .map(|n| n.model.as_str())
        .chain(
            pods.iter()
                .flat_map(|p| p.gpu_spec.iter().map(String::as_str)),
        )
        .collect();
    models.sort_by_key(|m| model_name(m));
    models.dedup_by_key(|m| model_name(m));
    for m in models {
        d.push(Item::GpuModel(GpuModel {
            name: model_name(m),
            memory: Some(model_memory(m).to_string()),
            nvlink_gen: Some(0),
            ..GpuModel::default()
        }));
    }
    d.blank();
    // Every node of the list, those without GPUs too (CPU-only pods may run there):
    // an import never loses a node (docs/import.md, "The contract").
    let mut classes: BTreeMap<String, &OpenbNode> = BTreeMap::new();
    for n in nodes {
        classes.entry(class_name(n)).or_insert(n);
    }
    for (name, n) in classes {
        d.push(Item::NodeClass(NodeClass {
            name,
            cpu: Some(Cpu {
                sockets: 1,
                cores_per_socket: n.cpu_milli / 1000,
                ..Cpu::default()
            }),
            memory: Some(Memory {
                size: format!("{}MiB", n.memory_mib),
                comment: None,
            }),
            gpus: (n.gpus > 0)
                .then(|| Gpus {
                    count: u64::from(n.gpus),
                    model: model_name(&n.model),
                    ..Gpus::default()
                })
                .into_iter()
                .collect(),
            ..NodeClass::default()
        }));
    }
    d.blank();
    let mut sorted: Vec<&OpenbNode> = nodes.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for n in sorted {
        d.push(Item::Nodes(Nodes {
            pattern: n.name.clone(),
            class: class_name(n),
            ..Nodes::default()
        }));
    }
    d.blank();
    d.push(Item::Team(Team {
        name: "openb".into(),
        burst: capacity,
    }));
    d.push(Item::Priority(Priority {
        name: "default".into(),
        value: 0,
    }));
    d
}

/// `workloads.kdl`: the sampled pods, one class per distinct pod (with replicas) or one
/// per sampled pod in arrival order.
fn workloads_kdl(sampled: &[OpenbPod], o: &OpenbOptions, capacity: u64) -> String {
    let requested: u64 = sampled.iter().map(OpenbPod::gpu).sum();
    let mut w = String::new();
    let _ = writeln!(w, "// Generated by `{}`.", crate::fmt::comment(&o.command));
    let _ = writeln!(
        w,
        "// {} pods sampled (seed {}, load {}): {:.1} GPUs requested, {:.2}% of {capacity}.",
        sampled.len(),
        o.seed,
        o.load,
        requested as f64 / 1000.0,
        requested as f64 / 10.0 / capacity.max(1) as f64
    );
    if o.aggregate {
        for (name, p, n) in aggregated(sampled) {
            let _ = writeln!(
                w,
                "\ninference \"{name}\" team=\"openb\" priority=\"default\" replicas={n} {{\n{}}}",
                pod_body(p)
            );
        }
    } else {
        for (i, p) in sampled.iter().enumerate() {
            let _ = writeln!(
                w,
                "\ninference \"pod-{:06}\" team=\"openb\" priority=\"default\" {{\n{}}}",
                i + 1,
                pod_body(p)
            );
        }
    }
    w
}

/// Identical sampled pods as one class each: `(name, pod, replicas)`, by name.
fn aggregated(sampled: &[OpenbPod]) -> Vec<(String, &OpenbPod, u32)> {
    let mut counts: BTreeMap<&OpenbPod, u32> = BTreeMap::new();
    for p in sampled {
        *counts.entry(p).or_default() += 1;
    }
    let mut used = std::collections::BTreeSet::new();
    let mut named: Vec<(String, &OpenbPod, u32)> = counts
        .into_iter()
        .map(|(p, n)| (unique_name(&mut used, p), p, n))
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named
}

/// The class name of a distinct pod, not yet in `used` (which then holds it): its shape
/// and models (`pod-g1x1000-c4000-m8192-on-p100-t4`), shortened with a hash of the pod's
/// full key past 63 characters ([`dns_name`]). Two pods whose readable names meet (the
/// trace's models joined with `-` can) are told apart by that hash, and the rare hash
/// clash by a counter; pods come in key order, so the names are deterministic.
fn unique_name(used: &mut std::collections::BTreeSet<String>, p: &OpenbPod) -> String {
    let mut readable = format!(
        "pod-g{}x{}-c{}-m{}",
        p.num_gpu, p.gpu_milli, p.cpu_milli, p.memory_mib
    );
    if !p.gpu_spec.is_empty() {
        readable.push_str("-on-");
        readable.push_str(&p.gpu_spec.join("-").to_ascii_lowercase());
    }
    let key = format!(
        "{} {} {} {} {}",
        p.num_gpu,
        p.gpu_milli,
        p.cpu_milli,
        p.memory_mib,
        p.gpu_spec.join("|")
    );
    let mut name = dns_name(&readable, &key);
    if used.contains(&name) {
        name = hashed(&readable, &key);
    }
    let mut k = 2;
    while !used.insert(name.clone()) {
        name = hashed(&readable, &format!("{key} #{k}"));
        k += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str =
        "sn,cpu_milli,memory_mib,gpu,model\nn-0,32000,65536,2,T4\nn-1,32000,65536,2,T4\n";
    const PODS: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,4000,8192,1,500,\np1,2500,4096,1,1000,T4|P100\np2,1000,1024,0,0,\n";

    #[test]
    fn samples_until_the_load_is_reached() {
        let pods = parse_pods(PODS).unwrap();
        let s = sample(&pods, 4, 1.0, 42);
        let gpu: u64 = s.iter().map(OpenbPod::gpu).sum();
        assert!(gpu >= 4000);
        let last = s.last().unwrap().gpu();
        assert!(gpu - last < 4000, "stops as soon as the load is reached");
        assert_eq!(s, sample(&pods, 4, 1.0, 42), "same seed, same sample");
    }

    #[test]
    fn converts_pods_to_classes() {
        let nodes = parse_nodes(NODES).unwrap();
        let pods = parse_pods(PODS).unwrap();
        let o = OpenbOptions {
            load: 1.0,
            seed: 1,
            aggregate: true,
            command: "test".into(),
        };
        let files = convert(&nodes, &pods, &o).unwrap();
        let w = &files[1].1;
        assert!(files[0].1.contains("cores-per-socket=32"));
        assert!(w.contains("fraction \"50%\""));
        assert!(w.contains("models \"openb-p100\" \"openb-t4\""));
        assert!(w.contains("requests cpu=2.5 memory=\"4096MiB\""));
    }

    /// The class names of `pods` (one class per distinct pod).
    fn class_names(pods: &[OpenbPod]) -> Vec<String> {
        aggregated(pods).into_iter().map(|(n, _, _)| n).collect()
    }

    #[test]
    fn issue29_long_model_lists_give_valid_unique_stable_names() {
        let seven = "V100M16|V100M32|P100|T4|A10|G2|G3";
        let text = format!(
            "cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n\
             160000,1310720,1,1000,{seven}\n\
             160000,1310720,1,1000,V100M16|V100M32|P100|T4|A10|G2\n\
             4000,8192,1,1000,T4|t4|T4\n\
             4000,8192,1,1000,P100|T4\n"
        );
        let pods = parse_pods(&text).unwrap();
        assert_eq!(pods[2].gpu_spec, ["T4"], "each model once");
        let names = class_names(&pods);
        assert_eq!(names.len(), 4);
        for n in &names {
            assert!(names::dns_label(n, names::DNS_LABEL_MAX).is_ok(), "{n}");
        }
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), 4, "{names:?}");
        // Short names stay readable; long ones keep a readable prefix and a hash.
        assert!(names.contains(&"pod-g1x1000-c4000-m8192-on-p100-t4".to_string()));
        assert!(names.contains(&"pod-g1x1000-c4000-m8192-on-t4".to_string()));
        assert!(names.contains(
            &"pod-g1x1000-c160000-m1310720-on-a10-g2-p100-t4-v100m16-v100m32".to_string()
        ));
        let hashed: Vec<&String> = names.iter().filter(|n| n.len() == 63).collect();
        assert_eq!(hashed.len(), 1, "{names:?}");
        let (prefix, hash) = hashed[0].rsplit_once('-').unwrap();
        assert_eq!(
            prefix,
            "pod-g1x1000-c160000-m1310720-on-a10-g2-g3-p100-t4-v1"
        );
        assert_eq!(hash.len(), HASH_DIGITS);
        // Deterministic: the same pods, the same names, in any order.
        let mut reversed = pods.clone();
        reversed.reverse();
        assert_eq!(class_names(&reversed), names);
    }

    #[test]
    fn issue29_meeting_readable_names_are_told_apart() {
        // `A-B` + `C` and `A` + `B-C` both read `...-on-a-b-c`.
        let text = "cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n\
                    1000,1024,1,1000,A-B|C\n\
                    1000,1024,1,1000,A|B-C\n";
        let names = class_names(&parse_pods(text).unwrap());
        assert_eq!(names.len(), 2);
        assert_ne!(names[0], names[1], "{names:?}");
        assert!(names.contains(&"pod-g1x1000-c1000-m1024-on-a-b-c".to_string()));
        for n in &names {
            assert!(names::dns_label(n, names::DNS_LABEL_MAX).is_ok(), "{n}");
        }
    }

    #[test]
    fn bad_rows_are_errors() {
        assert_eq!(
            parse_nodes("sn,cpu_milli,memory_mib,gpu,model\nn,x,1,1,T4\n")
                .unwrap_err()
                .0,
            2
        );
        assert!(parse_pods("cpu_milli,memory_mib,num_gpu,gpu_milli\n1,1,2,500\n").is_err());
        assert!(parse_pods("").is_err());
        // Past what the language reads exactly: the class it became would not validate.
        let huge = format!(
            "cpu_milli,memory_mib,num_gpu,gpu_milli\n{},1,1,500\n",
            u64::MAX
        );
        let e = parse_pods(&huge).unwrap_err();
        assert_eq!(e.0, 2, "{}", e.1);
        assert!(
            parse_pods(&format!(
                "cpu_milli,memory_mib,num_gpu,gpu_milli\n{MAX_NUMBER},1,1,500\n"
            ))
            .is_ok()
        );
    }
}
