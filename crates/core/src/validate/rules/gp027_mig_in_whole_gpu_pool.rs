//! GP027: a fixed MIG layout on a node pinned to whole GPUs or time-slicing.
use super::prelude::*;

pub(crate) static RULE: Rule = Rule {
    code: "GP027",
    name: "mig-in-whole-gpu-pool",
    severity: Severity::Error,
    summary: "a fixed MIG layout on a node of a whole-gpu or time-slice pool (MIG and whole GPUs mixed on one node)",
    docs: r#"
**What.** A fixed `mig layout` (not `current=#true`) covers GPUs of a node that a `pool`
pins to `mode="whole-gpu"` or `mode="time-slice"`.

gpuplan plans one mode per node (whole-GPU, MIG, time-slice or MPS): every GPU of a
node serves the same kind of work, and the node gets one mig-parted config and one
device-plugin config. MIG and whole GPUs *mixed on one node* therefore means a node that
both a pool and a layout claim, and it is an error whatever GPUs the layout names. A
layout on only some GPUs of a node that no pool pins is the other way to mix; it is
`GP028`. Training pools are `GP026`, MPS pools `GP030`.

**Why.** The pool says the node's GPUs are whole (or time-sliced), the layout says some
are partitioned: the device plugin would advertise `nvidia.com/gpu` and
`nvidia.com/mig-*` on one node under one config, and which of the two wins is a guess.

**Example.**
```text
pool "serving" mode="whole-gpu" nodes="n-[01-02]"
mig {
    layout "3g.40gb" "3g.40gb" nodes="n-01" gpus="0-3"
}
```

**Fix.** Move the node to a `mode="mig"` pool (its other GPUs then get MIG layouts
chosen by the planner, or give each GPU a layout), or drop it from the layout. To record
the layout a node has today, write `current=#true`: it is then reconfigured, not kept.
"#,
    check: Some(check),
};

fn check(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    for (pool, span, nodes) in
        super::gp026_training_on_mig::layouts_in_pools(m, &["whole-gpu", "time-slice"])
    {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!(
                    "MIG layout on {} of pool `{}`, whose GPUs are {}",
                    crate::units::compress_names(&nodes).join(", "),
                    pool.name,
                    pool.mode
                ),
            )
            .at(span, "MIG on these nodes")
            .with_related(pool.span, format!("pool mode=\"{}\"", pool.mode))
            .with_help("a node is either MIG or not: move it to a mode=\"mig\" pool, drop it from the layout, or mark the layout current=#true if it only records today's state"),
        );
    }
}
