//! Independent work on the machine's cores: the pricing of a round's groups.
//!
//! Results come back in the order of the inputs, whatever thread computed them, so
//! what the solver does next does not depend on scheduling.

/// Threads at most (pricing a round is a few dozen groups).
const MAX_THREADS: usize = 8;

/// `f` of every item, on up to as many threads as the machine has cores; in order.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let f = &f;
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    items
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(k, x)| (k, f(x)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a pricing thread panicked"))
            .collect()
    });
    let mut out: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for part in parts.drain(..) {
        for (k, r) in part {
            out[k] = Some(r);
        }
    }
    out.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_order_of_the_inputs() {
        let xs: Vec<u64> = (0..100).collect();
        assert_eq!(
            super::map(&xs, |x| x * x),
            xs.iter().map(|x| x * x).collect::<Vec<_>>()
        );
    }
}
