//! `memcpy` for the static musl build of the commands.
//!
//! musl's own copies with `rep movsq` whatever the length, and that
//! instruction's start-up cost dominates the short copies formatting is
//! made of: half of `squeue`'s time over 10,000 jobs went there. This one
//! copies up to 64 bytes with a few overlapping unaligned loads and stores
//! and leaves longer copies to `rep movsb`. glibc's is already fast, so
//! this is built for musl on x86_64 only.
//!
//! musl's `memmove` reaches its forward copy through the name
//! `__memcpy_fwd`, defined beside its `memcpy`; both are defined here, so
//! the linker takes neither of musl's (a musl that named it differently
//! would fail to link, with both `memcpy`s, rather than misbehave).

use core::arch::asm;

/// Copies `n` bytes from `src` to `dst`, which must not overlap.
///
/// # Safety
/// As C's `memcpy`: both ranges valid for `n` bytes, not overlapping.
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's promise.
    unsafe { copy_forward(dst, src, n) };
    dst
}

/// musl's `memmove` calls this when copying forwards is safe: `dst` below
/// `src`, or the ranges apart.
///
/// # Safety
/// Both ranges valid for `n` bytes; `dst` not inside `src + 1..src + n`.
#[no_mangle]
pub unsafe extern "C" fn __memcpy_fwd(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's promise.
    unsafe { copy_forward(dst, src, n) };
    dst
}

/// Up to 64 bytes are all read before any is written, so any overlap is
/// fine there; longer copies go forwards byte by byte (`rep movsb`).
///
/// # Safety
/// As [`__memcpy_fwd`].
#[inline(always)]
unsafe fn copy_forward(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY (whole body): every access stays within `src..src + n` and
    // `dst..dst + n`, which the caller promises are valid; unaligned reads
    // and writes are what `read_unaligned`/`write_unaligned` are for.
    unsafe {
        match n {
            0 => {}
            1..=3 => {
                // First, middle and last byte cover 1 to 3.
                let a = src.read();
                let b = src.add(n / 2).read();
                let c = src.add(n - 1).read();
                dst.write(a);
                dst.add(n / 2).write(b);
                dst.add(n - 1).write(c);
            }
            4..=7 => copy2::<u32>(dst, src, n),
            8..=15 => copy2::<u64>(dst, src, n),
            16..=32 => copy2::<u128>(dst, src, n),
            33..=64 => {
                let a = src.cast::<u128>().read_unaligned();
                let b = src.add(16).cast::<u128>().read_unaligned();
                let c = src.add(n - 32).cast::<u128>().read_unaligned();
                let d = src.add(n - 16).cast::<u128>().read_unaligned();
                dst.cast::<u128>().write_unaligned(a);
                dst.add(16).cast::<u128>().write_unaligned(b);
                dst.add(n - 32).cast::<u128>().write_unaligned(c);
                dst.add(n - 16).cast::<u128>().write_unaligned(d);
            }
            _ => {
                asm!(
                    "rep movsb",
                    inout("rcx") n => _,
                    inout("rdi") dst => _,
                    inout("rsi") src => _,
                    options(nostack, preserves_flags)
                );
            }
        }
    }
}

/// Copies `n` bytes, `size_of::<T>() <= n <= 2 * size_of::<T>()`, as the
/// first and the last `T` of the range (which may overlap), both read
/// before either is written.
///
/// # Safety
/// As [`copy_forward`], with `n` in that range.
#[inline(always)]
unsafe fn copy2<T: Copy>(dst: *mut u8, src: *const u8, n: usize) {
    let w = core::mem::size_of::<T>();
    // SAFETY: both words lie within the ranges (see above).
    unsafe {
        let head = src.cast::<T>().read_unaligned();
        let tail = src.add(n - w).cast::<T>().read_unaligned();
        dst.cast::<T>().write_unaligned(head);
        dst.add(n - w).cast::<T>().write_unaligned(tail);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::memcpy;

    #[test]
    fn every_length_and_offset_copies_exactly() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for n in 0..200 {
            for off in 0..9 {
                let mut dst = vec![0xAAu8; 220];
                // SAFETY: both ranges are inside their vectors and distinct.
                let r = unsafe { memcpy(dst.as_mut_ptr().add(off), src.as_ptr().add(off), n) };
                assert_eq!(r, dst.as_mut_ptr().wrapping_add(off));
                assert_eq!(&dst[off..off + n], &src[off..off + n], "n={n} off={off}");
                assert!(dst[..off].iter().all(|b| *b == 0xAA));
                assert!(dst[off + n..].iter().all(|b| *b == 0xAA));
            }
        }
    }

    #[test]
    fn memmove_goes_both_ways() {
        for n in [0usize, 1, 5, 17, 40, 64, 65, 100, 1000] {
            for shift in [1usize, 3, 8, 33] {
                let orig: Vec<u8> = (0..n + shift).map(|i| (i * 13 + 1) as u8).collect();
                // Down (forward copy through __memcpy_fwd) and up.
                let mut v = orig.clone();
                // SAFETY: both ranges are inside `v`.
                unsafe { std::ptr::copy(v.as_ptr().add(shift), v.as_mut_ptr(), n) };
                assert_eq!(&v[..n], &orig[shift..shift + n]);
                let mut v = orig.clone();
                // SAFETY: as above.
                unsafe { std::ptr::copy(v.as_ptr(), v.as_mut_ptr().add(shift), n) };
                assert_eq!(&v[shift..shift + n], &orig[..n]);
            }
        }
    }
}
