//! How PostgreSQL takes a batch's rows ([`Rows`]): numbered parameters for every column,
//! bound once for the one statement that reads them.

use sqlx::postgres::{PgArguments, Postgres};

pub use crate::sql::rows::{sized, Rows, Value};

/// A query with its bound parameters.
pub type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// `WITH rows (…) AS (VALUES …)` of `n` rows of the columns `columns`, numbered from
/// `$1`.
pub fn cte(n: usize, columns: &[&str]) -> String {
    crate::sql::rows::cte::<Postgres>(n, columns)
}

/// Binding [`Rows`] the PostgreSQL way.
pub trait BindRows<'q> {
    /// Binds every column of each row of `chunk` (one of [`Rows::chunks`]), row after
    /// row, for a statement that read them with [`cte`].
    fn bind(&self, query: Query<'q>, chunk: &[Value<'q>]) -> Query<'q>;
}

impl<'q> BindRows<'q> for Rows<'_> {
    fn bind(&self, mut query: Query<'q>, chunk: &[Value<'q>]) -> Query<'q> {
        for value in chunk {
            query = match *value {
                Value::Int(v) => query.bind(v),
                Value::MaybeInt(v) => query.bind(v),
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
