//! How many GPUs a Node shows: `nvidia.com/gpu.count` (GFD: physical GPUs, or MIG
//! devices under the single strategy), else the device plugin's `nvidia.com/gpu`
//! capacity over the time-slicing replicas. Under the mixed strategy the capacity counts
//! only the GPUs without MIG, so it does not count the node's GPUs when MIG devices are
//! advertised.

use super::read::RawNode;
use super::text::shown;
use super::{COUNT, GPU_RESOURCE, PRODUCT, REPLICAS, mig};

/// What is missing or wrong (the key to point at) when a node's GPU count cannot be
/// told, and why.
pub(crate) type Unknown = (&'static str, String);

/// The GPUs (or, single strategy, MIG devices) the node's labels and capacity count.
pub(crate) fn count_of(n: &RawNode) -> Result<u64, Unknown> {
    let num = |v: &String| v.trim().parse::<u64>().ok();
    if let Some(c) = n.labels.get(COUNT).and_then(num) {
        if c == 0 {
            return Err((COUNT, format!("`{COUNT}` is 0")));
        }
        return Ok(c);
    }
    let Some(cap) = n.capacity.get(GPU_RESOURCE) else {
        return Err((
            key_of(n),
            format!("neither `{COUNT}` nor `{GPU_RESOURCE}` capacity"),
        ));
    };
    let Some(cap) = num(cap) else {
        return Err((
            GPU_RESOURCE,
            format!(
                "the `{GPU_RESOURCE}` capacity `{}` is not a number",
                shown(cap)
            ),
        ));
    };
    if !mig::advertises_devices(n) && mig::has_totals(n) {
        return Err((
            GPU_RESOURCE,
            format!(
                "MIG devices are advertised by profile (mixed strategy), so the `{GPU_RESOURCE}` capacity ({cap}) counts only the GPUs without MIG, and there is no `{COUNT}`"
            ),
        ));
    }
    let replicas = n.labels.get(REPLICAS).and_then(num).unwrap_or(1).max(1);
    match cap / replicas {
        0 => Err((
            GPU_RESOURCE,
            format!("the `{GPU_RESOURCE}` capacity is {cap}"),
        )),
        c => Ok(c),
    }
}

/// The key a diagnostic about the count points at: the count label, else the capacity,
/// else the product label (what says the node has GPUs).
pub(crate) fn key_of(n: &RawNode) -> &'static str {
    if n.labels.contains_key(COUNT) {
        COUNT
    } else if n.capacity.contains_key(GPU_RESOURCE) {
        GPU_RESOURCE
    } else {
        PRODUCT
    }
}

/// The physical GPUs a Node shows at a glance (for the import report): the count, 0 when
/// it cannot be read or counts MIG devices (single strategy), where only the import can
/// tell the GPUs.
pub(crate) fn gpus_seen(n: &RawNode) -> u64 {
    if mig::advertises_devices(n) {
        return 0;
    }
    count_of(n).unwrap_or(0)
}
