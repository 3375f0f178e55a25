//! The MIG placement rule, checked exhaustively against an independent oracle.
//!
//! The oracle knows nothing of `gpuplan::catalog`: its tables are re-typed from
//! `../shared/reference/mig.md` §2 (8 memory / 7 compute slices) and §3 (A30), and it
//! decides a multiset by brute force over every start-slot assignment. `fits` and
//! `enumerate_layouts` must agree with it on every multiset with counts up to each
//! profile's maximum (valid and invalid alike), and with the §7 facts.

use gpuplan::catalog::{self, FitError, MigProfile, MigSpec, enumerate_layouts, fits, is_maximal};
use std::collections::{BTreeMap, BTreeSet};

// ----------------------------------------------------------------------------------------
// Oracle tables (mig.md), independent of crates/core/src/catalog/data.rs.

/// One profile row: name, compute slices, memory slices, max count, starts, `+me`.
struct Row {
    name: &'static str,
    compute: u32,
    memory: usize,
    max: usize,
    starts: &'static [usize],
    me: bool,
    /// Media engine sets and optical-flow units taken (RTX PRO 6000 only).
    decoders: u32,
    ofa: u32,
}

struct Geometry {
    memory_slices: usize,
    compute_slices: u32,
    max_instances: usize,
    rows: Vec<Row>,
    /// Engine sets and OFAs the GPU shares out, where they are counted.
    engines: Option<(u32, u32)>,
}

/// §2: one row per shape, named per §4 for the model: [1g, 1g+me, 1g-2mem, 2g, 3g, 4g, 7g].
fn eight_slice(names: [&'static str; 7]) -> Geometry {
    let shapes: [(u32, usize, usize, &'static [usize], bool); 7] = [
        (1, 1, 7, &[0, 1, 2, 3, 4, 5, 6], false),
        (1, 1, 1, &[0, 1, 2, 3, 4, 5, 6], true),
        (1, 2, 4, &[0, 2, 4, 6], false),
        (2, 2, 3, &[0, 2, 4], false),
        (3, 4, 2, &[0, 4], false),
        (4, 4, 1, &[0], false),
        (7, 8, 1, &[0], false),
    ];
    let rows = names
        .iter()
        .zip(shapes)
        .map(|(&name, (compute, memory, max, starts, me))| Row {
            name,
            compute,
            memory,
            max,
            starts,
            me,
            decoders: 0,
            ofa: 0,
        })
        .collect();
    Geometry {
        memory_slices: 8,
        compute_slices: 7,
        max_instances: 7,
        rows,
        engines: None,
    }
}

const A100_80: [&str; 7] = [
    "1g.10gb",
    "1g.10gb+me",
    "1g.20gb",
    "2g.20gb",
    "3g.40gb",
    "4g.40gb",
    "7g.80gb",
];
const H100_80: [&str; 7] = A100_80;
const H200: [&str; 7] = [
    "1g.18gb",
    "1g.18gb+me",
    "1g.35gb",
    "2g.35gb",
    "3g.71gb",
    "4g.71gb",
    "7g.141gb",
];
const H100_94: [&str; 7] = [
    "1g.12gb",
    "1g.12gb+me",
    "1g.24gb",
    "2g.24gb",
    "3g.47gb",
    "4g.47gb",
    "7g.94gb",
];
const B200: [&str; 7] = [
    "1g.23gb",
    "1g.23gb+me",
    "1g.45gb",
    "2g.45gb",
    "3g.90gb",
    "4g.90gb",
    "7g.180gb",
];
const GB200: [&str; 7] = [
    "1g.23gb",
    "1g.23gb+me",
    "1g.47gb",
    "2g.47gb",
    "3g.93gb",
    "4g.93gb",
    "7g.186gb",
];
const A100_40: [&str; 7] = [
    "1g.5gb",
    "1g.5gb+me",
    "1g.10gb",
    "2g.10gb",
    "3g.20gb",
    "4g.20gb",
    "7g.40gb",
];

/// §3.
fn a30() -> Geometry {
    let row = |name, compute, memory, max, starts, me| Row {
        name,
        compute,
        memory,
        max,
        starts,
        me,
        decoders: 0,
        ofa: 0,
    };
    Geometry {
        memory_slices: 4,
        compute_slices: 4,
        max_instances: 4,
        engines: None,
        rows: vec![
            row("1g.6gb", 1, 1, 4, &[0, 1, 2, 3], false),
            row("1g.6gb+me", 1, 1, 1, &[0, 1, 2, 3], true),
            row("2g.12gb", 2, 2, 2, &[0, 2], false),
            row("2g.12gb+me", 2, 2, 1, &[0, 2], true),
            row("4g.24gb", 4, 4, 1, &[0], false),
        ],
    }
}

/// RTX PRO 6000 Blackwell, from a published `nvidia-smi mig -lgip` / `-lgipp` (12
/// placement units; engine columns DEC and OFA): 1g {0,3,6,9}:3, 2g {0,6}:6, 4g {0}:12.
fn rtx_pro_6000() -> Geometry {
    let row = |name, compute, memory, max, starts, me, decoders, ofa| Row {
        name,
        compute,
        memory,
        max,
        starts,
        me,
        decoders,
        ofa,
    };
    let g1: &'static [usize] = &[0, 3, 6, 9];
    let g2: &'static [usize] = &[0, 6];
    Geometry {
        memory_slices: 12,
        compute_slices: 4,
        max_instances: 4,
        engines: Some((4, 1)),
        rows: vec![
            row("1g.24gb", 1, 3, 4, g1, false, 1, 0),
            row("1g.24gb+me", 1, 3, 1, g1, true, 1, 1),
            row("1g.24gb+gfx", 1, 3, 4, g1, false, 1, 0),
            row("1g.24gb+me.all", 1, 3, 1, g1, false, 4, 1),
            row("1g.24gb-me", 1, 3, 4, g1, false, 0, 0),
            row("2g.48gb", 2, 6, 2, g2, false, 2, 0),
            row("2g.48gb+gfx", 2, 6, 2, g2, false, 2, 0),
            row("2g.48gb+me.all", 2, 6, 1, g2, false, 4, 1),
            row("2g.48gb-me", 2, 6, 2, g2, false, 0, 0),
            row("4g.96gb", 4, 12, 1, &[0], false, 4, 1),
            row("4g.96gb+gfx", 4, 12, 1, &[0], false, 4, 1),
        ],
    }
}

const H100_96: [&str; 7] = [
    "1g.12gb",
    "1g.12gb+me",
    "1g.24gb",
    "2g.24gb",
    "3g.48gb",
    "4g.48gb",
    "7g.96gb",
];
const GH200_144: [&str; 7] = [
    "1g.18gb",
    "1g.18gb+me",
    "1g.36gb",
    "2g.36gb",
    "3g.72gb",
    "4g.72gb",
    "7g.144gb",
];
const B300: [&str; 7] = [
    "1g.34gb",
    "1g.34gb+me",
    "1g.67gb",
    "2g.67gb",
    "3g.135gb",
    "4g.135gb",
    "7g.269gb",
];
const GB300: [&str; 7] = [
    "1g.35gb",
    "1g.35gb+me",
    "1g.70gb",
    "2g.70gb",
    "3g.139gb",
    "4g.139gb",
    "7g.278gb",
];

// ----------------------------------------------------------------------------------------
// Oracle.

/// A multiset as counts per row index.
type Counts = Vec<usize>;

fn all_counts(g: &Geometry) -> Vec<Counts> {
    let mut out: Vec<Counts> = vec![Vec::new()];
    for row in &g.rows {
        out = out
            .into_iter()
            .flat_map(|c| {
                (0..=row.max).map(move |n| {
                    let mut c = c.clone();
                    c.push(n);
                    c
                })
            })
            .collect();
    }
    out
}

fn instances(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| std::iter::repeat_n(i, n))
        .collect()
}

/// Brute force: rules (b), (c) and the instance limit, then every start assignment for
/// (a) with a plain occupancy array.
fn oracle_valid(g: &Geometry, counts: &[usize]) -> bool {
    let inst = instances(counts);
    let compute: u32 = inst.iter().map(|&i| g.rows[i].compute).sum();
    let me = inst.iter().filter(|&&i| g.rows[i].me).count();
    let over_max = counts.iter().zip(&g.rows).any(|(&n, r)| n > r.max);
    let decoders: u32 = inst.iter().map(|&i| g.rows[i].decoders).sum();
    let ofa: u32 = inst.iter().map(|&i| g.rows[i].ofa).sum();
    let engines_over = g.engines.is_some_and(|(d, o)| decoders > d || ofa > o);
    if inst.is_empty()
        || inst.len() > g.max_instances
        || compute > g.compute_slices
        || me > 1
        || over_max
        || engines_over
    {
        return false;
    }
    assign(g, &inst, &mut vec![false; g.memory_slices])
}

fn assign(g: &Geometry, inst: &[usize], taken: &mut Vec<bool>) -> bool {
    let Some((&first, rest)) = inst.split_first() else {
        return true;
    };
    let row = &g.rows[first];
    for &s in row.starts {
        let range = s..s + row.memory;
        if range.end > g.memory_slices || range.clone().any(|k| taken[k]) {
            continue;
        }
        range.clone().for_each(|k| taken[k] = true);
        let ok = assign(g, rest, taken);
        range.for_each(|k| taken[k] = false);
        if ok {
            return true;
        }
    }
    false
}

fn oracle_maximal(g: &Geometry, counts: &[usize], rows: &[usize]) -> bool {
    oracle_valid(g, counts)
        && rows.iter().all(|&i| {
            let mut more = counts.to_vec();
            more[i] += 1;
            !oracle_valid(g, &more)
        })
}

fn names_of(g: &Geometry, counts: &[usize]) -> Vec<&'static str> {
    instances(counts)
        .into_iter()
        .map(|i| g.rows[i].name)
        .collect()
}

// ----------------------------------------------------------------------------------------
// Comparison helpers.

fn mig(model: &str) -> &'static MigSpec {
    catalog::lookup(model)
        .and_then(|g| g.mig)
        .unwrap_or_else(|| panic!("{model} has MIG"))
}

/// A multiset of names, order-free.
fn key(names: &[&str]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for n in names {
        *m.entry(n.to_string()).or_insert(0) += 1;
    }
    m
}

/// Checks a returned placement by itself: same multiset, allowed starts, disjoint.
fn check_placement(g: &Geometry, names: &[&str], placed: &[(&'static MigProfile, u8)]) {
    let got: Vec<&str> = placed.iter().map(|(p, _)| p.name).collect();
    assert_eq!(key(&got), key(names), "placement of {names:?}");
    let mut taken = vec![false; g.memory_slices];
    for (p, s) in placed {
        let row = g.rows.iter().find(|r| r.name == p.name).expect("known row");
        let s = *s as usize;
        assert!(row.starts.contains(&s), "{} at {s} in {names:?}", p.name);
        let slots = taken.get_mut(s..s + row.memory).expect("inside the GPU");
        for (k, t) in slots.iter_mut().enumerate() {
            assert!(!*t, "slot {} twice in {names:?}: {placed:?}", s + k);
            *t = true;
        }
    }
}

/// `fits` agrees with the oracle on every multiset; returns the oracle's valid set.
fn agree_on_all(model: &str, g: &Geometry) -> BTreeSet<BTreeMap<String, usize>> {
    let spec = mig(model);
    let mut valid = BTreeSet::new();
    for counts in all_counts(g) {
        let names = names_of(g, &counts);
        if names.is_empty() {
            assert!(fits(spec, &names).is_ok(), "{model}: nothing always fits");
            continue;
        }
        let expect = oracle_valid(g, &counts);
        match fits(spec, &names) {
            Ok(p) => {
                assert!(expect, "{model}: fits accepts {names:?}, oracle rejects");
                check_placement(g, &names, &p.instances);
            }
            Err(e) => assert!(
                !expect,
                "{model}: fits rejects {names:?} ({e}), oracle accepts"
            ),
        }
        if expect {
            valid.insert(key(&names));
        }
    }
    valid
}

fn enumerated(model: &str) -> BTreeSet<BTreeMap<String, usize>> {
    let layouts = enumerate_layouts(mig(model));
    let set: BTreeSet<_> = layouts
        .iter()
        .map(|l| key(&l.iter().map(|p| p.name).collect::<Vec<_>>()))
        .collect();
    assert_eq!(set.len(), layouts.len(), "{model}: duplicate layouts");
    set
}

fn exhaustive(model: &str, g: &Geometry, feasible: usize, maximal: usize) {
    let valid = agree_on_all(model, g);
    assert_eq!(valid.len(), feasible, "{model}: oracle feasible count");
    assert_eq!(enumerated(model), valid, "{model}: enumerate_layouts");
    let rows: Vec<usize> = (0..g.rows.len()).collect();
    let oracle_max = all_counts(g)
        .into_iter()
        .filter(|c| oracle_maximal(g, c, &rows))
        .count();
    assert_eq!(oracle_max, maximal, "{model}: oracle maximal count");
    let spec = mig(model);
    let ours = enumerate_layouts(spec)
        .iter()
        .filter(|l| is_maximal(spec, l))
        .count();
    assert_eq!(ours, maximal, "{model}: is_maximal count");
}

// ----------------------------------------------------------------------------------------
// Exhaustive agreement. Counts are non-empty multisets (the empty layout is excluded).

#[test]
fn h100_80_agrees_with_the_oracle_everywhere() {
    exhaustive("h100-sxm5-80gb", &eight_slice(H100_80), 127, 44);
}

#[test]
fn a100_80_agrees_with_the_oracle_everywhere() {
    exhaustive("a100-sxm4-80gb", &eight_slice(A100_80), 127, 44);
}

#[test]
fn a100_40_agrees_with_the_oracle_everywhere() {
    exhaustive("a100-sxm4-40gb", &eight_slice(A100_40), 127, 44);
}

#[test]
fn h200_agrees_with_the_oracle_everywhere() {
    exhaustive("h200-sxm-141gb", &eight_slice(H200), 127, 44);
}

/// Same §2 shapes, §4 names; the shapes are UNVERIFIED on B200/GB200 (mig.md §2).
#[test]
fn other_eight_slice_models_agree_with_the_oracle_everywhere() {
    exhaustive("h100-nvl-94gb", &eight_slice(H100_94), 127, 44);
    exhaustive("b200-180gb", &eight_slice(B200), 127, 44);
    exhaustive("gb200-186gb", &eight_slice(GB200), 127, 44);
    exhaustive("h20-96gb", &eight_slice(H100_96), 127, 44);
    exhaustive("gh200-96gb", &eight_slice(H100_96), 127, 44);
    exhaustive("h100-sxm5-96gb", &eight_slice(H100_96), 127, 44);
    exhaustive("gh200-144gb", &eight_slice(GH200_144), 127, 44);
    exhaustive("b300-288gb", &eight_slice(B300), 127, 44);
    exhaustive("gb300-288gb", &eight_slice(GB300), 127, 44);
    exhaustive("a800-sxm4-80gb", &eight_slice(A100_80), 127, 44);
    exhaustive("h800-sxm5-80gb", &eight_slice(H100_80), 127, 44);
}

/// 12 placement units, 4 compute slices and shared media engines: `+me.all` takes
/// every engine set, so only `-me` profiles fit beside it.
#[test]
fn rtx_pro_6000_agrees_with_the_oracle_everywhere() {
    exhaustive("rtx-pro-6000-blackwell-96gb", &rtx_pro_6000(), 114, 64);
}

#[test]
fn rtx_pro_6000_engine_rule() {
    let spec = mig("rtx-pro-6000");
    assert!(
        fits(
            spec,
            &["1g.24gb+me.all", "1g.24gb-me", "1g.24gb-me", "1g.24gb-me"]
        )
        .is_ok()
    );
    assert!(fits(spec, &["2g.48gb", "1g.24gb", "1g.24gb"]).is_ok());
    let e = fits(spec, &["1g.24gb+me.all", "1g.24gb"]).unwrap_err();
    assert!(
        matches!(e, FitError::MediaEnginesExceeded { decoders: 5, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("only `-me` profiles fit"), "{e}");
    // Placements in the driver's 12 units, as `nvidia-smi mig -lgi` prints them.
    let p = fits(spec, &["1g.24gb", "2g.48gb", "1g.24gb"]).expect("fits");
    let starts: Vec<(&str, u8)> = p.instances.iter().map(|(q, s)| (q.name, *s)).collect();
    assert_eq!(starts, [("2g.48gb", 0), ("1g.24gb", 6), ("1g.24gb", 9)]);
}

#[test]
fn a30_agrees_with_the_oracle_everywhere() {
    exhaustive("a30-24gb", &a30(), 19, 8);
}

#[test]
fn over_maximum_counts_are_rejected_like_the_oracle() {
    let g = eight_slice(H100_80);
    let spec = mig("h100");
    for (i, row) in g.rows.iter().enumerate() {
        let mut counts = vec![0; g.rows.len()];
        counts[i] = row.max + 1;
        let names = names_of(&g, &counts);
        assert!(!oracle_valid(&g, &counts));
        assert!(fits(spec, &names).is_err(), "{names:?}");
    }
}

// ----------------------------------------------------------------------------------------
// mig.md §7 facts.

/// Profiles 7g/4g/3g/2g/1g-2mem/1g (no `+me`): the row indices of `eight_slice`.
const NO_ME: [usize; 6] = [0, 2, 3, 4, 5, 6];

/// §7 says "77 feasible multisets, 28 maximal ones" ignoring `+me`. Checked: 77 counts
/// non-empty multisets only (78 with the empty one); maximality is among the same six
/// profiles.
#[test]
fn h100_without_me_has_77_feasible_and_28_maximal_multisets() {
    let g = eight_slice(H100_80);
    let no_me: Vec<Counts> = all_counts(&g).into_iter().filter(|c| c[1] == 0).collect();
    let feasible: Vec<&Counts> = no_me.iter().filter(|c| oracle_valid(&g, c)).collect();
    assert_eq!(feasible.len(), 77);
    let maximal = no_me
        .iter()
        .filter(|c| oracle_maximal(&g, c, &NO_ME))
        .count();
    assert_eq!(maximal, 28);

    // The same numbers from gpuplan's enumeration; adding `+me` never extends a layout
    // that a plain 1g cannot, so `is_maximal` over all profiles agrees.
    let spec = mig("h100");
    let ours: Vec<_> = enumerate_layouts(spec)
        .into_iter()
        .filter(|l| l.iter().all(|p| !p.media_extensions))
        .collect();
    assert_eq!(ours.len(), 77);
    assert_eq!(ours.iter().filter(|l| is_maximal(spec, l)).count(), 28);
}

/// Expands §7 shorthand (`4g+1g.2m x2+1g x2`) into H100-80 profile names.
fn expand(short: &str) -> Vec<&'static str> {
    let name = |s: &str| match s {
        "7g" => "7g.80gb",
        "4g" => "4g.40gb",
        "3g" => "3g.40gb",
        "2g" => "2g.20gb",
        "1g.2m" => "1g.20gb",
        "1g" => "1g.10gb",
        other => panic!("unknown shorthand {other}"),
    };
    let mut out = Vec::new();
    for term in short.split('+') {
        let (p, n) = match term.split_once(" x") {
            Some((p, n)) => (p, n.parse::<usize>().expect("count")),
            None => (term, 1),
        };
        out.extend(std::iter::repeat_n(name(p.trim()), n));
    }
    out
}

const MAXIMAL_FULL_COMPUTE: [&str; 17] = [
    "7g",
    "4g+3g",
    "4g+2g+1g",
    "4g+2g+1g.2m",
    "4g+1g+1g+1g",
    "4g+1g.2m+1g+1g",
    "3g+2g+2g",
    "3g+2g+1g+1g",
    "3g+1g+1g+1g+1g",
    "2g+2g+2g+1g",
    "2g+2g+2g+1g.2m",
    "2g+2g+1g+1g+1g",
    "2g+2g+1g.2m+1g+1g",
    "2g+1g x5",
    "2g+1g.2m+1g x4",
    "1g x7",
    "1g.2m+1g x6",
];

const MAXIMAL_IDLE_COMPUTE: [&str; 11] = [
    "3g+3g",
    "3g+2g+1g.2m",
    "3g+1g.2m+1g+1g",
    "3g+1g.2m x2",
    "4g+1g.2m x2",
    "2g+2g+1g.2m x2",
    "2g+1g.2m x2+1g x2",
    "2g+1g.2m x3",
    "1g.2m x2+1g x4",
    "1g.2m x3+1g x2",
    "1g.2m x4",
];

#[test]
fn every_listed_maximal_set_is_valid_and_maximal() {
    let spec = mig("h100");
    let mut seen = BTreeSet::new();
    for (short, idle) in MAXIMAL_FULL_COMPUTE
        .iter()
        .map(|s| (s, false))
        .chain(MAXIMAL_IDLE_COMPUTE.iter().map(|s| (s, true)))
    {
        let names = expand(short);
        let placed = fits(spec, &names).unwrap_or_else(|e| panic!("{short}: {e}"));
        let layout: Vec<&'static MigProfile> = placed.instances.iter().map(|(p, _)| *p).collect();
        assert!(is_maximal(spec, &layout), "{short} is maximal");
        let compute: u32 = layout.iter().map(|p| p.compute_slices as u32).sum();
        let memory: u32 = layout.iter().map(|p| p.memory_slices as u32).sum();
        assert_eq!(compute < 7, idle, "{short}: compute {compute}");
        if idle {
            assert_eq!(memory, 8, "{short}: memory full");
        }
        assert!(seen.insert(key(&names)), "{short} listed twice");
    }
    assert_eq!(seen.len(), 28, "the listed sets are all 28 maximal ones");
}

#[test]
fn named_h100_cases() {
    let spec = mig("h100");
    let ok = |names: &[&str]| fits(spec, names).is_ok();
    assert!(ok(&["4g.40gb", "3g.40gb"]));
    assert!(!ok(&["4g.40gb", "4g.40gb"]));
    assert!(!ok(&["3g.40gb", "3g.40gb", "1g.10gb"]));
    assert!(ok(&["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]));
    assert!(ok(&["1g.20gb"; 4]));
    assert!(!ok(&["1g.20gb"; 5]));
    assert!(ok(&["4g.40gb", "2g.20gb", "1g.10gb"]));
    assert!(ok(&["3g.40gb", "2g.20gb", "2g.20gb"]));
    assert!(ok(&["3g.40gb", "3g.40gb"]));
    assert!(ok(&["7g.80gb"]));
    for other in spec.profiles.iter().map(|p| p.name) {
        assert!(
            !ok(&["7g.80gb", other]),
            "7g is exclusive, not with {other}"
        );
    }
}

#[test]
fn named_placements_follow_the_user_guide() {
    let spec = mig("h100");
    let at = |names: &[&str]| -> Vec<(&'static str, u8)> {
        let p = fits(spec, names).expect("fits");
        p.instances.iter().map(|(p, s)| (p.name, *s)).collect()
    };
    assert_eq!(
        at(&["3g.40gb", "4g.40gb"]),
        [("4g.40gb", 0), ("3g.40gb", 4)]
    );
    // UG example 1: 4g@0, 2g@4, 1g@6.
    assert_eq!(
        at(&["1g.10gb", "2g.20gb", "4g.40gb"]),
        [("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]
    );
}

#[test]
fn rejections_explain_themselves() {
    let spec = mig("h100");
    let e = fits(spec, &["4g.40gb", "4g.40gb"]).unwrap_err();
    assert!(
        matches!(
            e,
            FitError::TooManyOfProfile {
                profile: "4g.40gb",
                count: 2,
                max: 1
            }
        ),
        "{e:?}"
    );
    let e = fits(spec, &["3g.40gb", "3g.40gb", "1g.10gb"]).unwrap_err();
    let FitError::NoPlacement { explanation } = &e else {
        panic!("expected a slot explanation, got {e:?}");
    };
    for part in [
        "9 memory slices requested",
        "`1g.10gb`",
        "slots 0-3 taken by 3g.40gb@0",
        "slots 4-7 taken by 3g.40gb@4",
    ] {
        assert!(explanation.contains(part), "{part:?} in {explanation}");
    }
    let e = fits(spec, &["1g.10gb+me", "1g.10gb+me"]).unwrap_err();
    assert!(matches!(e, FitError::TooManyOfProfile { .. }), "{e:?}");
    let e = fits(spec, &["3g.40gb", "4g.40gb", "1g.10gb"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the profiles need 8 compute slices, the GPU has 7"
    );
}

#[test]
fn a30_named_cases() {
    let spec = mig("a30");
    let ok = |names: &[&str]| fits(spec, names).is_ok();
    assert!(ok(&["2g.12gb", "1g.6gb", "1g.6gb"]));
    assert!(ok(&["2g.12gb", "2g.12gb"]));
    assert!(ok(&["2g.12gb+me", "2g.12gb"]));
    assert!(ok(&["1g.6gb"; 4]));
    assert!(!ok(&["2g.12gb+me", "1g.6gb+me"]));
    assert!(!ok(&["4g.24gb", "1g.6gb"]));
    assert!(!ok(&["2g.12gb", "2g.12gb", "1g.6gb"]));
}

/// §2: every 8-slice model uses the same ID -> shape mapping.
#[test]
fn eight_slice_models_share_the_id_to_shape_mapping() {
    /// id, compute, memory, max, starts, +me: re-typed from §2.
    type Shape = (u32, u8, u8, u8, &'static [u8], bool);
    let table: [Shape; 7] = [
        (19, 1, 1, 7, &[0, 1, 2, 3, 4, 5, 6], false),
        (20, 1, 1, 1, &[0, 1, 2, 3, 4, 5, 6], true),
        (15, 1, 2, 4, &[0, 2, 4, 6], false),
        (14, 2, 2, 3, &[0, 2, 4], false),
        (9, 3, 4, 2, &[0, 4], false),
        (5, 4, 4, 1, &[0], false),
        (0, 7, 8, 1, &[0], false),
    ];
    let mut checked = 0;
    for g in catalog::all() {
        let Some(spec) = g.mig.filter(|m| m.memory_slices == 8) else {
            continue;
        };
        assert_eq!(
            (spec.compute_slices, spec.max_instances),
            (7, 7),
            "{}",
            g.id
        );
        let ids: BTreeSet<u32> = spec.profiles.iter().map(|p| p.id).collect();
        assert_eq!(ids.len(), 7, "{}: the seven §2 profiles", g.id);
        for (id, compute, memory, max, starts, me) in table {
            let p = spec
                .profiles
                .iter()
                .find(|p| p.id == id)
                .unwrap_or_else(|| panic!("{}: profile id {id}", g.id));
            assert_eq!(
                (
                    p.compute_slices,
                    p.memory_slices,
                    p.max_count,
                    p.starts,
                    p.media_extensions
                ),
                (compute, memory, max, starts, me),
                "{} id {id} ({})",
                g.id,
                p.name
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "8-slice models checked: {checked}");
}
