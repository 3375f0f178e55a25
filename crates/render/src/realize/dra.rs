//! Dynamic Resource Allocation as the API server, kube-scheduler and NVIDIA's DRA
//! driver read it (Kubernetes `resource.k8s.io/v1`, 1.34+; NVIDIA k8s-dra-driver-gpu
//! at 2240711: `cmd/gpu-kubelet-plugin/deviceinfo.go`, `mig.go`,
//! `api/nvidia.com/resource/v1beta1/`):
//! - a DRA node's devices are its usable GPUs as the driver publishes them: a full GPU
//!   (`type: gpu`) per GPU not in MIG mode, a MIG device (`type: mig`, `profile`) per
//!   instance of the mig-parted layout its label selects; each with `productName` and
//!   `architecture` (go-nvlib's names: `Hopper`, `Ada Lovelace`, ...);
//! - a DeviceClass selects devices by CEL; this checker evaluates conjunctions (`&&`)
//!   of `device.driver == '...'` and `device.attributes['gpu.nvidia.com'].<name> ==
//!   '...'` for `type`, `productName`, `architecture`, `profile` and reports anything
//!   else as unreadable (never guessed);
//! - a pod's claim is a ResourceClaimTemplate (a claim, and devices, of its own) or a
//!   ResourceClaim (one allocation every pod naming it shares); `exactly` with
//!   `ExactCount` (default 1), or `firstAvailable` (the first alternative the node can
//!   serve); the driver's `GpuConfig` sharing (`TimeSlicing`, `MPS` with
//!   `defaultActiveThreadPercentage` and `defaultPinnedDeviceMemoryLimit`) in `config`;
//! - a ComputeDomain (`resource.nvidia.com/v1beta1`) makes the driver create its
//!   channel ResourceClaimTemplate (`spec.channel.resourceClaimTemplate.name`, in its
//!   namespace): a pod naming it gets the domain's IMEX channel;
//! - a ResourceQuota counts each claim's devices per class
//!   (`<class>.deviceclass.resource.k8s.io/devices`: a template's once per pod, a shared
//!   claim once).
//!
//! Device keys of the node view: `dra:<model>` (a full GPU), `dra:<model>:<profile>`
//! (a MIG device).

use super::pods::Pod;
use super::yaml::{self, Doc, at, seq_at, str_at};
use super::{Invariant, Sink, Target};
use crate::model::Cluster;
use std::collections::BTreeMap;

/// The driver name of NVIDIA's GPUs and its attribute domain.
const DRIVER: &str = "gpu.nvidia.com";

/// A DeviceClass: the terms its CEL selector requires (`None`: a term this checker
/// cannot read, with the reason).
#[derive(Clone, Debug, Default)]
pub(crate) struct Class {
    pub driver: Option<String>,
    pub attrs: BTreeMap<String, String>,
    pub unreadable: Option<String>,
}

/// One device request: its alternatives (`exactly` has one) as (class, count).
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub alternatives: Vec<(String, u32)>,
}

/// The driver's sharing of a claim's GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ClaimSharing {
    TimeSlicing,
    Mps {
        threads: Option<u32>,
        /// Bytes.
        memory: Option<i128>,
    },
}

/// A ResourceClaim spec (of a claim or of a template).
#[derive(Clone, Debug)]
pub(crate) struct Claim {
    pub id: String,
    pub requests: Vec<Request>,
    pub sharing: Option<ClaimSharing>,
}

/// A ComputeDomain, by the channel template the driver creates for it.
#[derive(Clone, Debug)]
pub(crate) struct Domain {
    pub id: String,
    pub num_nodes: u64,
}

#[derive(Default)]
pub(crate) struct Dra {
    pub classes: BTreeMap<String, Class>,
    /// (namespace, name) -> template spec.
    pub templates: BTreeMap<(String, String), Claim>,
    pub claims: BTreeMap<(String, String), Claim>,
    /// (namespace, channel template) -> its ComputeDomain.
    pub channels: BTreeMap<(String, String), Domain>,
}

/// What one pod claims on one node.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Claimed {
    /// Device key -> thousandths (per pod; a shared claim's device counts whole here).
    pub devices: BTreeMap<String, i128>,
    /// DeviceClass -> devices.
    pub classes: BTreeMap<String, i128>,
    /// The shared claim its GPU comes from (`namespace/name`) and its sharing.
    pub shared: Option<(String, Option<ClaimSharing>)>,
    /// The ComputeDomain whose channel it uses, and its `numNodes`.
    pub channel: Option<(String, u64)>,
}

impl Dra {
    /// Every DeviceClass, claim, claim template and ComputeDomain of the Kubernetes
    /// folders; a malformed one is a `parse` violation.
    pub(crate) fn read(docs: &BTreeMap<Target, Vec<Doc>>, sink: &mut Sink) -> Dra {
        let mut out = Dra::default();
        for (t, docs) in docs {
            for d in docs {
                if let Err(e) = out.add(d) {
                    sink.push(*t, Invariant::Parse, (&d.id(), &d.file), e);
                }
            }
        }
        out
    }

    fn add(&mut self, d: &Doc) -> Result<(), String> {
        let key = (d.namespace.clone(), d.name.clone());
        if d.is("resource.k8s.io", "DeviceClass") {
            self.classes.insert(d.name.clone(), class(&d.value));
        } else if d.is("resource.k8s.io", "ResourceClaimTemplate") {
            let spec = at(&d.value, &["spec", "spec"]).ok_or("no spec.spec")?;
            self.templates.insert(key, claim(d, spec)?);
        } else if d.is("resource.k8s.io", "ResourceClaim") {
            let spec = at(&d.value, &["spec"]).ok_or("no spec")?;
            self.claims.insert(key, claim(d, spec)?);
        } else if d.is("resource.nvidia.com", "ComputeDomain") {
            let template = str_at(
                &d.value,
                &["spec", "channel", "resourceClaimTemplate", "name"],
            )
            .ok_or("a ComputeDomain needs spec.channel.resourceClaimTemplate.name")?;
            let num_nodes = yaml::uint_at(&d.value, &["spec", "numNodes"])?.unwrap_or(0);
            let domain = Domain {
                id: d.id(),
                num_nodes,
            };
            self.channels
                .insert((d.namespace.clone(), template.to_string()), domain);
        }
        Ok(())
    }

    /// What pod template `tpl` of namespace `ns` claims on `node` (its GPUs' models
    /// `models`, MIG devices per GPU `mig`).
    pub(crate) fn claimed(
        &self,
        c: &Cluster,
        ns: &str,
        tpl: &Pod,
        node: &NodeDevices,
    ) -> Result<Claimed, String> {
        let mut out = Claimed::default();
        for pc in &tpl.claims {
            let key = |n: &String| (ns.to_string(), n.clone());
            if let Some(t) = &pc.template {
                if let Some(d) = self.channels.get(&key(t)) {
                    out.channel = Some((d.id.clone(), d.num_nodes));
                    continue;
                }
                let Some(claim) = self.templates.get(&key(t)) else {
                    return Err(format!(
                        "names ResourceClaimTemplate {ns}/{t}, which neither the files nor a ComputeDomain's channel provide"
                    ));
                };
                self.serve(c, claim, node, &mut out)?;
            } else if let Some(n) = &pc.claim {
                let Some(claim) = self.claims.get(&key(n)) else {
                    return Err(format!(
                        "names ResourceClaim {ns}/{n}, which the files lack"
                    ));
                };
                self.serve(c, claim, node, &mut out)?;
                out.shared = Some((format!("{ns}/{n}"), claim.sharing.clone()));
            }
        }
        Ok(out)
    }

    /// Adds what `claim` takes of `node`: per request, the first alternative whose
    /// class selects a device the node has.
    fn serve(
        &self,
        c: &Cluster,
        claim: &Claim,
        node: &NodeDevices,
        out: &mut Claimed,
    ) -> Result<(), String> {
        for r in &claim.requests {
            let mut served = None;
            for (class, count) in &r.alternatives {
                let Some(k) = self.classes.get(class) else {
                    return Err(format!(
                        "{} names DeviceClass {class}, which the files lack",
                        claim.id
                    ));
                };
                if let Some(why) = &k.unreadable {
                    return Err(format!("DeviceClass {class}: {why}"));
                }
                if let Some(dev) = node.devices.keys().find(|d| selects(c, k, d)) {
                    served = Some((dev.key(), class.clone(), *count));
                    break;
                }
            }
            let Some((dev, class, count)) = served else {
                let names: Vec<&str> = r.alternatives.iter().map(|(k, _)| k.as_str()).collect();
                return Err(format!(
                    "{} asks {}, which no device of {} matches",
                    claim.id,
                    names.join(" or "),
                    node.name
                ));
            };
            *out.devices.entry(dev).or_default() += count as i128 * 1000;
            *out.classes.entry(class).or_default() += count as i128;
        }
        Ok(())
    }
}

/// The multi-node NVLink domain all of `nodes` (two or more) sit in.
pub(crate) fn nvlink_domain(c: &Cluster, nodes: &[&str]) -> Option<String> {
    if nodes.len() < 2 {
        return None;
    }
    let domain = |n: &str| {
        c.node(n)?
            .mnnvl
            .iter()
            .copied()
            .find(|&d| c.nvlink_domains[d].multi_node)
    };
    let first = domain(nodes[0])?;
    nodes
        .iter()
        .all(|n| domain(n) == Some(first))
        .then(|| c.nvlink_domains[first].name.clone())
}

/// A device kind a DRA node offers.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Device {
    Full { model: String },
    Mig { model: String, profile: String },
}

impl Device {
    pub(crate) fn key(&self) -> String {
        match self {
            Device::Full { model } => format!("dra:{model}"),
            Device::Mig { model, profile } => format!("dra:{model}:{profile}"),
        }
    }
}

/// What a DRA node offers: device kind -> how many.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeDevices {
    pub name: String,
    pub devices: BTreeMap<Device, u32>,
}

impl NodeDevices {
    /// The devices of node `name` whose usable GPUs are `models` (index -> model) with
    /// the MIG layout `mig` (index -> profile counts; `None`: not in MIG mode).
    pub(crate) fn of(
        name: &str,
        models: &BTreeMap<u32, String>,
        mig: &BTreeMap<u32, super::mig::Layout>,
    ) -> NodeDevices {
        let mut devices = BTreeMap::new();
        for (g, model) in models {
            match mig.get(g).cloned().flatten() {
                Some(layout) => {
                    for (profile, n) in layout.into_iter().filter(|(_, n)| *n > 0) {
                        let d = Device::Mig {
                            model: model.clone(),
                            profile,
                        };
                        *devices.entry(d).or_default() += n;
                    }
                }
                None => {
                    let d = Device::Full {
                        model: model.clone(),
                    };
                    *devices.entry(d).or_default() += 1;
                }
            }
        }
        NodeDevices {
            name: name.to_string(),
            devices,
        }
    }

    /// Device key -> thousandths.
    pub(crate) fn advertised(&self) -> BTreeMap<String, i128> {
        self.devices
            .iter()
            .map(|(d, n)| (d.key(), *n as i128 * 1000))
            .collect()
    }
}

/// Whether class `k` selects device `d` (the model's product name and architecture as
/// the cluster declares them).
fn selects(c: &Cluster, k: &Class, d: &Device) -> bool {
    if k.driver.as_deref().is_some_and(|x| x != DRIVER) {
        return false;
    }
    let (model, kind, profile) = match d {
        Device::Full { model } => (model, "gpu", None),
        Device::Mig { model, profile } => (model, "mig", Some(profile.as_str())),
    };
    let m = c.models.get(model);
    k.attrs.iter().all(|(name, want)| match name.as_str() {
        "type" => want == kind,
        "productName" => m.and_then(|m| m.product_name.as_deref()) == Some(want.as_str()),
        "architecture" => {
            m.and_then(|m| m.catalog)
                .and_then(|g| architecture(g.architecture))
                == Some(want.as_str())
        }
        "profile" => profile == Some(want.as_str()),
        _ => false,
    })
}

/// go-nvlib's `GetArchitectureAsString` for a catalog architecture.
fn architecture(catalog: &str) -> Option<&'static str> {
    Some(match catalog {
        "kepler" => "Kepler",
        "maxwell" => "Maxwell",
        "pascal" => "Pascal",
        "volta" => "Volta",
        "turing" => "Turing",
        "ampere" => "Ampere",
        "ada" => "Ada Lovelace",
        "hopper" => "Hopper",
        "blackwell" => "Blackwell",
        _ => return None,
    })
}

/// A DeviceClass's selectors, read as this checker can.
fn class(v: &serde_yaml::Value) -> Class {
    let mut k = Class::default();
    for s in seq_at(v, &["spec", "selectors"]) {
        let Some(expr) = str_at(s, &["cel", "expression"]) else {
            k.unreadable = Some("a selector without a CEL expression".into());
            continue;
        };
        for term in expr.split("&&") {
            if let Err(e) = cel_term(term.trim(), &mut k) {
                k.unreadable = Some(e);
            }
        }
    }
    k
}

/// One `lhs == 'value'` term of a selector.
fn cel_term(term: &str, k: &mut Class) -> Result<(), String> {
    let unread = || format!("CEL term `{term}` is not one this checker reads");
    let (lhs, rhs) = term.split_once("==").ok_or_else(unread)?;
    let value = cel_string(rhs.trim()).ok_or_else(unread)?;
    let lhs = lhs.trim();
    if lhs == "device.driver" {
        k.driver = Some(value);
        return Ok(());
    }
    let prefix = format!("device.attributes['{DRIVER}'].");
    let name = lhs.strip_prefix(&prefix).ok_or_else(unread)?;
    if !["type", "productName", "architecture", "profile"].contains(&name) {
        return Err(unread());
    }
    k.attrs.insert(name.to_string(), value);
    Ok(())
}

/// A CEL string literal (single- or double-quoted; `\\`, `\'`, `\"` escapes).
fn cel_string(s: &str) -> Option<String> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = s.strip_prefix(q)?.strip_suffix(q)?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            c if c == q => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// A claim spec: its requests and the GPU sharing its config asks of the driver.
fn claim(d: &Doc, spec: &serde_yaml::Value) -> Result<Claim, String> {
    let mut requests = Vec::new();
    for r in seq_at(spec, &["devices", "requests"]) {
        let name = str_at(r, &["name"]).unwrap_or("?");
        let alternatives = if let Some(e) = at(r, &["exactly"]).filter(|x| !x.is_null()) {
            vec![alternative(e, name)?]
        } else {
            let subs = seq_at(r, &["firstAvailable"]);
            if subs.is_empty() {
                return Err(format!(
                    "request `{name}` has neither exactly nor firstAvailable"
                ));
            }
            subs.iter()
                .map(|s| alternative(s, name))
                .collect::<Result<_, _>>()?
        };
        requests.push(Request { alternatives });
    }
    let mut sharing = None;
    for c in seq_at(spec, &["devices", "config"]) {
        let Some(p) = at(c, &["opaque", "parameters"]) else {
            continue;
        };
        if str_at(c, &["opaque", "driver"]) != Some(DRIVER)
            || str_at(p, &["kind"]) != Some("GpuConfig")
        {
            continue;
        }
        sharing = gpu_sharing(p)?;
    }
    Ok(Claim {
        id: d.id(),
        requests,
        sharing,
    })
}

/// One `exactly` or `firstAvailable` entry: its class and count.
fn alternative(v: &serde_yaml::Value, request: &str) -> Result<(String, u32), String> {
    let class = str_at(v, &["deviceClassName"])
        .ok_or_else(|| format!("request `{request}` names no deviceClassName"))?;
    match str_at(v, &["allocationMode"]).unwrap_or("ExactCount") {
        "ExactCount" => {}
        m => {
            return Err(format!(
                "request `{request}`: allocationMode {m} takes every matching device"
            ));
        }
    }
    let count = yaml::uint_at(v, &["count"])?.unwrap_or(1);
    let count =
        u32::try_from(count).map_err(|_| format!("request `{request}`: count too large"))?;
    Ok((class.to_string(), count))
}

/// A `GpuConfig`'s `sharing`, as the driver validates it (sharing.go, validate.go).
fn gpu_sharing(p: &serde_yaml::Value) -> Result<Option<ClaimSharing>, String> {
    let Some(s) = at(p, &["sharing"]).filter(|x| !x.is_null()) else {
        return Ok(None);
    };
    match str_at(s, &["strategy"]) {
        Some("TimeSlicing") => Ok(Some(ClaimSharing::TimeSlicing)),
        Some("MPS") => {
            let threads = yaml::uint_at(s, &["mpsConfig", "defaultActiveThreadPercentage"])?;
            if threads.is_some_and(|t| t > 100) {
                return Err("MPS defaultActiveThreadPercentage above 100".into());
            }
            let memory = match at(s, &["mpsConfig", "defaultPinnedDeviceMemoryLimit"]) {
                None | Some(serde_yaml::Value::Null) => None,
                Some(v) => {
                    let q = yaml::scalar(v).unwrap_or_default();
                    let thousandths = super::quantity::milli(&q).ok_or_else(|| {
                        format!("MPS pinned memory limit `{q}` is not a quantity")
                    })?;
                    Some(thousandths / 1000)
                }
            };
            Ok(Some(ClaimSharing::Mps {
                threads: threads.map(|t| t as u32),
                memory,
            }))
        }
        other => Err(format!(
            "unknown GPU sharing strategy {}",
            other.unwrap_or("(none)")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cel_strings_and_terms() {
        assert_eq!(
            cel_string("'NVIDIA H100 80GB HBM3'").as_deref(),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert_eq!(cel_string(r"'a\'b'").as_deref(), Some("a'b"));
        assert_eq!(cel_string("'a'b'"), None);
        let mut k = Class::default();
        cel_term(
            "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
            &mut k,
        )
        .unwrap();
        assert_eq!(k.attrs["profile"], "1g.10gb");
        assert!(
            cel_term(
                "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0",
                &mut k
            )
            .is_err()
        );
    }
}
