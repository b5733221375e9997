//! Panic isolation for work that runs inside a dependency on data we did not write in
//! this process (tantivy reading a damaged segment): a panic there becomes a typed
//! failure of that part, its message captured instead of printed. Our own code stays
//! unguarded — a panic in it is a bug, reported as such.

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::sync::Once;

thread_local! {
    static ISOLATED: Cell<bool> = const { Cell::new(false) };
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `work`; a panic inside it is returned as `Err(message)`. The isolated work only
/// reads shared state (an index reader, the graph), and its partial result is discarded,
/// so nothing it leaves behind is observed broken: asserting unwind safety is sound.
pub fn isolate<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let outer = ISOLATED.replace(true);
    let result = std::panic::catch_unwind(AssertUnwindSafe(work));
    ISOLATED.set(outer);
    result.map_err(|_| {
        MESSAGE
            .take()
            .unwrap_or_else(|| "panicked without a message".into())
    })
}

/// Chains a hook that keeps isolated panics quiet and prints every other one as before.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if ISOLATED.get() {
                MESSAGE.set(Some(info.to_string()));
            } else {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::isolate;

    #[test]
    fn a_panic_becomes_an_error_and_the_rest_goes_on() {
        let failed = isolate(|| -> u32 { panic!("damaged segment") });
        assert!(failed.unwrap_err().contains("damaged segment"));
        assert_eq!(isolate(|| 7), Ok(7));
    }
}
