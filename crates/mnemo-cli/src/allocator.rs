//! How this process gives freed memory back to the system.
//!
//! glibc's malloc raises its mmap threshold each time a large block is freed (up to 32 MiB), so
//! after the first few the engine's large, short-lived buffers (an IVF list's codes, an ingest
//! batch, a training's copies) come from the heap instead, and freeing them keeps the pages:
//! at one million memories that was a quarter of the peak RSS (1,507 MiB with the moving
//! threshold, 1,123 MiB with it fixed at 128 KiB, 1,436 MiB fixed at 1 MiB; bench/RESULTS.md,
//! stop 25). Fixing the threshold at glibc's own default keeps every block of 128 KiB or more in
//! a mapping of its own, returned to the system when freed. A user's `MALLOC_MMAP_THRESHOLD_`
//! (read by glibc itself) is left in force.

/// Fix malloc's mmap threshold (glibc on Linux; elsewhere nothing to do). Call first in `main`,
/// before any thread starts.
pub(crate) fn return_large_frees() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc has read the user's own setting already; it wins.
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
            return;
        }
        /// glibc's initial threshold; setting it explicitly stops it from moving.
        const MMAP_THRESHOLD: libc::c_int = 128 * 1024;
        // SAFETY: `mallopt` only sets a malloc parameter; it is called before any other thread
        // exists. A failure (returns 0) leaves glibc's default behaviour, which is still correct.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
    }
}
