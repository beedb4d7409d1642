//! Blocking work (opening a store or an index: file I/O, integrity checks) called from async code.

/// Run `f`, telling a multi-threaded tokio runtime that this worker blocks meanwhile
/// (`block_in_place`: its other tasks move to other workers, so the executor keeps running).
/// On a current-thread runtime, or outside any runtime, `f` just runs (block_in_place is not
/// available there; those runtimes drive one task at a time anyway).
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}
