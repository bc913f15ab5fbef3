//! What the standard statements need of a database, and what differs between the two.
//!
//! [`Engine`] is implemented by [`sqlx::Sqlite`] (in `store::sqlite`) and
//! [`sqlx::Postgres`] (in `store::postgres`). Its supertraits name, once, every column
//! type the statements bind and read; its constants and hooks are where the two databases
//! part ways: how a write transaction begins, how a consistent read begins, and (its
//! supertrait [`SetStatements`]) the set-based statements of the group committer.
//!
//! [`Stmt`] is the statement builder the generic code uses in place of `sqlx::query`, so
//! that a function generic over an engine needs no bound beyond `DB: Engine`.

use futures::future::BoxFuture;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, FromRow, IntoArguments, Row, Type};

use super::super::model::Customer;
use super::super::Backend;
use super::batch::{FoundSale, RecordedSale, SetStatements};
use super::counters::Update;
use crate::integrity::RawCounts;
use crate::management::{MembershipView, ProgramPartnerRow, TopPartner};
use crate::model::{MemberRow, Membership, PartnerProgram, User, Workspace};
use crate::partners::{InviteRow, PartnerCredentials, PartnerMembership, PartnerPayoutItem};
use crate::payout_model::{Balance, Page};
use crate::webhooks::ClaimedDelivery;
use crate::DailyRollup;

/// A query of `DB` with its arguments.
pub type Query<'q, DB> = sqlx::query::Query<'q, DB, <DB as Database>::Arguments<'q>>;

/// A database the standard statements run on.
pub trait Engine:
    Run
    + SetStatements
    + for<'q> Param<'q, i64>
    + for<'q> Param<'q, Option<i64>>
    + for<'q> Param<'q, &'q str>
    + for<'q> Param<'q, Option<&'q str>>
    + for<'q> Param<'q, String>
    + for<'q> Param<'q, Option<String>>
    + for<'q> Param<'q, &'q String>
    + for<'q> Param<'q, &'q Option<String>>
    + for<'q> Param<'q, bool>
    + for<'q> Param<'q, Option<bool>>
    + for<'q> Param<'q, Vec<u8>>
    + for<'q> Param<'q, &'q [u8]>
    + Read<i64>
    + Read<Option<i64>>
    + Read<String>
    + Read<Option<String>>
    + Read<bool>
    + Read<Option<bool>>
    + ReadRow<Customer>
    + ReadRow<PartnerProgram>
    + ReadRow<Workspace>
    + ReadRow<User>
    + ReadRow<Membership>
    + ReadRow<MemberRow>
    + ReadRow<MembershipView>
    + ReadRow<ProgramPartnerRow>
    + ReadRow<TopPartner>
    + ReadRow<DailyRollup>
    + ReadRow<RawCounts>
    + ReadRow<Balance>
    + ReadRow<PartnerCredentials>
    + ReadRow<PartnerMembership>
    + ReadRow<PartnerPayoutItem>
    + ReadRow<InviteRow>
    + ReadRow<ClaimedDelivery>
    + ReadRow<(Option<i64>, i64)>
    + ReadRow<(bool, bool)>
    + ReadRow<(String, i64)>
    + ReadRow<FoundSale>
    + ReadRow<RecordedSale>
{
    /// Which database this is.
    const BACKEND: Backend;
    /// Names of the store's read pool and write pool in the metrics; no write pool name
    /// where the read pool is also the write pool.
    const POOL_NAMES: (&'static str, Option<&'static str>);
    /// Begins the group committer's transaction.
    const BEGIN_WRITE: &'static str;
    /// Begins a read-only transaction that sees one snapshot from its first read to its end.
    const BEGIN_SNAPSHOT: &'static str;
    /// What ends the subquery that picks the deliveries a worker claims (its rows `d`):
    /// where several processes share the database, a lock that skips the rows another
    /// process is claiming, so that each delivery is claimed by one.
    const CLAIM_LOCK: &'static str;
    /// What ends the read of the sale a refund changes (its row `s`): where several
    /// processes share the database, a lock that makes a second refund of the sale wait
    /// until the first has ended and then read what it left.
    const SALE_LOCK: &'static str;
    /// What ends the read of the sales waiting for an exchange rate that a conversion
    /// takes (its rows `s`): where several processes share the database, a lock that
    /// skips the sales another process is converting, so that each is converted once.
    const SALE_CLAIM_LOCK: &'static str;
    /// What ends the read of a record a management change is about to change (the audit
    /// log's "before"): where several processes share the database, a lock that makes
    /// a second change of it wait until the first has ended and then read what it left.
    const ROW_LOCK: &'static str;
    /// [`Engine::ROW_LOCK`] of a query's first table only (`pp`, a partner-program record,
    /// whatever it joins).
    const ROW_LOCK_OF_FIRST: &'static str;
    /// `LEFT JOIN` of the latest click of the customer whose id is `customer_id`, as
    /// `e` (columns `id`, `ip`, `click_timestamp`, `geo_country`; all NULL when it has none), looked up
    /// through the clicks' index on the customer
    /// ([`rules::latest_click`](super::rules::latest_click)).
    fn latest_click_join(customer_id: &str) -> String;
    /// Purges the sessions expired at `$3` and stores a new one (`$1` user, `$2` token
    /// hash, `$3` now, `$4` expiry).
    const CREATE_SESSION: &'static str;

    /// `(…), (…)`: the parameters of `rows` rows of `width` columns, for a multi-row
    /// `VALUES` list; numbered from `first` on an engine that numbers them.
    fn values(rows: usize, width: usize, first: usize) -> String;
    /// One query of a part's counter updates (see [`super::counters`]).
    fn counter_query(updates: &[Update]) -> String;
    /// How many rows a statement changed.
    fn rows_affected(result: &Self::QueryResult) -> u64;
    /// Whether an error of the database means the statement cannot run as written (a
    /// syntax error, a missing table or column): a bug, not a fault of the data.
    fn is_statement_bug(error: &(dyn sqlx::error::DatabaseError + 'static)) -> bool;
}

/// A type the database takes as a bound parameter of a query living for `'q`.
pub trait Param<'q, T>: Database {
    /// `query` with `value` bound as its next parameter.
    fn bind(query: Query<'q, Self>, value: T) -> Query<'q, Self>;
}

impl<'q, DB: Database, T> Param<'q, T> for DB
where
    T: 'q + Encode<'q, DB> + Type<DB>,
{
    fn bind(query: Query<'q, Self>, value: T) -> Query<'q, Self> {
        query.bind(value)
    }
}

/// A type the database reads out of a column.
pub trait Read<T>: Database {
    /// The column named `column` of `row`.
    fn get(row: &Self::Row, column: &str) -> sqlx::Result<T>;
    /// The `index`-th column of `row`.
    fn get_at(row: &Self::Row, index: usize) -> sqlx::Result<T>;
}

impl<DB: Database, T> Read<T> for DB
where
    T: for<'r> Decode<'r, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    fn get(row: &Self::Row, column: &str) -> sqlx::Result<T> {
        row.try_get(column)
    }

    fn get_at(row: &Self::Row, index: usize) -> sqlx::Result<T> {
        row.try_get(index)
    }
}

/// A record the database reads out of a whole row (`#[derive(sqlx::FromRow)]`).
pub trait ReadRow<T>: Database {
    /// `row` as a `T`.
    fn read_row(row: &Self::Row) -> sqlx::Result<T>;
}

impl<DB: Database, T> ReadRow<T> for DB
where
    T: for<'r> FromRow<'r, DB::Row>,
{
    fn read_row(row: &Self::Row) -> sqlx::Result<T> {
        T::from_row(row)
    }
}

/// Runs queries on a connection of the database.
pub trait Run: Database {
    /// Runs `query`, answering what it changed.
    fn execute<'e, 'q: 'e>(
        query: Query<'q, Self>,
        conn: &'e mut Self::Connection,
    ) -> BoxFuture<'e, sqlx::Result<Self::QueryResult>>;
    /// Runs `query`, answering its first row if any.
    fn fetch_optional<'e, 'q: 'e>(
        query: Query<'q, Self>,
        conn: &'e mut Self::Connection,
    ) -> BoxFuture<'e, sqlx::Result<Option<Self::Row>>>;
    /// Runs `query`, answering all its rows.
    fn fetch_all<'e, 'q: 'e>(
        query: Query<'q, Self>,
        conn: &'e mut Self::Connection,
    ) -> BoxFuture<'e, sqlx::Result<Vec<Self::Row>>>;
    /// Runs statements without arguments in one round trip, without preparing them.
    fn raw<'e>(
        conn: &'e mut Self::Connection,
        sql: &'static str,
    ) -> BoxFuture<'e, sqlx::Result<()>>;
}

impl<DB: Database> Run for DB
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
{
    fn execute<'e, 'q: 'e>(
        query: Query<'q, Self>,
        conn: &'e mut Self::Connection,
    ) -> BoxFuture<'e, sqlx::Result<Self::QueryResult>> {
        conn.execute(query)
    }

    fn fetch_optional<'e, 'q: 'e>(
        query: Query<'q, Self>,
        conn: &'e mut Self::Connection,
    ) -> BoxFuture<'e, sqlx::Result<Option<Self::Row>>> {
        conn.fetch_optional(query)
    }

    fn fetch_all<'e, 'q: 'e>(
        query: Query<'q, Self>,
        conn: &'e mut Self::Connection,
    ) -> BoxFuture<'e, sqlx::Result<Vec<Self::Row>>> {
        conn.fetch_all(query)
    }

    fn raw<'e>(
        conn: &'e mut Self::Connection,
        sql: &'static str,
    ) -> BoxFuture<'e, sqlx::Result<()>> {
        Box::pin(async move { conn.execute(sql).await.map(|_| ()) })
    }
}

/// A statement being built: its text and the parameters bound so far.
pub struct Stmt<'q, DB: Engine> {
    query: Query<'q, DB>,
}

/// A statement of `sql`, to bind with [`Stmt::bind`] and run.
pub fn stmt<DB: Engine>(sql: &str) -> Stmt<'_, DB> {
    Stmt {
        query: sqlx::query(sql),
    }
}

impl<'q, DB: Engine> Stmt<'q, DB> {
    /// Binds `value` as the next parameter.
    pub fn bind<T>(self, value: T) -> Self
    where
        DB: Param<'q, T>,
    {
        Stmt {
            query: <DB as Param<'q, T>>::bind(self.query, value),
        }
    }

    /// Binds a keyset page's cursor and limit as the next two parameters (see
    /// [`super::keyset`]).
    pub fn page(self, page: Page) -> Self {
        self.bind(page.before).bind(page.limit)
    }

    /// Runs it; answers how many rows it changed.
    pub async fn execute(self, conn: &mut DB::Connection) -> sqlx::Result<u64> {
        let done = DB::execute(self.query, conn).await?;
        Ok(DB::rows_affected(&done))
    }

    /// Runs it; answers its first row, if any.
    pub async fn fetch_optional(self, conn: &mut DB::Connection) -> sqlx::Result<Option<Rec<DB>>> {
        Ok(DB::fetch_optional(self.query, conn).await?.map(Rec))
    }

    /// Runs it; answers its first row, [`sqlx::Error::RowNotFound`] without one.
    pub async fn fetch_one(self, conn: &mut DB::Connection) -> sqlx::Result<Rec<DB>> {
        self.fetch_optional(conn)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    /// Runs it; answers all its rows.
    pub async fn fetch_all(self, conn: &mut DB::Connection) -> sqlx::Result<Vec<Rec<DB>>> {
        Ok(DB::fetch_all(self.query, conn)
            .await?
            .into_iter()
            .map(Rec)
            .collect())
    }

    /// Runs it; answers whether it returned a row.
    pub async fn has_row(self, conn: &mut DB::Connection) -> sqlx::Result<bool> {
        Ok(DB::fetch_optional(self.query, conn).await?.is_some())
    }

    /// Runs it; answers the first column of its first row, if any.
    pub async fn scalar_optional<T>(self, conn: &mut DB::Connection) -> sqlx::Result<Option<T>>
    where
        DB: Read<T>,
    {
        self.fetch_optional(conn)
            .await?
            .map(|r| r.try_get_at(0))
            .transpose()
    }

    /// Runs it; answers the first column of its first row.
    pub async fn scalar<T>(self, conn: &mut DB::Connection) -> sqlx::Result<T>
    where
        DB: Read<T>,
    {
        self.fetch_one(conn).await?.try_get_at(0)
    }

    /// Runs it; answers the first column of each of its rows.
    pub async fn scalar_all<T>(self, conn: &mut DB::Connection) -> sqlx::Result<Vec<T>>
    where
        DB: Read<T>,
    {
        self.read_all(conn, |r| r.try_get_at(0)).await
    }

    /// Runs it; answers its first row as a `T`.
    pub async fn record<T>(self, conn: &mut DB::Connection) -> sqlx::Result<T>
    where
        DB: ReadRow<T>,
    {
        self.fetch_one(conn).await?.record()
    }

    /// Runs it; answers each of its rows as a `T`.
    pub async fn records<T>(self, conn: &mut DB::Connection) -> sqlx::Result<Vec<T>>
    where
        DB: ReadRow<T>,
    {
        self.read_all(conn, Rec::record).await
    }

    /// Runs it; answers each of its rows as `read` reads it.
    pub async fn read_all<T, E: From<sqlx::Error>>(
        self,
        conn: &mut DB::Connection,
        read: impl Fn(&Rec<DB>) -> Result<T, E>,
    ) -> Result<Vec<T>, E> {
        self.fetch_all(conn).await?.iter().map(read).collect()
    }

    /// Runs it; answers its first row as a `T`, if any.
    pub async fn record_optional<T>(self, conn: &mut DB::Connection) -> sqlx::Result<Option<T>>
    where
        DB: ReadRow<T>,
    {
        self.fetch_optional(conn)
            .await?
            .map(|r| r.record())
            .transpose()
    }
}

/// A row of a result.
pub struct Rec<DB: Database>(DB::Row);

impl<DB: Database> Rec<DB> {
    /// The column named `column`.
    pub fn try_get<T>(&self, column: &str) -> sqlx::Result<T>
    where
        DB: Read<T>,
    {
        DB::get(&self.0, column)
    }

    /// The `index`-th column.
    pub fn try_get_at<T>(&self, index: usize) -> sqlx::Result<T>
    where
        DB: Read<T>,
    {
        DB::get_at(&self.0, index)
    }

    /// The row as a `T`.
    pub fn record<T>(&self) -> sqlx::Result<T>
    where
        DB: ReadRow<T>,
    {
        DB::read_row(&self.0)
    }
}
