//! The one way the client takes its `std` locks.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking over a lock poisoned by a panicking holder: every value the client
/// keeps behind a lock (maps of waiters, caches, counters) stays consistent at each statement,
/// so a panic elsewhere never leaves it half-updated, and refusing it would only turn one
/// failure into many.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
