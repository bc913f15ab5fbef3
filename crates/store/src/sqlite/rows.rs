//! How SQLite takes a batch's rows ([`Rows`]): anonymous parameters (its lookup of a
//! numbered one walks a list of them all), bound for each statement that names them.

use sqlx::sqlite::{Sqlite, SqliteArguments};

pub use crate::sql::rows::{sized, Rows, Value};

/// A query with its bound parameters.
pub type Query<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

/// `WITH rows (…) AS (VALUES …)` of `n` rows of the columns `columns`.
pub fn cte(n: usize, columns: &[&str]) -> String {
    crate::sql::rows::cte::<Sqlite>(n, columns)
}

/// Binding [`Rows`] the SQLite way.
pub trait BindRows<'q> {
    /// Binds the rows of `chunk` (one of [`Rows::chunks`]) for a query whose statements
    /// read, in order, the columns `statements` with [`cte`]: each statement's columns of
    /// each row in turn.
    fn bind(&self, query: Query<'q>, chunk: &[Value<'q>], statements: &[&[&str]]) -> Query<'q>;
}

impl<'q> BindRows<'q> for Rows<'_> {
    fn bind(&self, mut query: Query<'q>, chunk: &[Value<'q>], statements: &[&[&str]]) -> Query<'q> {
        let names = self.names();
        for columns in statements {
            let at: Vec<usize> = columns.iter().map(|c| column_at(names, c)).collect();
            for row in chunk.chunks(names.len()) {
                for &c in &at {
                    query = match row[c] {
                        Value::Int(v) => query.bind(v),
                        Value::MaybeInt(v) => query.bind(v),
                        Value::Text(v) => query.bind(v),
                    };
                }
            }
        }
        query
    }
}

/// `(?, ?), (?, ?)`: `n` rows of `width` parameters.
pub fn values(n: usize, width: usize) -> String {
    let row = format!("({})", vec!["?"; width].join(", "));
    vec![row; n].join(", ")
}

/// Where `column` is among `names`.
fn column_at(names: &[&str], column: &str) -> usize {
    names
        .iter()
        .position(|name| *name == column)
        .expect("a column of the rows")
}
