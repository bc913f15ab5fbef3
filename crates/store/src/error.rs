//! The store's one error type. It names facts about the data (what was missing, which
//! unique value was taken); the service layer turns them into what a client reads.

/// Everything a store operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A record the operation needs does not exist; the text names its kind
    /// (`workspace`, `program`, `partner`, …).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A unique value is already taken; the text names it (`transaction_id`,
    /// `short_link`, `code`, `email`, …).
    #[error("{0} already exists")]
    Conflict(&'static str),
    /// The database cannot be reached, or is busy or shutting down: try again later.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] anyhow::Error),
    /// A counter or total would pass the largest whole number the database holds
    /// (PostgreSQL's `bigint`, SQLite's 64-bit integer): the write that caused it is
    /// refused, and nothing of it is stored.
    #[error("a total would overflow")]
    TooLarge,
    /// Another write of the same group commit failed a step the batch's writes share
    /// (the folded counter increments): this write was undone with the batch and must run
    /// again as a [`Write::Alone`](super::write::Write::Alone). The service layer does
    /// that; a client never sees it.
    #[error("the write's batch failed through another write")]
    Retry,
    /// Anything else: a bug, or data the store cannot read.
    #[error("database error: {0}")]
    Other(#[source] anyhow::Error),
}

/// Result alias of the store.
pub type StoreResult<T> = std::result::Result<T, StoreError>;

impl StoreError {
    /// Whether this is the unique-value conflict named `what`.
    pub fn is_conflict(&self, what: &str) -> bool {
        matches!(self, StoreError::Conflict(w) if *w == what)
    }

    /// Replaces a conflict's name: for an operation whose statement has one unique
    /// constraint, the caller knows better which value it was.
    pub fn conflict_on(self, what: &'static str) -> Self {
        match self {
            StoreError::Conflict(_) => StoreError::Conflict(what),
            other => other,
        }
    }

    /// Replaces a not-found's name likewise.
    pub fn missing(self, what: &'static str) -> Self {
        match self {
            StoreError::NotFound(_) => StoreError::NotFound(what),
            other => other,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::RowNotFound => StoreError::NotFound("record"),
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict("record"),
            _ if is_overflow(&e) => StoreError::TooLarge,
            _ if is_unavailable(&e) => StoreError::Unavailable(e.into()),
            _ => StoreError::Other(e.into()),
        }
    }
}

/// The message of the SQLite triggers that refuse a counter which no longer holds a
/// whole number (SQLite turns an integer sum that overflows into a REAL instead of
/// failing); see the migration `0017_counter_overflow.sql`.
pub const COUNTER_OVERFLOW: &str = "counter overflow";

/// Whether a database error is an integer overflow: PostgreSQL's SQLSTATE 22003
/// (`bigint out of range`), SQLite's counter triggers or its `sum()` ("integer
/// overflow").
fn is_overflow(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        let message = db.message();
        message == COUNTER_OVERFLOW || message == "integer overflow"
    } else {
        db.code().as_deref() == Some("22003")
    }
}

/// Whether a database error means "try again later" rather than a bug: the pool or
/// connection is gone, SQLite is busy or locked (result codes 5 and 6, extended codes
/// included), PostgreSQL is shutting down or unreachable (SQLSTATE classes 08 and 57P).
/// Each engine's codes are read as its own: a PostgreSQL SQLSTATE such as `22021` is
/// digits too, and must not pass for a busy SQLite.
fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                c.parse::<i32>().is_ok_and(|n| matches!(n & 0xff, 5 | 6))
            } else {
                c.starts_with("08") || c.starts_with("57P")
            }
        }),
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

impl From<anyhow::Error> for StoreError {
    fn from(e: anyhow::Error) -> Self {
        StoreError::Other(e)
    }
}
