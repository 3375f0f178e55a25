//! Units to objects: a b-matching (each unit to at most one object, each object up to
//! its capacity) found by augmenting paths, as a max-flow source -> unit -> object ->
//! sink would. For a unit no object can carry, the reason of the candidate that came
//! closest (the highest score) is kept.

use super::Invariant;

/// Why an object cannot carry a unit. `score` says how far the check got (higher is
/// closer), so that the best candidate's reason is reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reason {
    pub invariant: Invariant,
    pub score: u8,
    pub text: String,
}

impl Reason {
    pub(crate) fn new(invariant: Invariant, score: u8, text: String) -> Reason {
        Reason {
            invariant,
            score,
            text,
        }
    }
}

/// The matching: per unit, its object; for units without one, the closest
/// candidate's reason (`None` when there is no candidate at all, or when candidates
/// could carry it but their capacity is spent).
pub(crate) struct Outcome {
    pub assigned: Vec<Option<usize>>,
    pub reasons: Vec<Option<(usize, Reason)>>,
}

impl Outcome {
    /// The units left unmatched, grouped by their closest object (`None`: candidates
    /// whose capacity is spent, or none) and the kind of reason, in order.
    pub(crate) fn unmatched(&self) -> Vec<(Option<usize>, Invariant, Vec<usize>)> {
        let mut groups: std::collections::BTreeMap<(Option<usize>, Invariant, u8), Vec<usize>> =
            Default::default();
        for (u, _) in self
            .assigned
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_none())
        {
            let key = match &self.reasons[u] {
                Some((k, r)) => (Some(*k), r.invariant, r.score),
                None => (None, Invariant::Carried, u8::MAX),
            };
            groups.entry(key).or_default().push(u);
        }
        groups.into_iter().map(|((k, i, _), v)| (k, i, v)).collect()
    }

    /// The reason text of a unit's closest candidate.
    pub(crate) fn reason(&self, u: usize) -> Option<&str> {
        self.reasons[u].as_ref().map(|(_, r)| r.text.as_str())
    }
}

/// Matches `units` units to objects of the given capacities; `can(unit, object)`.
pub(crate) fn assign(
    units: usize,
    caps: &[u32],
    can: &mut dyn FnMut(usize, usize) -> Result<(), Reason>,
) -> Outcome {
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); units];
    let mut reasons: Vec<Option<(usize, Reason)>> = vec![None; units];
    for (u, e) in edges.iter_mut().enumerate() {
        for (o, _) in caps.iter().enumerate().filter(|(_, c)| **c > 0) {
            match can(u, o) {
                Ok(()) => e.push(o),
                Err(r) => {
                    if reasons[u].as_ref().is_none_or(|(_, b)| r.score > b.score) {
                        reasons[u] = Some((o, r));
                    }
                }
            }
        }
    }
    let mut m = Matcher {
        edges: &edges,
        caps,
        assigned: vec![None; units],
        holders: vec![Vec::new(); caps.len()],
    };
    // Greedy first, then augmenting paths for what is left.
    for (u, e) in edges.iter().enumerate() {
        if let Some(&o) = e.iter().find(|&&o| m.holders[o].len() < caps[o] as usize) {
            m.give(u, o);
        }
    }
    for (u, e) in edges.iter().enumerate() {
        if m.assigned[u].is_none() && !e.is_empty() {
            let mut seen = vec![false; caps.len()];
            m.augment(u, &mut seen);
        }
    }
    for (u, r) in reasons.iter_mut().enumerate() {
        if m.assigned[u].is_some() || !edges[u].is_empty() {
            *r = None;
        }
    }
    Outcome {
        assigned: m.assigned,
        reasons,
    }
}

struct Matcher<'a> {
    edges: &'a [Vec<usize>],
    caps: &'a [u32],
    assigned: Vec<Option<usize>>,
    holders: Vec<Vec<usize>>,
}

impl Matcher<'_> {
    fn give(&mut self, u: usize, o: usize) {
        self.assigned[u] = Some(o);
        self.holders[o].push(u);
    }

    /// Finds room for `u`, moving units along a path of objects not yet visited.
    fn augment(&mut self, u: usize, seen: &mut [bool]) -> bool {
        for i in 0..self.edges[u].len() {
            let o = self.edges[u][i];
            if seen[o] {
                continue;
            }
            seen[o] = true;
            if self.holders[o].len() < self.caps[o] as usize {
                self.give(u, o);
                return true;
            }
            for k in 0..self.holders[o].len() {
                let v = self.holders[o][k];
                if self.augment(v, seen) {
                    // `v` moved elsewhere: its place in `o` goes to `u`.
                    self.holders[o].swap_remove(k);
                    self.give(u, o);
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn augmenting_paths_find_the_maximum() {
        // Unit 0 can use objects 0 or 1, unit 1 only object 0; both capacity 1.
        let ok = [[true, true], [true, false]];
        let mut can = |u: usize, o: usize| {
            if ok[u][o] {
                Ok(())
            } else {
                Err(Reason::new(Invariant::Carried, 1, "no".into()))
            }
        };
        let m = assign(2, &[1, 1], &mut can);
        assert_eq!(m.assigned, vec![Some(1), Some(0)]);
        // Capacity spent: no reason, no object.
        let m = assign(3, &[1, 1], &mut |_, _| Ok(()));
        assert_eq!(m.assigned.iter().filter(|a| a.is_some()).count(), 2);
        assert!(m.reasons.iter().all(Option::is_none));
        // The best candidate's reason is kept.
        let mut scored =
            |_: usize, o: usize| Err(Reason::new(Invariant::Carried, o as u8, format!("{o}")));
        let m = assign(1, &[1, 1, 0], &mut scored);
        assert_eq!(m.reasons[0].as_ref().unwrap().1.text, "1");
    }
}
