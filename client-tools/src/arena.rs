//! The commands' memory allocator: a bump arena, then the system's.
//!
//! A command lives for a few milliseconds and frees nearly everything it
//! allocates only at exit. A general-purpose allocator spends that time
//! keeping free lists and, in musl's case, mapping and unmapping pages one
//! at a time (a quarter of a static `sbatch`'s CPU). Here an allocation is
//! carved from one zero-initialised region (which costs nothing until
//! touched) by moving an offset; freeing the newest block moves it back,
//! so a growing buffer is extended in place, and any other free is left
//! for the process's exit. Requests the region cannot hold, and large ones,
//! go to the system allocator, so a command that allocates far more (squeue
//! over a large queue) keeps the system's reuse, with this region's few
//! MiB as its only extra.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Size of the region.
const SIZE: usize = 4 << 20;
/// Requests above this go to the system allocator.
const LARGE: usize = 256 << 10;

#[repr(C, align(4096))]
struct Region(UnsafeCell<[u8; SIZE]>);

// SAFETY: the bytes are only reached through blocks handed out once each
// (the offset is advanced atomically before a block is used).
unsafe impl Sync for Region {}

static REGION: Region = Region(UnsafeCell::new([0; SIZE]));

/// The bump allocator; see the module documentation.
pub struct Arena {
    /// Offset of the first free byte of the region.
    next: AtomicUsize,
}

impl Arena {
    pub const fn new() -> Self {
        Self {
            next: AtomicUsize::new(0),
        }
    }

    fn base() -> usize {
        REGION.0.get() as usize
    }

    fn owns(ptr: *mut u8) -> bool {
        let p = ptr as usize;
        p >= Self::base() && p < Self::base() + SIZE
    }

    /// A block of the region, or `None` when it has no room.
    fn carve(&self, layout: Layout) -> Option<*mut u8> {
        if layout.size() > LARGE {
            return None;
        }
        let base = Self::base();
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (base + cur).checked_next_multiple_of(layout.align())? - base;
            let end = start.checked_add(layout.size())?;
            if end > SIZE {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some((base + start) as *mut u8),
                Err(now) => cur = now,
            }
        }
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: blocks of the region never overlap (each comes from a distinct
// range of offsets, taken atomically, and a range returns to the free end
// only when it is the newest block being freed); the rest is `System`'s.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.carve(layout) {
            Some(p) => p,
            // SAFETY: the caller's layout, passed on.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.carve(layout) {
            Some(p) => {
                // Freed blocks are reused only at the end of the region, and
                // may hold old bytes.
                // SAFETY: `p` is a fresh block of `layout.size()` bytes.
                unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
                p
            }
            // SAFETY: the caller's layout, passed on.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !Self::owns(ptr) {
            // SAFETY: a block `System` gave, with its layout.
            return unsafe { System.dealloc(ptr, layout) };
        }
        let start = ptr as usize - Self::base();
        // Only the newest block goes back; a failed exchange means it is not.
        let _ = self.next.compare_exchange(
            start + layout.size(),
            start,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Self::owns(ptr) {
            // SAFETY: a block `System` gave, with its layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let start = ptr as usize - Self::base();
        let end = start + layout.size();
        // The newest block grows or shrinks where it is.
        if new_size <= LARGE
            && start + new_size <= SIZE
            && self
                .next
                .compare_exchange(end, start + new_size, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the size is non-zero and, with the old alignment, a valid
        // layout (the caller's promise for `realloc`).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as above.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct and at least
            // `layout.size()` bytes long.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // Each test uses its own allocator over the one region, so they must not
    // run at once: one test does all.
    #[test]
    fn blocks_are_aligned_distinct_and_the_newest_is_reused() {
        let a = Arena::new();
        unsafe {
            let l8 = Layout::from_size_align(24, 8).unwrap();
            let one = a.alloc(Layout::from_size_align(1, 1).unwrap());
            let wide = a.alloc(Layout::from_size_align(100, 64).unwrap());
            assert!(Arena::owns(one) && Arena::owns(wide));
            assert_eq!(wide as usize % 64, 0);
            assert!(wide as usize > one as usize);
            let p = a.alloc(l8);
            let q = a.alloc(Layout::from_size_align(100, 8).unwrap());
            assert!(Arena::owns(p) && Arena::owns(q));
            assert_eq!(q as usize, p as usize + 24);
            // q is the newest: freeing it gives its bytes back.
            let before = a.next.load(Ordering::Relaxed);
            a.dealloc(q, Layout::from_size_align(100, 8).unwrap());
            assert_eq!(a.next.load(Ordering::Relaxed), before - 100);
            // p is now the newest: it grows in place, keeping its bytes.
            p.write(7);
            let grown = a.realloc(p, l8, 4000);
            assert_eq!(grown, p);
            assert_eq!(grown.read(), 7);
            // An older block moves when it grows, with its bytes.
            let r = a.alloc(l8);
            let moved = a.realloc(p, Layout::from_size_align(4000, 8).unwrap(), 5000);
            assert_ne!(moved, p);
            assert_eq!(moved.read(), 7);
            assert!(moved as usize > r as usize);
            // Large requests and an exhausted region use the system's.
            let big = Layout::from_size_align(LARGE + 1, 8).unwrap();
            let b = a.alloc(big);
            assert!(!Arena::owns(b));
            a.dealloc(b, big);
            a.next.store(SIZE - 8, Ordering::Relaxed);
            let s = a.alloc(Layout::from_size_align(16, 8).unwrap());
            assert!(!b.is_null() && !Arena::owns(s));
            a.dealloc(s, Layout::from_size_align(16, 8).unwrap());
            // Zeroed blocks are zero even where old bytes were.
            a.next.store(0, Ordering::Relaxed);
            let z = a.alloc_zeroed(Layout::from_size_align(32, 8).unwrap());
            assert_eq!(z, one);
            assert!((0..32).all(|i| z.add(i).read() == 0));
        }
    }
}
