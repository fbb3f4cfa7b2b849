//! The allocator: mimalloc, and how soon the daemon gives freed memory
//! back to the system.
//!
//! mimalloc keeps a page freed for a second (its `purge_delay`) before it
//! returns it, and returns it only when the thread that freed it allocates
//! again. A daemon whose sessions all answered at once and then went idle
//! therefore keeps the burst's freed pages: 25–30 KiB a session at 5,000
//! sessions after two turns, a quarter of what it held (README, "Per-session
//! memory"). [`return_freed_memory_at_once`] sets the delay to zero for
//! `agentbus serve`, which measured the same CPU per event.
//!
//! An operator's `MIMALLOC_PURGE_DELAY` (or its older name,
//! `MIMALLOC_RESET_DELAY`) is left to win.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in the `mi_option_t` enum of the mimalloc that
/// libmimalloc-sys builds (v3, `include/mimalloc.h`), which the crate does
/// not name. The test below checks it is the option that
/// `MIMALLOC_PURGE_DELAY` sets.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed pages go back to the system when freed. Called before any other
/// thread starts: mimalloc's options are not safe to set concurrently.
pub fn return_freed_memory_at_once() {
    let set_by_operator = ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    if !set_by_operator {
        // SAFETY: an option of mimalloc's own enum, set while this is the
        // only thread.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_its_environment_variable_sets() {
        // What mimalloc read at the start: the variable, else the default.
        let expected = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(1000);
        // SAFETY: reading options of mimalloc's own enum.
        let (delay, before, after) = unsafe {
            (
                libmimalloc_sys::mi_option_get(PURGE_DELAY),
                // deprecated_eager_commit_delay and use_numa_nodes.
                libmimalloc_sys::mi_option_get(PURGE_DELAY - 1),
                libmimalloc_sys::mi_option_get(PURGE_DELAY + 1),
            )
        };
        assert_eq!(
            (delay, before, after),
            (expected, 1, 0),
            "mimalloc's options moved: find mi_option_purge_delay in its mimalloc.h"
        );
    }
}
