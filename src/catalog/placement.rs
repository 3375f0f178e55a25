//! Does a multiset of MIG profiles fit one GPU? Decided by the hardware's placement
//! rules: every GPU instance needs a start slot from its profile's list such that the
//! memory-slice ranges `[start, start + size)` are disjoint, compute slices add up to at
//! most the GPU's, per-profile maximum counts hold and at most one `+me` profile is used
//! (`../shared/reference/mig.md` §7).

use super::{MigProfile, MigSpec};
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
    MemoryExceeded {
        needed: u32,
        available: u8,
    },
    TooManyMediaExtensions {
        count: usize,
    },
    /// Counts add up but no assignment of start slots works.
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
            FitError::MemoryExceeded { needed, available } => write!(
                f,
                "the profiles need {needed} memory slices, the GPU has {available}"
            ),
            FitError::TooManyMediaExtensions { count } => write!(
                f,
                "{count} `+me` profiles requested, but only one GPU instance may own the media engines"
            ),
            FitError::NoPlacement { explanation } => f.write_str(explanation),
        }
    }
}

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
    let compute: u32 = list.iter().map(|p| p.compute_slices as u32).sum();
    if compute > spec.compute_slices as u32 {
        return Err(FitError::ComputeExceeded {
            needed: compute,
            available: spec.compute_slices,
        });
    }
    let memory: u32 = list.iter().map(|p| p.memory_slices as u32).sum();
    if memory > spec.memory_slices as u32 {
        return Err(FitError::MemoryExceeded {
            needed: memory,
            available: spec.memory_slices,
        });
    }
    // Largest first: the fewest start choices first, and the creation order to emit.
    let mut sorted: Vec<&'static MigProfile> = list.to_vec();
    sorted.sort_by(|a, b| {
        (
            b.memory_slices,
            b.compute_slices,
            b.starts.len() == 1,
            b.name,
        )
            .cmp(&(
                a.memory_slices,
                a.compute_slices,
                a.starts.len() == 1,
                a.name,
            ))
    });
    let mut chosen: Vec<(&'static MigProfile, u8)> = Vec::with_capacity(sorted.len());
    if place(&sorted, 0, 0u32, &mut chosen) {
        return Ok(Placement { instances: chosen });
    }
    Err(FitError::NoPlacement {
        explanation: explain(spec, &sorted),
    })
}

fn mask(start: u8, size: u8) -> u32 {
    ((1u32 << size) - 1) << start
}

fn place(
    list: &[&'static MigProfile],
    i: usize,
    used: u32,
    chosen: &mut Vec<(&'static MigProfile, u8)>,
) -> bool {
    let Some(p) = list.get(i) else {
        return true;
    };
    // Identical profiles take increasing starts: prunes symmetric branches.
    let min_start = match chosen.last() {
        Some((q, s)) if q.name == p.name => *s + 1,
        _ => 0,
    };
    for &s in p.starts.iter().filter(|&&s| s >= min_start) {
        let m = mask(s, p.memory_slices);
        if used & m == 0 {
            chosen.push((p, s));
            if place(list, i + 1, used | m, chosen) {
                return true;
            }
            chosen.pop();
        }
    }
    false
}

/// Explains a failed placement in slot terms: places the largest instances greedily
/// and names the first one that finds every allowed start taken, and by what.
fn explain(spec: &MigSpec, sorted: &[&'static MigProfile]) -> String {
    let mut owner: Vec<Option<(&str, u8)>> = vec![None; spec.memory_slices as usize];
    for p in sorted {
        let free = p.starts.iter().copied().find(|&s| {
            (s..s + p.memory_slices).all(|k| owner.get(k as usize).is_some_and(|o| o.is_none()))
        });
        match free {
            Some(s) => {
                for k in s..s + p.memory_slices {
                    owner[k as usize] = Some((p.name, s));
                }
            }
            None => {
                let starts: Vec<String> = p
                    .starts
                    .iter()
                    .map(|s| {
                        let end = s + p.memory_slices - 1;
                        let range = if p.memory_slices == 1 {
                            format!("slot {s}")
                        } else {
                            format!("slots {s}-{end}")
                        };
                        let blockers: Vec<String> = (*s..=end)
                            .filter_map(|k| owner.get(k as usize).copied().flatten())
                            .map(|(n, st)| format!("{n}@{st}"))
                            .collect::<std::collections::BTreeSet<_>>()
                            .into_iter()
                            .collect();
                        if blockers.is_empty() {
                            format!("{range} (past the end)")
                        } else {
                            format!("{range} taken by {}", blockers.join(", "))
                        }
                    })
                    .collect();
                return format!(
                    "`{}` needs {} memory slice(s) starting at {}: {}",
                    p.name,
                    p.memory_slices,
                    p.starts
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    starts.join("; ")
                );
            }
        }
    }
    "no assignment of start slots keeps the memory-slice ranges disjoint".to_string()
}
