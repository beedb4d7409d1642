//! Index failures with their cause kept and classified ([`IndexErrorKind`]), so that the engine
//! and the CLI can tell a damaged index (rebuild it) from a full disk or a read-only mount.
use std::error::Error;
use std::io::ErrorKind;

use mnemo_contract::{CoreError, IndexErrorKind};
use thiserror::Error;

/// What the index was doing when `source` failed.
#[derive(Debug, Error)]
#[error("{what}: {source}")]
pub struct IndexOpError {
    what: String,
    #[source]
    source: Box<dyn Error + Send + Sync + 'static>,
}

/// `what` failed with `e`: an index failure classified from `e`.
pub fn index_error<E: Error + Send + Sync + 'static>(what: impl Into<String>, e: E) -> CoreError {
    let kind = classify(&e);
    CoreError::index(kind, IndexOpError { what: what.into(), source: Box::new(e) })
}

fn classify(e: &(dyn Error + 'static)) -> IndexErrorKind {
    if let Some(t) = e.downcast_ref::<tantivy::TantivyError>() {
        use tantivy::TantivyError as T;
        return match t {
            T::IoError(io) => io_kind(io),
            T::LockFailure(..) => IndexErrorKind::Busy,
            T::OpenReadError(tantivy::directory::error::OpenReadError::IoError { io_error, .. }) => io_kind(io_error),
            T::OpenWriteError(tantivy::directory::error::OpenWriteError::IoError { io_error, .. }) => io_kind(io_error),
            T::OpenReadError(_) | T::OpenDirectoryError(_) | T::DataCorruption(_) | T::IncompatibleIndex(_) => {
                IndexErrorKind::Damaged
            }
            _ => IndexErrorKind::Other,
        };
    }
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return io_kind(io);
    }
    IndexErrorKind::Other
}

fn io_kind(e: &std::io::Error) -> IndexErrorKind {
    match e.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => IndexErrorKind::Full,
        ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied => IndexErrorKind::ReadOnly,
        ErrorKind::NotFound | ErrorKind::UnexpectedEof | ErrorKind::InvalidData => IndexErrorKind::Damaged,
        _ => IndexErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_full_disk_a_read_only_file_and_a_missing_segment_are_told_apart() {
        let full = index_error("commit", std::io::Error::from(ErrorKind::StorageFull));
        assert_eq!(full.index_kind(), Some(IndexErrorKind::Full));
        let ro = index_error("commit", std::io::Error::from(ErrorKind::ReadOnlyFilesystem));
        assert_eq!(ro.index_kind(), Some(IndexErrorKind::ReadOnly));
        let missing = index_error(
            "open",
            tantivy::TantivyError::OpenReadError(tantivy::directory::error::OpenReadError::FileDoesNotExist(
                "x.term".into(),
            )),
        );
        assert_eq!(missing.index_kind(), Some(IndexErrorKind::Damaged));
        // The cause is kept as the source, not flattened into the message.
        let source = std::error::Error::source(&missing).unwrap();
        assert!(source.source().unwrap().downcast_ref::<tantivy::TantivyError>().is_some());
    }
}
