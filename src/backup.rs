//! `reftrack backup` and `reftrack restore`, for SQLite.
//!
//! A backup is a consistent copy taken while the database is served: `VACUUM INTO` reads
//! one snapshot, so every write committed before it began is in the copy and none that
//! began later is half in it, and it blocks no writer (WAL). The copy is written beside
//! the target under a temporary name, readable by its owner only, synced, checked
//! (`PRAGMA integrity_check`, the migration record) and only then renamed to its name; a
//! failure removes it.
//!
//! A restore checks the backup the same way, refuses one made by a newer build, and
//! replaces the database only when no process has it open; it removes the old `-wal` and
//! `-shm` files first, since they belong to the replaced file. The restored file takes
//! the permissions of the one it replaces, or is its owner's only.
//!
//! PostgreSQL has its own tools (`pg_dump`, `pg_restore`); both commands name them
//! rather than run them (docs/deploy.md).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use clap::Args;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteLockingMode};
use sqlx::{ConnectOptions, Connection};

use crate::config::DatabaseArgs;
use crate::store::sqlite::{latest_migration, no_database};
use crate::store::StoreError;

/// Options of `reftrack backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The file to write; it must not exist yet, unless `--force` is given.
    pub path: PathBuf,
    /// Replace `PATH` if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Options of `reftrack restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// A file written by `reftrack backup`.
    pub backup: PathBuf,
    /// Replace the database if it exists (no process may have it open).
    #[arg(long)]
    pub force: bool,
}

/// The permissions of a backup, and of a restored database that replaces none (Unix):
/// both hold password and token hashes and partners' emails.
#[cfg(unix)]
const OWNER_ONLY: u32 = 0o600;

/// What a checked SQLite file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Its size in bytes.
    pub bytes: u64,
    /// The newest migration applied to it.
    pub migration: i64,
}

const PG_DUMP: &str = "reftrack backup copies SQLite databases; back up PostgreSQL with \
    its own tool, while Reftrack serves:\n  \
    pg_dump --format=custom --file=reftrack.dump \"$REFTRACK_DATABASE_URL\"\n\
    (restoring it: docs/deploy.md)";

const PG_RESTORE: &str = "reftrack restore restores SQLite databases; restore PostgreSQL \
    with its own tool, every Reftrack process stopped:\n  \
    pg_restore --clean --if-exists --no-owner --dbname=\"$REFTRACK_DATABASE_URL\" reftrack.dump\n\
    (docs/deploy.md)";

/// `reftrack backup PATH`: writes the copy and prints what it holds.
pub async fn run_backup(args: BackupArgs) -> anyhow::Result<()> {
    let source = sqlite_file(&args.database.database_url, PG_DUMP)?;
    let copy = backup(&source, &args.path, args.force).await?;
    println!(
        "backup written: {} ({} bytes, migration {})",
        args.path.display(),
        copy.bytes,
        copy.migration
    );
    Ok(())
}

/// `reftrack restore BACKUP`: replaces the database with the checked backup.
pub async fn run_restore(args: RestoreArgs) -> anyhow::Result<()> {
    let target = sqlite_file(&args.database.database_url, PG_RESTORE)?;
    let restored = restore(&args.backup, &target, args.force).await?;
    println!(
        "restored {} to {} (migration {})",
        args.backup.display(),
        target.display(),
        restored.migration
    );
    if restored.migration < latest_migration() {
        println!(
            "  the server applies migrations {}–{} when it starts",
            restored.migration + 1,
            latest_migration()
        );
    }
    Ok(())
}

/// The file of a `sqlite://` URL; for a PostgreSQL URL, the error `postgres` saying
/// which tool to use instead.
fn sqlite_file(url: &str, postgres: &str) -> anyhow::Result<PathBuf> {
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        bail!("{postgres}");
    }
    if !url.starts_with("sqlite:") {
        bail!("unsupported database URL: expected sqlite://PATH or postgres://…");
    }
    let options = SqliteConnectOptions::from_str(url).context("invalid REFTRACK_DATABASE_URL")?;
    let path = options.get_filename();
    if path.as_os_str().is_empty() || url.contains(":memory:") || url.contains("mode=memory") {
        bail!("an in-memory database has no file to copy");
    }
    Ok(path.to_path_buf())
}

/// Copies the SQLite database at `source` to `target` (which must not exist unless
/// `force`), consistently even while a server writes to it; see the module's doc.
pub async fn backup(source: &Path, target: &Path, force: bool) -> anyhow::Result<Checked> {
    if !source.is_file() {
        return Err(no_database(source));
    }
    refuse_existing(target, force)?;
    let partial = Partial::create(target, "backup")?;
    let copy_name = partial
        .path
        .to_str()
        .ok_or_else(|| anyhow!("{} is not a UTF-8 path", target.display()))?;
    let mut conn = connect(source, false)
        .await
        .with_context(|| format!("cannot open {}", source.display()))?;
    let copied = sqlx::query("VACUUM INTO $1")
        .bind(copy_name)
        .execute(&mut conn)
        .await;
    let _ = conn.close().await;
    copied.with_context(|| format!("cannot copy {}", source.display()))?;
    let checked = check(&partial.path)
        .await
        .context("the copy failed its check; nothing was written")?;
    refuse_existing(target, force)?;
    partial.finish(target)?;
    Ok(checked)
}

/// Replaces the SQLite database at `target` with the backup at `backup`, after checking
/// it; an existing `target` is replaced only with `force` and when no process has it
/// open.
pub async fn restore(backup: &Path, target: &Path, force: bool) -> anyhow::Result<Checked> {
    if !backup.is_file() {
        bail!("no backup at {}", backup.display());
    }
    let checked = check(backup).await?;
    if target.exists() {
        if !force {
            bail!(
                "{} exists; stop the server and pass --force to replace it",
                target.display()
            );
        }
        ensure_unused(target).await?;
    }
    #[cfg(unix)]
    let replaced = match std::fs::metadata(target) {
        Ok(replaced) => Some(replaced.permissions()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", target.display())),
    };
    let partial = Partial::create(target, "restore")?;
    std::fs::copy(backup, &partial.path)
        .with_context(|| format!("cannot copy {}", backup.display()))?;
    // `fs::copy` gave the copy the backup's permissions; a restored database is no more
    // open than the file it replaces.
    #[cfg(unix)]
    std::fs::set_permissions(
        &partial.path,
        replaced.unwrap_or_else(|| std::os::unix::fs::PermissionsExt::from_mode(OWNER_ONLY)),
    )
    .with_context(|| format!("cannot write {}", target.display()))?;
    // The old log and index belong to the replaced file: left beside the new one, SQLite
    // would replay the old file's pages into it.
    for suffix in ["-wal", "-shm"] {
        let mut stale = target.as_os_str().to_owned();
        stale.push(suffix);
        match std::fs::remove_file(&stale) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot remove {}", stale.to_string_lossy()))
            }
        }
    }
    partial.finish(target)?;
    Ok(checked)
}

/// Opens the SQLite file at `path` read-only and checks it: `PRAGMA integrity_check` finds
/// nothing wrong, and it holds Reftrack's migration record, no newer than this build.
pub async fn check(path: &Path) -> anyhow::Result<Checked> {
    let mut conn = connect(path, true)
        .await
        .with_context(|| format!("cannot open {}", path.display()))?;
    let checked = check_on(&mut conn, path).await;
    let _ = conn.close().await;
    let migration = checked?;
    let bytes = std::fs::metadata(path)?.len();
    Ok(Checked { bytes, migration })
}

async fn check_on(conn: &mut SqliteConnection, path: &Path) -> anyhow::Result<i64> {
    let problems: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("cannot read {}", path.display()))?;
    if problems != ["ok"] {
        bail!(
            "{} fails integrity_check: {}",
            path.display(),
            problems
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let migration: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(&mut *conn)
            .await
            .ok()
            .flatten();
    let Some(migration) = migration else {
        bail!(
            "{} is not a Reftrack database (no migration record)",
            path.display()
        );
    };
    if migration > latest_migration() {
        bail!(
            "{} was made by a newer Reftrack (migration {migration}; this build knows up to {}): \
             restore it with that version",
            path.display(),
            latest_migration()
        );
    }
    Ok(migration)
}

/// A connection to an existing SQLite file; its journal mode is left as it is.
async fn connect(path: &Path, read_only: bool) -> Result<SqliteConnection, sqlx::Error> {
    SqliteConnectOptions::new()
        .filename(path)
        .read_only(read_only)
        .busy_timeout(Duration::from_secs(5))
        .connect()
        .await
}

/// Fails when another connection has the database at `path` open, as a running server
/// does: a connection in exclusive locking mode cannot read it then. A file SQLite cannot
/// read at all (the broken database a restore replaces) is not in use.
async fn ensure_unused(path: &Path) -> anyhow::Result<()> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .locking_mode(SqliteLockingMode::Exclusive)
        .busy_timeout(Duration::ZERO)
        .connect()
        .await
        .with_context(|| format!("cannot open {}", path.display()))?;
    let read = sqlx::query("SELECT count(*) FROM sqlite_master")
        .execute(&mut conn)
        .await;
    let _ = conn.close().await;
    match read.map_err(StoreError::from) {
        Err(StoreError::Unavailable(_)) => bail!(
            "{} is in use: stop the server (and any reftrack command on it) first",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// Refuses an existing `target` unless `force`.
fn refuse_existing(target: &Path, force: bool) -> anyhow::Result<()> {
    if target.is_dir() {
        bail!("{} is a directory", target.display());
    }
    if target.exists() && !force {
        bail!(
            "{} exists; choose another name or pass --force to replace it",
            target.display()
        );
    }
    Ok(())
}

/// A file being written beside its final name, removed unless [`Partial::finish`] renames
/// it to that name.
struct Partial {
    path: PathBuf,
    done: bool,
}

impl Partial {
    /// Creates `.NAME.PURPOSE-PID` empty, in the directory of `target`, readable and
    /// writable by its owner only (Unix): it holds password and token hashes.
    fn create(target: &Path, purpose: &str) -> anyhow::Result<Partial> {
        let name = target
            .file_name()
            .ok_or_else(|| anyhow!("{} names no file", target.display()))?;
        let dir = directory_of(target);
        let path = dir.join(format!(
            ".{}.{purpose}-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, OWNER_ONLY);
        options
            .open(&path)
            .with_context(|| format!("cannot write in {}", dir.display()))?;
        Ok(Partial { path, done: false })
    }

    /// Syncs the file, renames it to `target` and syncs the directory, so that the name
    /// appears only for a complete file.
    fn finish(mut self, target: &Path) -> anyhow::Result<()> {
        File::open(&self.path)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("cannot sync {}", self.path.display()))?;
        std::fs::rename(&self.path, target)
            .with_context(|| format!("cannot write {}", target.display()))?;
        self.done = true;
        // The rename is durable once the directory is synced; a file system that cannot
        // sync a directory still has the complete file under its name.
        let _ = File::open(directory_of(target)).and_then(|d| d.sync_all());
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_file_or_say_what_to_do() {
        assert_eq!(
            sqlite_file("sqlite:///data/reftrack.db", PG_DUMP).unwrap(),
            Path::new("/data/reftrack.db")
        );
        assert_eq!(
            sqlite_file("sqlite://reftrack.db", PG_DUMP).unwrap(),
            Path::new("reftrack.db")
        );
        let pg = sqlite_file("postgres://u@db/reftrack", PG_DUMP).unwrap_err();
        assert!(pg.to_string().contains("pg_dump"), "{pg}");
        assert!(sqlite_file("sqlite::memory:", PG_DUMP).is_err());
        assert!(sqlite_file("mysql://x", PG_DUMP).is_err());
    }

    #[test]
    fn a_partial_file_is_removed_unless_finished() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("b.db");
        let partial = Partial::create(&target, "backup").unwrap();
        let temp = partial.path.clone();
        assert!(temp.exists());
        drop(partial);
        assert!(!temp.exists());
        Partial::create(&target, "backup")
            .unwrap()
            .finish(&target)
            .unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(target.exists());
    }
}
