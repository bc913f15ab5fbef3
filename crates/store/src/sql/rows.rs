//! A batch's rows as bound parameters: the `VALUES` lists the set-based statements of the
//! engines (new clicks, plain sales) read their rows from. How they are bound is the
//! engine's (its `rows` module); collecting them, cutting them into chunks and caching a
//! statement text per chunk size are the same on both.

use super::engine::Engine;
use crate::committer::MAX_SET_ROWS;

/// One value of a batched row.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    /// An integer.
    Int(i64),
    /// An integer, or NULL.
    MaybeInt(Option<i64>),
    /// A text, or NULL.
    Text(Option<&'a str>),
}

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

    /// The names of the columns, in the order of each row's values.
    pub fn names(&self) -> &'static [&'static str] {
        self.names
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
}

/// `WITH rows (…) AS (VALUES …)` of `n` rows of the columns `columns` (numbered from
/// `$1` on an engine that numbers parameters).
pub fn cte<DB: Engine>(n: usize, columns: &[&str]) -> String {
    format!(
        "WITH rows ({}) AS (VALUES {})",
        columns.join(", "),
        DB::values(n, columns.len(), 1)
    )
}

/// The statement text for `n` rows (1 to [`MAX_SET_ROWS`]) out of `cache`, which holds
/// one per row count, made by `build` the first time: one text per size, so that each is
/// prepared once per connection.
pub fn sized(
    cache: &'static std::sync::OnceLock<Vec<String>>,
    n: usize,
    build: impl Fn(usize) -> String,
) -> &'static str {
    &cache.get_or_init(|| (1..=MAX_SET_ROWS).map(build).collect())[n - 1]
}
