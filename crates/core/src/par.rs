//! Independent work on the machine's cores, with results in the order of the inputs.
//!
//! Each thread takes the next item not yet taken, so items of uneven cost spread
//! evenly; results come back in input order whatever thread computed them, so what
//! follows does not depend on scheduling. One thread (this one) when the machine has
//! one core or when no other thread starts.

/// Threads at most.
const MAX_THREADS: usize = 8;

/// `f` of every item, on up to as many threads as the machine has cores; in order.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let take = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut done = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, take).ok())
            .collect();
        let mut done = take();
        for h in others {
            done.extend(joined(h));
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// A scoped thread's result; a panic there goes on in this thread.
pub fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_order_of_the_inputs() {
        // Uneven items (the first ones slow): threads take them out of order.
        let xs: Vec<u64> = (0..40).collect();
        let got = super::map(&xs, |x| {
            if *x < 4 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            x * x
        });
        assert_eq!(got, xs.iter().map(|x| x * x).collect::<Vec<_>>());
    }
}
