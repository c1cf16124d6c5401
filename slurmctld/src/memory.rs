//! Giving memory back to the system after bursts.
//!
//! Building a 10,000-job reply for `squeue` allocates megabytes on whatever
//! worker thread served it; glibc keeps that memory in per-thread arenas
//! after it is freed, so the controller's resident size would stay at its
//! high-water mark. [`trim_soon`] asks for one `malloc_trim` a moment after
//! the last burst, on a blocking thread (it walks the arenas). Repeated
//! calls during a burst schedule one trim, not many.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long after a burst the trim runs: long enough for the reply to be
/// sent and freed.
const DELAY: Duration = Duration::from_millis(200);

static PENDING: AtomicBool = AtomicBool::new(false);

/// Schedules a trim [`DELAY`] from now unless one is already scheduled.
/// Must be called inside a tokio runtime.
pub fn trim_soon() {
    if PENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(async {
        tokio::time::sleep(DELAY).await;
        PENDING.store(false, Ordering::Release);
        let _ = tokio::task::spawn_blocking(trim_now).await;
    });
}

/// Returns free heap memory to the system now (blocking).
pub fn trim_now() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only releases memory
    // that the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Caps glibc's malloc arenas at `n`: each thread that allocates otherwise
/// gets an arena of its own, and freed memory in one arena cannot serve
/// another, which multiplies the resident size of a burst by the number of
/// threads. Call once at start-up, before the runtime's threads exist.
pub fn limit_arenas(n: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; M_ARENA_MAX accepts any
    // positive count.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, n);
    }
}
