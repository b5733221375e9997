//! Two pieces of one query side by side: one on the calling thread, the other on a
//! helper thread kept alive between queries (a search's arms; a question's search and
//! the reading, and walking, of the names it holds).
//!
//! A thread spawned per search starts late: Linux places it on its parent's core, and
//! while the parent computes it waits there, about a millisecond, however idle the other
//! core is (measured: docs/PERFORMANCE.md, "The search's second thread starts at
//! once"), so the two pieces ran one after the other. A helper that sleeps between
//! searches is woken onto the idle core in tens of microseconds.

use std::sync::OnceLock;

/// Helper threads: enough for two daemon workers' searches at once.
const HELPERS: usize = 2;

/// The helpers, started by the first search; `None` when no thread could be started
/// (a process at its thread limit), and then both pieces run on the calling thread.
fn helpers() -> Option<&'static rayon::ThreadPool> {
    static HELPERS_POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
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

    #[test]
    fn a_panic_in_the_helpers_piece_reaches_the_caller() {
        let outcome = std::panic::catch_unwind(|| beside(|| 1, || -> u32 { panic!("boom") }));
        assert!(outcome.is_err());
        // The helpers survive it.
        assert_eq!(beside(|| 1, || 2), (1, 2));
    }
}
