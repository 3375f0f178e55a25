//! GP044: capacity, prices and interruptions of node classes and ranges.
use super::prelude::*;
use crate::spec::CapacityDecl;

pub(crate) static RULE: Rule = Rule {
    code: "GP044",
    name: "capacity-terms",
    severity: Severity::Error,
    summary: "spot capacity without an interruption rate, an interruption rate on capacity that is not spot, or a price that is not positive",
    docs: r#"
**What.** A node class or range with `capacity="spot"` (its own or its class's) that no
`interruptions` rate reaches; `interruptions` on on-demand or reserved nodes; a
`price-per-hour` that is zero or negative. A warning when a spot price is not below the
GPU model's list price (spot saves nothing there).

**Why.** What spot costs (work lost to interruptions) cannot be told without the rate, and
the plan's figures would silently assume none; a rate on capacity the provider does not
take back is a mistake; prices feed costs and savings.

**Example.**
```text
node-class "dgx-spot" capacity="spot" price-per-hour=1.10 { gpus 8 model="h100-sxm5-80gb"; }
```

**Fix.** Give spot capacity the provider's observed rate, e.g. `interruptions="3/day"`;
remove the rate from other capacity; give a positive price.
"#,
    check: Some(check),
};

/// The terms written on a class (`base` none) or a range (with its class's as `base`):
/// a missing rate is reported per range, where the capacity ends up spot.
fn check_terms(own: &CapacityDecl, base: Option<&CapacityDecl>, at: Span, out: &mut Diagnostics) {
    let range = base.is_some();
    let capacity = own
        .capacity
        .as_ref()
        .or_else(|| base.and_then(|b| b.capacity.as_ref()))
        .map(|c| c.value.as_str())
        .unwrap_or("on-demand");
    let rate = own
        .interruptions
        .as_ref()
        .or_else(|| base.and_then(|b| b.interruptions.as_ref()));
    if range && capacity == "spot" && rate.is_none() {
        let span = own.capacity.as_ref().map(|c| c.span).unwrap_or(at);
        out.push(
            Diagnostic::error(RULE.code, "spot capacity without an interruption rate")
                .at(span, "spot, but how often is it taken back?")
                .with_help(
                    "add the provider's observed rate, e.g. interruptions=\"3/day\" (the plan prices lost work with it)",
                ),
        );
    }
    if capacity != "spot" {
        if let Some(r) = &own.interruptions {
            out.push(
                Diagnostic::error(
                    RULE.code,
                    format!("an interruption rate on {capacity} capacity"),
                )
                .at(r.span, "only spot capacity is interrupted")
                .with_help("remove `interruptions`, or declare capacity=\"spot\""),
            );
        }
    }
}

fn check(cx: &Ctx, out: &mut Diagnostics) {
    for c in &cx.spec.classes {
        check_terms(&c.capacity, None, c.span, out);
        check_price(&c.capacity, out);
    }
    for g in &cx.spec.node_groups {
        let class = g
            .class
            .as_ref()
            .and_then(|k| cx.spec.classes.iter().find(|c| c.name.value == k.value));
        let own = &g.capacity;
        let none = CapacityDecl::default();
        check_terms(
            own,
            Some(class.map(|c| &c.capacity).unwrap_or(&none)),
            g.names.span,
            out,
        );
        check_price(own, out);
    }
    spot_saves_nothing(cx, out);
}

fn check_price(d: &CapacityDecl, out: &mut Diagnostics) {
    if let Some(p) = d
        .price_per_hour
        .as_ref()
        .filter(|p| p.value <= 0.0 || !p.value.is_finite())
    {
        out.push(
            Diagnostic::error(
                RULE.code,
                format!("price-per-hour {} is not positive", p.value),
            )
            .at(p.span, "not a price")
            .with_help("give the price of one GPU-hour on these nodes, e.g. price-per-hour=1.10"),
        );
    }
}

/// A warning per node range on spot whose price is not below its GPU model's list price.
fn spot_saves_nothing(cx: &Ctx, out: &mut Diagnostics) {
    let m = cx.model;
    let mut seen = std::collections::BTreeSet::new();
    for n in &m.nodes {
        if n.capacity != crate::model::Capacity::Spot || !seen.insert(n.span) {
            continue;
        }
        let Some(model) = n.gpus.iter().find_map(|g| g.model.as_deref()) else {
            continue;
        };
        if let (Some(own), Some(list)) = (n.price_per_hour, m.list_price(model)) {
            if own >= list {
                out.push(
                    Diagnostic::warning(
                        RULE.code,
                        format!(
                            "spot nodes cost {own:.2} per GPU-hour, not less than `{model}`'s list price {list:.2}: spot saves nothing here"
                        ),
                    )
                    .at(n.span, "spot at the on-demand price")
                    .with_help("check the spot price (it is usually 60-90% below on-demand), or declare the nodes on-demand"),
                );
            }
        }
    }
}
