//! Decoding the hardware: GPU models, node classes, node ranges and the fabric.

use super::{labels, name_of, taints};
use crate::spec::reader::NodeView;
use crate::spec::*;

/// `gpu-model "name" base=... memory=... { mig-name ... }`.
pub(super) fn gpu_model(v: &NodeView) -> Option<GpuModelDecl> {
    let name = name_of(v)?;
    let mig_names = v
        .children_named("mig-name")
        .iter()
        .filter_map(|c| Some((c.arg_str(0)?, c.prop_str("driver")?)))
        .collect();
    Some(GpuModelDecl {
        name,
        span: v.head_span(),
        base: v.prop_str("base"),
        memory: v.prop_bytes("memory"),
        nvlink_gen: v.prop_u32("nvlink-gen"),
        nvlink_bandwidth: v.prop_bandwidth("nvlink-bandwidth"),
        price_per_hour: v.prop_f64("price-per-hour"),
        product_name: v.prop_str("product-name"),
        driver: v.prop_version("driver"),
        mig_names,
    })
}

/// `node-class "name" { cpu ... gpus ... numa ... pcie-switch ... nics ... }`.
pub(super) fn node_class(v: &NodeView) -> Option<ClassDecl> {
    let name = name_of(v)?;
    Some(ClassDecl {
        name,
        span: v.head_span(),
        cpu: v.child("cpu").map(|c| CpuDecl {
            span: c.head_span(),
            sockets: c.prop_u32("sockets"),
            cores_per_socket: c.prop_u32("cores-per-socket"),
            threads_per_core: c.prop_u32("threads-per-core"),
        }),
        memory: v.child("memory").and_then(|c| c.arg_bytes(0)),
        gpus: v
            .children_named("gpus")
            .iter()
            .map(|c| GpusDecl {
                span: c.head_span(),
                count: c.arg_u32(0),
                model: c.prop_str("model"),
                bus_ids: c.prop_str("bus-ids"),
                driver: c.prop_version("driver"),
            })
            .collect(),
        nvlink_domains: v
            .children_named("nvlink-domain")
            .iter()
            .filter_map(|c| c.prop_index_set("gpus"))
            .collect(),
        numa: v.children_named("numa").iter().map(numa).collect(),
        pcie_switches: v
            .children_named("pcie-switch")
            .iter()
            .map(pcie_switch)
            .collect(),
        nics: v.child("nics").map(|c| NicsDecl {
            span: c.head_span(),
            count: c.arg_u32(0),
            speed: c.prop_bandwidth("speed"),
            kind: c.prop_str("kind"),
            names: c.prop_str("names"),
            socket_ifname: c.prop_str("socket-ifname"),
            gid_index: c.prop_u32("gid-index"),
            bus_ids: c.prop_str("bus-ids"),
        }),
        labels: labels(v),
        taints: taints(v),
        capacity: capacity(v),
    })
}

/// `capacity=... price-per-hour=... interruptions=...` of a node class or range.
fn capacity(v: &NodeView) -> CapacityDecl {
    CapacityDecl {
        capacity: v.prop_str("capacity"),
        price_per_hour: v.prop_f64("price-per-hour"),
        interruptions: v.prop_rate("interruptions"),
    }
}

/// `storage "name" write-bandwidth=... pool=... leaf=...`.
pub(super) fn storage(v: &NodeView) -> Option<StorageDecl> {
    Some(StorageDecl {
        name: name_of(v)?,
        span: v.head_span(),
        write_bandwidth: v.prop_bandwidth("write-bandwidth"),
        pool: v.prop_str("pool"),
        leaf: v.prop_str("leaf"),
    })
}

/// `numa 0 gpus="0-3" nics=... cores=...` in a node class.
fn numa(c: &NodeView) -> NumaDecl {
    NumaDecl {
        span: c.head_span(),
        id: c.arg_u32(0),
        gpus: c.prop_index_set("gpus"),
        nics: c.prop_index_set("nics"),
        cores: c.prop_index_set("cores"),
    }
}

/// `pcie-switch "name" gpus=... nics=...` in a node class.
fn pcie_switch(c: &NodeView) -> PcieDecl {
    PcieDecl {
        span: c.head_span(),
        name: c.arg_str(0),
        gpus: c.prop_index_set("gpus"),
        nics: c.prop_index_set("nics"),
    }
}

/// `nodes "pattern" class=... { label ... node "name" ... }`.
pub(super) fn nodes(v: &NodeView) -> Option<NodesDecl> {
    let names = v.arg_names(0)?;
    // The pattern as written: valid, since its names were expanded.
    let pattern = v
        .args()
        .next()
        .and_then(|e| e.value().as_string())
        .unwrap_or_default()
        .to_string();
    let overrides = v
        .children_named("node")
        .iter()
        .filter_map(node_override)
        .collect();
    Some(NodesDecl {
        names,
        pattern,
        span: v.head_span(),
        class: v.prop_str("class"),
        labels: labels(v),
        taints: taints(v),
        overrides,
        capacity: capacity(v),
    })
}

/// `node "name" gpus-down=... cordon=... { label ... }` in a node range.
fn node_override(c: &NodeView) -> Option<NodeOverrideDecl> {
    Some(NodeOverrideDecl {
        name: c.arg_str(0)?,
        span: c.head_span(),
        gpus_down: c.prop_index_set("gpus-down"),
        cordon: c.prop_bool("cordon"),
        labels: labels(c),
        taints: taints(c),
    })
}

/// `fabric { core ... spine ... leaf ... nvlink-domain ... }`.
pub(super) fn fabric(v: &NodeView, spec: &mut Spec) {
    for c in v.children() {
        match c.def.name() {
            "nvlink-domain" => {
                if let Some(name) = c.arg_str(0) {
                    spec.mnnvl_domains.push(MnnvlDecl {
                        name,
                        span: c.head_span(),
                        nodes: c.prop_names("nodes"),
                    });
                }
            }
            _ => switch(c, None, spec),
        }
    }
}

/// A switch and, recursively, the switches below it.
fn switch(v: NodeView, parent: Option<usize>, spec: &mut Spec) {
    let Some(name) = v.arg_str(0) else { return };
    let tier = match v.def.name() {
        "core" => SwitchTier::Core,
        "spine" => SwitchTier::Spine,
        _ => SwitchTier::Leaf,
    };
    let idx = spec.switches.len();
    spec.switches.push(SwitchDecl {
        tier,
        name,
        span: v.head_span(),
        parent,
        nodes: v.prop_names("nodes"),
        rails: v.prop_u32("rails"),
        link_speed: v.prop_bandwidth("link-speed"),
    });
    for c in v.children() {
        switch(c, Some(idx), spec);
    }
}
