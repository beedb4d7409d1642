//! The data directory lock: one process writes a data directory at a time. The holder writes
//! who it is into the lock file, so a waiting process can say whom it waits for; the wait is
//! bounded (`MNEMO_LOCK_TIMEOUT_SECS`, default 30 s; 0 = do not wait) and runs on a blocking
//! thread, never on the async executor.
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::AgentError;

/// How long to wait for another process's lock by default.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// The variable that bounds the wait, in whole seconds.
pub const LOCK_TIMEOUT_ENV: &str = "MNEMO_LOCK_TIMEOUT_SECS";

/// The wait bound: `MNEMO_LOCK_TIMEOUT_SECS` (a whole number of seconds, 0 to one day), else
/// the default when unset; any other value is an error naming it ([`crate::env::secs`]).
pub fn lock_timeout() -> Result<Duration, AgentError> {
    crate::env::secs(LOCK_TIMEOUT_ENV, DEFAULT_LOCK_TIMEOUT, crate::env::MAX_TIMEOUT_SECS)
}

/// Take the lock of `data_dir` (off the async executor), waiting at most `timeout`.
pub async fn lock_data_dir(data_dir: &Path, timeout: Duration) -> Result<std::fs::File, AgentError> {
    let dir = data_dir.to_path_buf();
    tokio::task::spawn_blocking(move || lock_blocking(&dir, timeout)).await.map_err(|e| AgentError::Io {
        action: "wait for the lock of",
        file: data_dir.display().to_string(),
        error: std::io::Error::other(e.to_string()),
    })?
}

fn lock_blocking(data_dir: &Path, timeout: Duration) -> Result<std::fs::File, AgentError> {
    let path = data_dir.join("mnemo.lock");
    let io = |action, error| AgentError::Io { action, file: path.display().to_string(), error };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| io("open the lock file", e))?;
    let started = Instant::now();
    let mut said = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = holder(&path);
                if started.elapsed() >= timeout {
                    return Err(AgentError::LockTimeout { path: path.clone(), holder, waited: started.elapsed() });
                }
                if !said {
                    eprintln!(
                        "mnemo: waiting for the data directory lock {} held by {holder} (at most {}s)",
                        path.display(),
                        timeout.as_secs()
                    );
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io("lock", e)),
        }
    }
    // Say who holds it (best effort: a waiting process only prints it).
    let me = format!(
        "pid {} ({})",
        std::process::id(),
        std::env::args_os()
            .take(8)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(120)
            .collect::<String>()
    );
    let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(me.as_bytes()));
    Ok(file)
}

/// What the holder wrote into the lock file.
fn holder(path: &PathBuf) -> String {
    let mut s = String::new();
    match std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut s)) {
        Ok(_) if !s.trim().is_empty() => s.trim().chars().take(200).collect(),
        _ => "another process".to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn a_held_lock_times_out_naming_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let _held = lock_data_dir(d.path(), Duration::ZERO).await.unwrap();
        let e = lock_data_dir(d.path(), Duration::ZERO).await.unwrap_err().to_string();
        assert!(e.contains("pid") && e.contains(&std::process::id().to_string()), "{e}");
    }
}
