//! The lock that keeps a SQLite file to one serving process.
//!
//! A server writes through one connection and batches its writes as if it were the file's
//! only writer. A second `reftrack serve` on the same file would not corrupt it, but the two
//! would take turns on SQLite's one write lock: under load each waits out the other's
//! batches, and a write that waits longer than the busy timeout fails. So `serve` takes an
//! exclusive lock on `FILE.lock` beside the database, held for as long as the process
//! lives (the kernel drops it when the process ends, however it ends), and a second
//! `serve` refuses to start. Management commands (`reftrack admin`, `verify`, `backup`) do
//! not take it: they may run beside a server.
//!
//! The lock is on a file of its own, not on the database: SQLite's own locks are POSIX
//! record locks, which a process loses when it closes any descriptor of the file.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use super::connect::database_file;

/// An exclusive hold on a database file's serve lock, released when dropped.
#[derive(Debug)]
pub struct ServingLock {
    _file: File,
}

/// The lock file of the database at `path`.
fn lock_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    name.into()
}

/// Takes the serve lock of the SQLite database at `url`; `None` for an in-memory
/// database, which no other process can open. Fails when another process holds it.
pub fn lock_for_serving(url: &str) -> anyhow::Result<Option<ServingLock>> {
    let Some(database) = database_file(url) else {
        return Ok(None);
    };
    let path = lock_file(&database);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path);
    let file = match file {
        Ok(file) => file,
        // A directory that does not exist is said by the opening of the database itself.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("cannot open the lock file {}: {e}", path.display()),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(ServingLock { _file: file })),
        Err(TryLockError::WouldBlock) => anyhow::bail!(
            "another reftrack serve is using the database {}; one server process serves a \
             SQLite file (several processes share a PostgreSQL database)",
            database.display()
        ),
        Err(TryLockError::Error(e)) => {
            anyhow::bail!("cannot lock the lock file {}: {e}", path.display())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_hold_on_one_file_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let first = lock_for_serving(&url).unwrap();
        assert!(first.is_some());
        let refused = lock_for_serving(&url).unwrap_err().to_string();
        assert!(
            refused.starts_with("another reftrack serve is using the database"),
            "{refused}"
        );
        drop(first);
        assert!(lock_for_serving(&url).unwrap().is_some());
    }

    #[test]
    fn an_in_memory_database_takes_no_lock() {
        assert!(lock_for_serving("sqlite::memory:").unwrap().is_none());
    }
}
