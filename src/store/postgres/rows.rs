//! A batch's rows as bound parameters: the `VALUES` lists the set-based statements (new
//! clicks, plain sales, counters) read their rows from. PostgreSQL gets numbered
//! parameters for every column, bound once for the one statement that reads them. One
//! statement text per batch size, so that each is prepared once per connection.

use sqlx::postgres::{PgArguments, Postgres};

use crate::store::committer::MAX_SET_ROWS;

/// One value of a batched row.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    /// An integer.
    Int(i64),
    /// A text, or NULL.
    Text(Option<&'a str>),
}

/// A query with its bound parameters.
pub type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// Rows of the same named columns, row after row.
pub struct Rows<'a> {
    names: &'static [&'static str],
    values: Vec<Value<'a>>,
}

impl<'a> Rows<'a> {
    /// No rows yet, of the columns `names`.
    pub fn new(names: &'static [&'static str]) -> Self {
        Rows {
            names,
            values: Vec::new(),
        }
    }

    /// Adds a row: one value per column, in the order of the names.
    pub fn push(&mut self, row: &[Value<'a>]) {
        debug_assert_eq!(row.len(), self.names.len(), "a row has every column");
        self.values.extend_from_slice(row);
    }

    /// The rows, [`MAX_SET_ROWS`] at a time, each chunk with its number of rows.
    pub fn chunks(&self) -> impl Iterator<Item = (usize, &[Value<'a>])> {
        let width = self.names.len();
        self.values
            .chunks(MAX_SET_ROWS * width)
            .map(move |chunk| (chunk.len() / width, chunk))
    }

    /// `WITH rows (…) AS (VALUES …)` of `n` rows of the columns `columns`, numbered from
    /// `$1`.
    pub fn cte(n: usize, columns: &[&str]) -> String {
        format!(
            "WITH rows ({}) AS (VALUES {})",
            columns.join(", "),
            values(n, columns.len(), &mut 1)
        )
    }

    /// Binds every column of each row of `chunk` (one of [`Rows::chunks`]), row after row,
    /// for a statement that read them with [`Rows::cte`].
    pub fn bind<'q>(&self, mut query: Query<'q>, chunk: &[Value<'q>]) -> Query<'q> {
        for value in chunk {
            query = match *value {
                Value::Int(v) => query.bind(v),
                Value::Text(v) => query.bind(v),
            };
        }
        query
    }
}

/// `($n, $n+1), (…)`: `n` rows of `width` parameters numbered from `*next`, which moves
/// past them.
pub fn values(n: usize, width: usize, next: &mut usize) -> String {
    use std::fmt::Write;
    let mut sql = String::new();
    for r in 0..n {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..width {
            let sep = if c == 0 { "" } else { ", " };
            let _ = write!(sql, "{sep}${next}");
            *next += 1;
        }
        sql.push(')');
    }
    sql
}

/// The statement text for `n` rows (1 to [`MAX_SET_ROWS`]) out of `cache`, which holds
/// one per row count, made by `build` the first time.
pub fn sized(
    cache: &'static std::sync::OnceLock<Vec<String>>,
    n: usize,
    build: impl Fn(usize) -> String,
) -> &'static str {
    &cache.get_or_init(|| (1..=MAX_SET_ROWS).map(build).collect())[n - 1]
}
