//! A batch's rows as bound parameters: the `VALUES` lists the set-based statements (new
//! clicks, plain sales, counters) read their rows from. SQLite gets anonymous parameters
//! (its lookup of a numbered one walks a list of them all), bound for each statement that
//! names them. One statement text per batch size, so that each is prepared once per
//! connection.

use sqlx::sqlite::{Sqlite, SqliteArguments};

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
pub type Query<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

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

    /// `WITH rows (…) AS (VALUES …)` of `n` rows of the columns `columns`.
    pub fn cte(n: usize, columns: &[&str]) -> String {
        format!(
            "WITH rows ({}) AS (VALUES {})",
            columns.join(", "),
            values(n, columns.len())
        )
    }

    /// Binds the rows of `chunk` (one of [`Rows::chunks`]) for a query whose statements
    /// read, in order, the columns `statements` with [`Rows::cte`]: each statement's
    /// columns of each row in turn.
    pub fn bind<'q>(
        &self,
        mut query: Query<'q>,
        chunk: &[Value<'q>],
        statements: &[&[&str]],
    ) -> Query<'q> {
        for columns in statements {
            let at: Vec<usize> = columns.iter().map(|c| column_at(self.names, c)).collect();
            for row in chunk.chunks(self.names.len()) {
                for &c in &at {
                    query = match row[c] {
                        Value::Int(v) => query.bind(v),
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

/// The statement text for `n` rows (1 to [`MAX_SET_ROWS`]) out of `cache`, which holds
/// one per row count, made by `build` the first time.
pub fn sized(
    cache: &'static std::sync::OnceLock<Vec<String>>,
    n: usize,
    build: impl Fn(usize) -> String,
) -> &'static str {
    &cache.get_or_init(|| (1..=MAX_SET_ROWS).map(build).collect())[n - 1]
}
