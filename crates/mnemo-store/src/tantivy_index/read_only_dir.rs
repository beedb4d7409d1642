//! A tantivy directory that only reads: a data directory on a read-only mount (a mounted
//! backup) still has its index searched as it is. tantivy's readers take a lock file even to
//! read `meta.json`; here no writer can exist, so the lock is granted without a file, and every
//! write is refused with a read-only error.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// `MmapDirectory` for reading only.
#[derive(Clone, Debug)]
pub struct ReadOnlyDirectory(MmapDirectory);

impl ReadOnlyDirectory {
    /// Open `path` (an existing index directory).
    pub fn open(path: &Path) -> Result<Self, OpenDirectoryError> {
        MmapDirectory::open(path).map(ReadOnlyDirectory)
    }
}

fn refused() -> Arc<std::io::Error> {
    Arc::new(std::io::Error::new(std::io::ErrorKind::ReadOnlyFilesystem, "the index was opened read-only"))
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError { io_error: refused(), filepath: path.to_path_buf() })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError { io_error: refused(), filepath: PathBuf::from(path) })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> std::io::Result<()> {
        Err(std::io::Error::new(std::io::ErrorKind::ReadOnlyFilesystem, "the index was opened read-only"))
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        // Nobody writes here (the data directory cannot be written), so readers need no lock file.
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.0.watch(watch_callback)
    }
}
