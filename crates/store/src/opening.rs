//! Why a database could not be opened, in one line: which database (a file path, or
//! `host:port/dbname`, never a password) and the cause, without the text sqlx repeats in
//! an error's source.

use std::path::Path;

/// The error of a command that needs an existing database and finds none at `what` (no
/// SQLite file, or a PostgreSQL database without Reftrack's tables).
pub fn no_database(what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "no database at {what}: `reftrack serve` or `reftrack migrate` creates it \
         (check REFTRACK_DATABASE_URL or --database-url)"
    )
}

/// An error saying that the database `what` could not be opened, and why.
pub fn cannot_open(what: &str, error: &sqlx::Error) -> anyhow::Error {
    anyhow::anyhow!("cannot open the database {what}: {}", cause(error))
}

/// The SQLite file at `path` could not be opened: the cause SQLite gives, or, when the
/// file system says more (a missing directory, a directory where the file should be, a
/// file this user may not open), that.
pub fn cannot_open_file(path: &Path, error: &sqlx::Error) -> anyhow::Error {
    let what = path.display().to_string();
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let found = if !dir.is_dir() {
        Some(format!("the directory {} does not exist", dir.display()))
    } else if path.is_dir() {
        Some("it is a directory".to_string())
    } else if path.exists() {
        std::fs::OpenOptions::new()
            .read(true)
            .open(path)
            .err()
            .map(|e| e.to_string())
    } else {
        None
    };
    match found {
        Some(cause) => anyhow::anyhow!("cannot open the database {what}: {cause}"),
        None => cannot_open(&what, error),
    }
}

/// What went wrong, in words: the database's own message, the operating system's, or
/// sqlx's for anything else.
pub fn cause(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(db) => db.message().to_string(),
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Tls(e) => format!("TLS: {e}"),
        sqlx::Error::Configuration(e) => e.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_error_is_told_once() {
        let refused = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let said = cannot_open("db.internal:5432/reftrack", &refused).to_string();
        assert_eq!(
            said,
            "cannot open the database db.internal:5432/reftrack: connection refused"
        );
    }

    #[test]
    fn a_file_in_a_missing_directory_names_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nowhere").join("x.db");
        let said = cannot_open_file(&path, &sqlx::Error::PoolTimedOut).to_string();
        assert_eq!(
            said,
            format!(
                "cannot open the database {}: the directory {} does not exist",
                path.display(),
                dir.path().join("nowhere").display()
            )
        );
        let said = cannot_open_file(dir.path(), &sqlx::Error::PoolTimedOut).to_string();
        assert!(said.ends_with(": it is a directory"), "{said}");
    }
}
