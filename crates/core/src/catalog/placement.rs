//! Does a multiset of MIG profiles fit one GPU? Decided by the hardware's placement
//! rules: every GPU instance needs a start slot from its profile's list such that the
//! memory-slice ranges `[start, start + size)` are disjoint, compute slices add up to at
//! most the GPU's, per-profile maximum counts hold and at most one `+me` profile is used
//! (`../shared/reference/mig.md` §7).
//!
//! This module owns the fit decision ([`fits`], [`fits_profiles`]), its explanation in
//! slot terms ([`FitError`]), and the enumeration of every layout a model supports
//! ([`enumerate_layouts`], [`is_maximal`]). Nothing here panics on any input: start slots
//! outside the GPU are treated as unusable.

use super::{MigProfile, MigSpec};
use std::cmp::Ordering;
use std::fmt;

/// A concrete placement: each instance with its start slot, largest first (the order in
/// which `nvidia-smi mig -cgi` must create them).
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub instances: Vec<(&'static MigProfile, u8)>,
}

/// Why a multiset of profiles does not fit.
#[derive(Clone, Debug, PartialEq)]
pub enum FitError {
    UnknownProfile {
        name: String,
    },
    TooManyOfProfile {
        profile: &'static str,
        count: usize,
        max: u8,
    },
    TooManyInstances {
        count: usize,
        max: u8,
    },
    ComputeExceeded {
        needed: u32,
        available: u8,
    },
    TooManyMediaExtensions {
        count: usize,
    },
    /// More media engine sets or optical-flow units than the GPU has (models that count
    /// them: a `+me.all` instance takes every one).
    MediaEnginesExceeded {
        decoders: u32,
        ofa: u32,
        available: (u8, u8),
    },
    /// Counts add up (or only memory is over) but no assignment of start slots works;
    /// the explanation names the profile left without a start and the slots' holders.
    NoPlacement {
        explanation: String,
    },
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FitError::UnknownProfile { name } => {
                write!(f, "`{name}` is not a MIG profile of this GPU model")
            }
            FitError::TooManyOfProfile {
                profile,
                count,
                max,
            } => write!(
                f,
                "{count} x `{profile}` requested, but at most {max} fit on one GPU"
            ),
            FitError::TooManyInstances { count, max } => write!(
                f,
                "{count} GPU instances requested, but a GPU holds at most {max}"
            ),
            FitError::ComputeExceeded { needed, available } => write!(
                f,
                "the profiles need {needed} compute slices, the GPU has {available}"
            ),
            FitError::TooManyMediaExtensions { count } => write!(
                f,
                "{count} `+me` profiles requested, but only one GPU instance may own the media engines"
            ),
            FitError::MediaEnginesExceeded {
                decoders,
                ofa,
                available,
            } => write!(
                f,
                "the profiles take {decoders} media engine sets (NVDEC/NVENC/JPEG) and {ofa} \
                 optical-flow units, the GPU has {} and {}: beside a `+me.all` instance only \
                 `-me` profiles fit",
                available.0, available.1
            ),
            FitError::NoPlacement { explanation } => f.write_str(explanation),
        }
    }
}

impl std::error::Error for FitError {}

/// Decides whether `profiles` (names, repeated for counts) fit one GPU of `spec`.
pub fn fits(spec: &MigSpec, profiles: &[&str]) -> Result<Placement, FitError> {
    let mut list: Vec<&'static MigProfile> = Vec::with_capacity(profiles.len());
    for name in profiles {
        match spec.profile(name) {
            Some(p) => list.push(p),
            None => {
                return Err(FitError::UnknownProfile {
                    name: (*name).to_string(),
                });
            }
        }
    }
    fits_profiles(spec, &list)
}

/// Like [`fits`], on resolved profiles.
pub fn fits_profiles(spec: &MigSpec, list: &[&'static MigProfile]) -> Result<Placement, FitError> {
    check_counts(spec, list)?;
    let sorted = largest_first(list);
    match search(spec, &sorted) {
        Some(instances) => Ok(Placement { instances }),
        None => Err(FitError::NoPlacement {
            explanation: explain(spec, &sorted),
        }),
    }
}

/// Every non-empty multiset of `spec`'s profiles that fits one GPU. Each layout is in
/// canonical order ([`canonical_order`]: descending size, ties by name); layouts are
/// ordered lexicographically by that order, so the output is deterministic.
pub fn enumerate_layouts(spec: &MigSpec) -> Vec<Vec<&'static MigProfile>> {
    let mut order: Vec<&'static MigProfile> = spec.profiles.iter().collect();
    order.sort_by(|a, b| canonical_order(a, b));
    let mut out = Vec::new();
    grow(spec, &order, 0, &mut Vec::new(), &mut out);
    out.sort_by(|a, b| compare_layouts(a, b));
    out
}

/// Whether `layout` fits and no further profile of `spec` fits alongside it.
pub fn is_maximal(spec: &MigSpec, layout: &[&'static MigProfile]) -> bool {
    if !fits_quietly(spec, layout) {
        return false;
    }
    let mut extended: Vec<&'static MigProfile> = layout.to_vec();
    spec.profiles.iter().all(|p| {
        extended.push(p);
        let more = fits_quietly(spec, &extended);
        extended.pop();
        !more
    })
}

/// Canonical profile order: more memory slices first, then more compute slices, then
/// fewer start choices, then by name. Also the creation order for `nvidia-smi mig -cgi`.
pub(crate) fn canonical_order(a: &MigProfile, b: &MigProfile) -> Ordering {
    b.memory_slices
        .cmp(&a.memory_slices)
        .then(b.compute_slices.cmp(&a.compute_slices))
        .then(a.starts.len().cmp(&b.starts.len()))
        .then(a.name.cmp(b.name))
}

/// Sorts `layout` into canonical order.
pub fn sort_canonical(layout: &mut [&'static MigProfile]) {
    layout.sort_by(|a, b| canonical_order(a, b));
}

fn compare_layouts(a: &[&'static MigProfile], b: &[&'static MigProfile]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = canonical_order(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Depth-first over `order`, taking 0..=max_count of each profile; prunes as soon as
/// a sum bound is exceeded (taking more of the same profile cannot help).
fn grow(
    spec: &MigSpec,
    order: &[&'static MigProfile],
    i: usize,
    current: &mut Vec<&'static MigProfile>,
    out: &mut Vec<Vec<&'static MigProfile>>,
) {
    let Some(&p) = order.get(i) else {
        if !current.is_empty() && fits_quietly(spec, current) {
            out.push(current.clone());
        }
        return;
    };
    let base = current.len();
    grow(spec, order, i + 1, current, out);
    for _ in 0..p.max_count {
        current.push(p);
        if !within_sums(spec, current) {
            break;
        }
        grow(spec, order, i + 1, current, out);
    }
    current.truncate(base);
}

fn within_sums(spec: &MigSpec, list: &[&'static MigProfile]) -> bool {
    let compute: u32 = list.iter().map(|p| p.compute_slices as u32).sum();
    let memory: u32 = list.iter().map(|p| p.memory_slices as u32).sum();
    let me = list.iter().filter(|p| p.media_extensions).count();
    list.len() <= spec.max_instances as usize
        && compute <= spec.compute_slices as u32
        && memory <= spec.memory_slices as u32
        && me <= 1
        && engines_fit(spec, list).is_ok()
}

/// The media engine rule of models that count engines ([`MigSpec::engines`]).
fn engines_fit(spec: &MigSpec, list: &[&'static MigProfile]) -> Result<(), FitError> {
    let Some(available) = spec.engines else {
        return Ok(());
    };
    let decoders: u32 = list.iter().map(|p| p.decoders as u32).sum();
    let ofa: u32 = list.iter().map(|p| p.ofa as u32).sum();
    if decoders > available.0 as u32 || ofa > available.1 as u32 {
        return Err(FitError::MediaEnginesExceeded {
            decoders,
            ofa,
            available,
        });
    }
    Ok(())
}

fn fits_quietly(spec: &MigSpec, list: &[&'static MigProfile]) -> bool {
    check_counts(spec, list).is_ok() && search(spec, &largest_first(list)).is_some()
}

/// The count rules: instances, per-profile maxima, `+me`, compute slices.
fn check_counts(spec: &MigSpec, list: &[&'static MigProfile]) -> Result<(), FitError> {
    if list.len() > spec.max_instances as usize {
        return Err(FitError::TooManyInstances {
            count: list.len(),
            max: spec.max_instances,
        });
    }
    for p in spec.profiles {
        let count = list.iter().filter(|q| q.name == p.name).count();
        if count > p.max_count as usize {
            return Err(FitError::TooManyOfProfile {
                profile: p.name,
                count,
                max: p.max_count,
            });
        }
    }
    let me = list.iter().filter(|p| p.media_extensions).count();
    if me > 1 {
        return Err(FitError::TooManyMediaExtensions { count: me });
    }
    engines_fit(spec, list)?;
    let compute: u32 = list.iter().map(|p| p.compute_slices as u32).sum();
    if compute > spec.compute_slices as u32 {
        return Err(FitError::ComputeExceeded {
            needed: compute,
            available: spec.compute_slices,
        });
    }
    Ok(())
}

/// Largest first: the fewest start choices first, and the creation order to emit.
fn largest_first(list: &[&'static MigProfile]) -> Vec<&'static MigProfile> {
    let mut sorted = list.to_vec();
    sort_canonical(&mut sorted);
    sorted
}

/// Bit mask of memory slices `[start, start + size)`, or `None` when the range is empty
/// or leaves the GPU.
fn mask(spec: &MigSpec, start: u8, size: u8) -> Option<u64> {
    let end = start as u32 + size as u32;
    if size == 0 || end > spec.memory_slices as u32 || end > 64 {
        return None;
    }
    let ones = if size as u32 == 64 {
        u64::MAX
    } else {
        (1u64 << size) - 1
    };
    Some(ones << start)
}

/// Start slots `p` may take after `prev` (identical profiles take increasing starts,
/// which prunes symmetric branches), with their masks.
fn candidates<'a>(
    spec: &'a MigSpec,
    p: &'static MigProfile,
    prev: Option<&(&'static MigProfile, u8)>,
) -> impl Iterator<Item = (u8, u64)> + 'a {
    let min_start = match prev {
        Some((q, s)) if *q == p => s.saturating_add(1),
        _ => 0,
    };
    p.starts
        .iter()
        .filter(move |&&s| s >= min_start)
        .filter_map(move |&s| mask(spec, s, p.memory_slices).map(|m| (s, m)))
}

/// A full placement of `sorted`, if one exists (first found, starts tried in order).
fn search(
    spec: &MigSpec,
    sorted: &[&'static MigProfile],
) -> Option<Vec<(&'static MigProfile, u8)>> {
    let mut chosen = Vec::with_capacity(sorted.len());
    let mut best = Vec::new();
    deepest(spec, sorted, 0, &mut chosen, &mut best);
    (best.len() == sorted.len()).then_some(best)
}

/// Backtracking that records the deepest partial placement in `best`; stops once a full
/// placement is found.
fn deepest(
    spec: &MigSpec,
    sorted: &[&'static MigProfile],
    used: u64,
    chosen: &mut Vec<(&'static MigProfile, u8)>,
    best: &mut Vec<(&'static MigProfile, u8)>,
) {
    if chosen.len() > best.len() {
        best.clone_from(chosen);
    }
    let Some(&p) = sorted.get(chosen.len()) else {
        return;
    };
    let starts: Vec<(u8, u64)> = candidates(spec, p, chosen.last()).collect();
    for (s, m) in starts {
        if used & m != 0 {
            continue;
        }
        chosen.push((p, s));
        deepest(spec, sorted, used | m, chosen, best);
        chosen.pop();
        if best.len() == sorted.len() {
            return;
        }
    }
}

/// Explains a failed placement in slot terms, from the deepest partial placement: the
/// next profile finds every allowed start taken, and the explanation says by whom.
fn explain(spec: &MigSpec, sorted: &[&'static MigProfile]) -> String {
    let mut placed = Vec::new();
    deepest(spec, sorted, 0, &mut Vec::new(), &mut placed);
    let memory: u32 = sorted.iter().map(|p| p.memory_slices as u32).sum();
    let prefix = if memory > spec.memory_slices as u32 {
        format!(
            "{memory} memory slices requested, the GPU has {}; ",
            spec.memory_slices
        )
    } else {
        String::new()
    };
    let Some(&blocked) = sorted.get(placed.len()) else {
        return format!(
            "{prefix}no assignment of start slots keeps the memory-slice ranges disjoint"
        );
    };
    format!("{prefix}{}", blocked_by(spec, blocked, &placed))
}

/// "`p` (size, starts) has no free start: slots a-b taken by q@s, ..." for the instances
/// in `placed` that overlap one of `p`'s candidate ranges.
fn blocked_by(spec: &MigSpec, p: &MigProfile, placed: &[(&'static MigProfile, u8)]) -> String {
    let reach: u64 = p
        .starts
        .iter()
        .filter_map(|&s| mask(spec, s, p.memory_slices))
        .fold(0, |acc, m| acc | m);
    let holders: Vec<String> = placed
        .iter()
        .filter(|(q, s)| mask(spec, *s, q.memory_slices).is_some_and(|m| m & reach != 0))
        .map(|(q, s)| {
            let slots = slot_range(*s, q.memory_slices);
            format!("{slots} taken by {}@{s}", q.name)
        })
        .collect();
    let head = format!(
        "`{}` ({} memory slice{}, start {}) has no free start",
        p.name,
        p.memory_slices,
        if p.memory_slices == 1 { "" } else { "s" },
        format_starts(p.starts)
    );
    if holders.is_empty() {
        format!(
            "{head}: no start fits inside the GPU's {} memory slices",
            spec.memory_slices
        )
    } else {
        format!("{head}: {}", holders.join(", "))
    }
}

fn slot_range(start: u8, size: u8) -> String {
    let end = start as u32 + (size as u32).max(1) - 1;
    if end == start as u32 {
        format!("slot {start}")
    } else {
        format!("slots {start}-{end}")
    }
}

/// `0, 2, 4, 6` or `0-6`: runs of three or more consecutive starts are compressed.
fn format_starts(starts: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < starts.len() {
        let mut j = i;
        while j + 1 < starts.len() && starts[j + 1] as u32 == starts[j] as u32 + 1 {
            j += 1;
        }
        if j - i >= 2 {
            parts.push(format!("{}-{}", starts[i], starts[j]));
        } else {
            parts.extend(starts[i..=j].iter().map(|s| s.to_string()));
        }
        i = j + 1;
    }
    if parts.len() <= 1 {
        parts.concat()
    } else {
        let last = parts.pop().unwrap_or_default();
        format!("{} or {last}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::lookup;

    fn mig(model: &str) -> &'static MigSpec {
        lookup(model).and_then(|g| g.mig).expect("MIG model")
    }

    fn names(p: &Placement) -> Vec<(&str, u8)> {
        p.instances.iter().map(|(q, s)| (q.name, *s)).collect()
    }

    #[test]
    fn four_plus_three_places_4g_at_0_and_3g_at_4() {
        let p = fits(mig("h100"), &["3g.40gb", "4g.40gb"]).expect("fits");
        assert_eq!(names(&p), [("4g.40gb", 0), ("3g.40gb", 4)]);
    }

    #[test]
    fn two_4g_exceed_the_profile_maximum() {
        let e = fits(mig("h100"), &["4g.40gb", "4g.40gb"]).unwrap_err();
        assert!(
            matches!(e, FitError::TooManyOfProfile { max: 1, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn two_3g_and_a_1g_name_the_conflicting_slots() {
        let e = fits(mig("h100"), &["3g.40gb", "3g.40gb", "1g.10gb"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "9 memory slices requested, the GPU has 8; `1g.10gb` (1 memory slice, start 0-6) \
             has no free start: slots 0-3 taken by 3g.40gb@0, slots 4-7 taken by 3g.40gb@4"
        );
    }

    const fn toy(name: &'static str, memory_slices: u8, starts: &'static [u8]) -> MigProfile {
        MigProfile {
            name,
            id: 0,
            compute_slices: 1,
            memory_slices,
            max_count: 4,
            starts,
            memory_gib: 1.0,
            memory_observed: false,
            media_extensions: false,
            decoders: 0,
            ofa: 0,
        }
    }

    #[test]
    fn slot_conflict_within_the_memory_budget_is_explained() {
        // On the catalog's tables every conflict also overflows memory; a toy geometry
        // where slot 3 is reachable by nobody shows the pure slot explanation.
        static TOY: MigSpec = MigSpec {
            memory_slices: 4,
            compute_slices: 4,
            max_instances: 4,
            min_driver: "R0",
            engines: None,
            driver_names: &[],
            profiles: &[toy("2g", 2, &[0]), toy("1g", 1, &[0, 1, 2])],
        };
        let e = fits(&TOY, &["1g", "2g", "1g"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`1g` (1 memory slice, start 0-2) has no free start: slots 0-1 taken by 2g@0, \
             slot 2 taken by 1g@2"
        );
        assert!(fits(&TOY, &["1g", "2g"]).is_ok());
    }

    #[test]
    fn a30_compute_is_checked_before_slots() {
        let e = fits(mig("a30"), &["2g.12gb", "1g.6gb", "1g.6gb", "1g.6gb"]).unwrap_err();
        assert!(
            matches!(e, FitError::ComputeExceeded { needed: 5, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn a30_2g_with_two_1g_fits() {
        let p = fits(mig("a30"), &["1g.6gb", "2g.12gb", "1g.6gb"]).expect("fits");
        assert_eq!(names(&p), [("2g.12gb", 0), ("1g.6gb", 2), ("1g.6gb", 3)]);
    }

    #[test]
    fn unknown_profile_and_empty_list() {
        let e = fits(mig("h100"), &["5g.50gb"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`5g.50gb` is not a MIG profile of this GPU model"
        );
        assert_eq!(fits(mig("h100"), &[]).expect("empty fits").instances, []);
    }

    #[test]
    fn starts_outside_the_gpu_are_unusable_not_a_panic() {
        static BAD: MigSpec = MigSpec {
            memory_slices: 2,
            compute_slices: 2,
            max_instances: 2,
            min_driver: "R0",
            engines: None,
            driver_names: &[],
            profiles: &[MigProfile {
                name: "1g.wide",
                id: 1,
                compute_slices: 1,
                memory_slices: 200,
                max_count: 2,
                starts: &[0, 250],
                memory_gib: 1.0,
                memory_observed: false,
                media_extensions: false,
                decoders: 0,
                ofa: 0,
            }],
        };
        let e = fits(&BAD, &["1g.wide"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "200 memory slices requested, the GPU has 2; `1g.wide` (200 memory slices, start \
             0 or 250) has no free start: no start fits inside the GPU's 2 memory slices"
        );
        assert!(enumerate_layouts(&BAD).is_empty());
    }

    #[test]
    fn format_starts_compresses_runs() {
        assert_eq!(format_starts(&[0, 1, 2, 3, 4, 5, 6]), "0-6");
        assert_eq!(format_starts(&[0, 2, 4, 6]), "0, 2, 4 or 6");
        assert_eq!(format_starts(&[0, 1]), "0 or 1");
        assert_eq!(format_starts(&[0]), "0");
        assert_eq!(format_starts(&[]), "");
    }

    #[test]
    fn enumeration_is_canonical_and_maximality_holds() {
        let spec = mig("h100");
        let layouts = enumerate_layouts(spec);
        assert_eq!(layouts.len(), 127);
        for l in &layouts {
            let mut sorted = l.clone();
            sort_canonical(&mut sorted);
            assert_eq!(&sorted, l);
        }
        assert_eq!(
            layouts[0].iter().map(|p| p.name).collect::<Vec<_>>(),
            ["7g.80gb"]
        );
        assert!(is_maximal(spec, &layouts[0]));
        assert!(!is_maximal(spec, &[]));
    }
}
