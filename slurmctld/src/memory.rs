//! Giving memory back to the system after bursts.
//!
//! Building a 10,000-job reply for `squeue` allocates megabytes, most of it
//! in many small pieces (the texts of every job). glibc keeps freed memory
//! in its arenas, so without help the controller's resident size stays at
//! the high-water mark of the largest burst, two to three times the size of
//! the job table itself. Three things keep it down:
//!
//! - [`tune_allocator`] at start-up: two arenas serve every thread, and the
//!   thresholds are fixed. glibc otherwise raises both after the first large
//!   block is freed: the mmap threshold (so the next large replies come from
//!   the heap) and the trim threshold (to twice that size). A burst then
//!   leaves tens of MB free at the top of a thread arena, where neither
//!   `free` (below the raised threshold) nor `malloc_trim` (which leaves the
//!   top of a thread arena alone) gives it back. With fixed thresholds,
//!   blocks of [`MMAP_THRESHOLD`] or more are mapped on their own and
//!   unmapped when freed, and free space above [`TRIM_THRESHOLD`] at the top
//!   of any arena is returned by `free` itself.
//! - [`trim_soon`] after a large reply: one `malloc_trim` (which returns the
//!   free pages inside the arenas) a moment after the *last* of a run of
//!   large replies, on a blocking thread (it walks the arenas). A reply is
//!   still being encoded and sent when the call that built it asks for the
//!   trim, so a trim while a later reply is alive would release little:
//!   each call pushes the trim back, and a call that arrives while a trim is
//!   running gets one more after it.
//! - the owner task trims once commands have stopped arriving for a moment
//!   (see `server`), for the buffers of a burst of submissions.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How long after the last large reply the trim runs: long enough for that
/// reply to be encoded, sent and freed.
const DELAY: Duration = Duration::from_millis(200);

/// Allocations at least this large get pages of their own (`mmap`) and
/// return them when freed. Small enough for the vectors of a large reply,
/// large enough that the allocations of ordinary requests stay in the heap.
pub const MMAP_THRESHOLD: i32 = 256 * 1024;

/// Free space at the top of an arena beyond this goes back to the system
/// when it is freed.
pub const TRIM_THRESHOLD: i32 = 256 * 1024;

/// A trim task exists (waiting or trimming).
static PENDING: AtomicBool = AtomicBool::new(false);
/// Counts [`trim_soon`] calls, so the waiting task sees later ones.
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Schedules a trim [`DELAY`] after the last of a run of calls. Must be
/// called inside a tokio runtime.
pub fn trim_soon() {
    REQUESTS.fetch_add(1, Ordering::AcqRel);
    if PENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    // Made before the task so that it is dropped with it even if the task
    // never runs.
    let clear_if_dropped = ClearOnDrop;
    tokio::spawn(async move {
        loop {
            let seen = wait_for_quiet().await;
            let _ = tokio::task::spawn_blocking(trim_now).await;
            PENDING.store(false, Ordering::Release);
            // A call made during the trim saw PENDING set and left its
            // trim to this task: do one more, unless a new task took over.
            if REQUESTS.load(Ordering::Acquire) == seen || PENDING.swap(true, Ordering::AcqRel) {
                std::mem::forget(clear_if_dropped);
                return;
            }
        }
    });
}

/// Clears [`PENDING`] if the trim task is dropped while waiting (its
/// runtime shut down), so that a later call schedules a trim again.
struct ClearOnDrop;

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        PENDING.store(false, Ordering::Release);
    }
}

/// Sleeps until [`DELAY`] has passed without a call to [`trim_soon`];
/// returns the call count then.
async fn wait_for_quiet() -> u64 {
    let mut seen = REQUESTS.load(Ordering::Acquire);
    loop {
        tokio::time::sleep(DELAY).await;
        let now = REQUESTS.load(Ordering::Acquire);
        if now == seen {
            return seen;
        }
        seen = now;
    }
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

/// Sets glibc's malloc up for a long-lived daemon whose bursts are much
/// larger than its steady state: at most `arenas` arenas (each thread that
/// allocates otherwise gets one of its own, and memory freed in one arena
/// cannot serve another, which multiplies the resident size of a burst by
/// the number of threads), and fixed [`MMAP_THRESHOLD`] and
/// [`TRIM_THRESHOLD`] (see the module docs). Call once at start-up, before
/// the runtime's threads exist.
pub fn tune_allocator(arenas: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; M_ARENA_MAX accepts any
    // positive count, M_MMAP_THRESHOLD any size up to 32 MB and
    // M_TRIM_THRESHOLD any size.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas.max(1));
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, not several: the trim state is process-wide.
    #[test]
    fn a_run_of_calls_gets_one_trim_after_the_last() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let before = REQUESTS.load(Ordering::Acquire);
            trim_soon();
            assert!(PENDING.load(Ordering::Acquire));
            // Calls every 150 ms keep pushing the trim back.
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_millis(150)).await;
                trim_soon();
                assert!(PENDING.load(Ordering::Acquire));
            }
            assert!(REQUESTS.load(Ordering::Acquire) >= before + 6);
            // Quiet for longer than DELAY: the trim runs and the task ends.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while PENDING.load(Ordering::Acquire) {
                assert!(tokio::time::Instant::now() < deadline, "no trim");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // A later call starts a new task.
            trim_soon();
            assert!(PENDING.load(Ordering::Acquire));
        });
        // That task was still waiting: dropped with its runtime, it must
        // not leave later calls without a trim.
        drop(rt);
        assert!(!PENDING.load(Ordering::Acquire));
    }
}
