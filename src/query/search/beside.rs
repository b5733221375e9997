//! Two pieces of one query side by side: one on the calling thread, the other on a
//! helper thread kept alive between queries (a search's arms; a question's search and
//! the reading, and walking, of the names it holds). The same helpers free what a
//! query leaves behind once its answer is made (`drop_beside`).
//!
//! A thread spawned per search starts late: Linux places it on its parent's core, and
//! while the parent computes it waits there, about a millisecond, however idle the other
//! core is (measured: docs/PERFORMANCE.md, "The search's second thread starts at
//! once"), so the two pieces ran one after the other. A helper that sleeps between
//! searches is woken onto the idle core in tens of microseconds.

use std::sync::OnceLock;

/// Helper threads: enough for two daemon workers' searches at once.
const HELPERS: usize = 2;

static HELPERS_POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// The helpers, started by the first search; `None` when no thread could be started
/// (a process at its thread limit), and then both pieces run on the calling thread.
fn helpers() -> Option<&'static rayon::ThreadPool> {
    HELPERS_POOL
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(HELPERS)
                .thread_name(|i| format!("atlas-search-{i}"))
                .build()
                .ok()
        })
        .as_ref()
}

/// Whether `beside` has helpers (else it runs its pieces one after the other).
pub(crate) fn has_helpers() -> bool {
    helpers().is_some()
}

/// Runs `here` on this thread and `there` on a helper at the same time, and returns both
/// results. A panic in either is raised here once both have ended (callers isolate
/// what may panic). Without helpers, `there` runs after `here`: `here` may wait only for
/// work `there` has begun (the vector scan waits for the chunks a helper took).
pub(crate) fn beside<A, B, RA, RB>(here: A, there: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    let Some(pool) = helpers() else {
        let here = here();
        return (here, there());
    };
    let mut theirs = None;
    let ours = pool.in_place_scope(|scope| {
        scope.spawn(|_| theirs = Some(there()));
        here()
    });
    // The scope returns once the spawned piece has ended, and a panic there was raised.
    let theirs = theirs.expect("the helper's piece ended before the scope returned");
    (ours, theirs)
}

/// Drops `value` on a helper when helpers run already, else here. A hub's answer
/// leaves thousands of candidates behind, whose freeing need not delay it (20,929 for
/// the impact of `sympy/core`: 1.7 ms). No helper is started for it.
pub(crate) fn drop_beside<T: Send + 'static>(value: T) {
    match HELPERS_POOL.get().and_then(Option::as_ref) {
        Some(pool) => pool.spawn(move || drop(value)),
        None => drop(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn both_pieces_run_and_the_helper_runs_while_this_thread_works() {
        // `there` starts while `here` still runs: `here` waits (bounded) for its sign.
        let started = AtomicBool::new(false);
        let (seen, value) = beside(
            || {
                let until = Instant::now() + Duration::from_secs(10);
                while !started.load(Ordering::Acquire) && Instant::now() < until {
                    std::hint::spin_loop();
                }
                started.load(Ordering::Acquire)
            },
            || {
                started.store(true, Ordering::Release);
                std::thread::current().name().map(str::to_string)
            },
        );
        assert!(seen, "the helper's piece never ran beside this thread's");
        assert!(value.unwrap_or_default().starts_with("atlas-search-"));
    }

    /// Sends its thread's name when dropped.
    struct Tell(std::sync::mpsc::Sender<Option<String>>);

    impl Drop for Tell {
        fn drop(&mut self) {
            let name = std::thread::current().name().map(str::to_string);
            let _ = self.0.send(name);
        }
    }

    #[test]
    fn a_value_dropped_beside_is_dropped_on_a_helper() {
        let _ = beside(|| (), || ()); // the helpers run
        let (sender, receiver) = std::sync::mpsc::channel();
        drop_beside(Tell(sender));
        let name = receiver.recv_timeout(Duration::from_secs(30));
        assert!(
            name.expect("dropped")
                .unwrap_or_default()
                .starts_with("atlas-search-")
        );
    }

    #[test]
    fn a_panic_in_the_helpers_piece_reaches_the_caller() {
        let outcome = std::panic::catch_unwind(|| beside(|| 1, || -> u32 { panic!("boom") }));
        assert!(outcome.is_err());
        // The helpers survive it.
        assert_eq!(beside(|| 1, || 2), (1, 2));
    }
}
