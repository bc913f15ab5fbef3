// A batch's rows as bound parameters: the `VALUES` lists that the committer's batched
// statements (new clicks, plain sales) read their rows from. One text per batch size, so
// that each is prepared once per connection. Included by `sqlite.rs` and `postgres.rs`.

/// Most rows one batched statement takes; a bigger batch runs it once per chunk.
pub const CHUNK: usize = 64;

/// One value of a batched row.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Int(i64),
    Text(Option<&'a str>),
}

/// A query with its bound parameters.
pub type Query<'q> = sqlx::query::Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>;

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

    /// The rows, [`CHUNK`] at a time, each chunk with its number of rows.
    pub fn chunks(&self) -> impl Iterator<Item = (usize, &[Value<'a>])> {
        let width = self.names.len();
        self.values
            .chunks(CHUNK * width)
            .map(move |chunk| (chunk.len() / width, chunk))
    }

    /// `WITH rows (…) AS (VALUES …)` of `n` rows of `names`' columns `columns`. SQLite gets
    /// anonymous parameters (its lookup of a numbered one walks a list of them all), bound
    /// by [`Rows::bind`] for each statement that names them; PostgreSQL numbered ones for
    /// every column, bound once for its single statement.
    pub fn cte(names: &[&str], n: usize, columns: &[&str]) -> String {
        debug_assert!(
            BACKEND == Backend::Sqlite || columns == names,
            "PostgreSQL's single statement reads every column"
        );
        format!(
            "WITH rows ({}) AS (VALUES {})",
            columns.join(", "),
            values(n, columns.len(), &mut 1)
        )
    }

    /// Binds the rows of `chunk` (one of [`Rows::chunks`]) for a query whose statements
    /// read, in order, the columns `statements` with [`Rows::cte`]: on SQLite each
    /// statement's columns of each row in turn, on PostgreSQL (one statement, numbered
    /// parameters) every column once.
    pub fn bind<'q>(
        &self,
        mut query: Query<'q>,
        chunk: &[Value<'q>],
        statements: &[&[&str]],
    ) -> Query<'q> {
        match BACKEND {
            Backend::Sqlite => {
                for columns in statements {
                    query = self.bind_columns(query, chunk, columns);
                }
                query
            }
            Backend::Postgres => self.bind_columns(query, chunk, self.names),
        }
    }

    /// Binds `columns` of each row of `chunk`, row after row.
    fn bind_columns<'q>(
        &self,
        mut query: Query<'q>,
        chunk: &[Value<'q>],
        columns: &[&str],
    ) -> Query<'q> {
        let at: Vec<usize> = columns.iter().map(|c| column_at(self.names, c)).collect();
        for row in chunk.chunks(self.names.len()) {
            for &c in &at {
                query = match row[c] {
                    Value::Int(v) => query.bind(v),
                    Value::Text(v) => query.bind(v),
                };
            }
        }
        query
    }
}

/// `(…), (…)`: `n` rows of `width` parameters; on PostgreSQL numbered from `*next`, which
/// moves past them.
pub fn values(n: usize, width: usize, next: &mut usize) -> String {
    use std::fmt::Write;
    let mut sql = String::new();
    for r in 0..n {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..width {
            let sep = if c == 0 { "" } else { ", " };
            match BACKEND {
                Backend::Sqlite => {
                    let _ = write!(sql, "{sep}?");
                }
                Backend::Postgres => {
                    let _ = write!(sql, "{sep}${next}");
                    *next += 1;
                }
            }
        }
        sql.push(')');
    }
    sql
}

/// Where `column` is among `names`.
fn column_at(names: &[&str], column: &str) -> usize {
    names
        .iter()
        .position(|name| *name == column)
        .expect("a column of the rows")
}

/// The statement text for `n` rows (1 to [`CHUNK`]) out of `cache`, which holds one per
/// row count, made by `build` the first time.
pub fn sized(
    cache: &'static std::sync::OnceLock<Vec<String>>,
    n: usize,
    build: impl Fn(usize) -> String,
) -> &'static str {
    &cache.get_or_init(|| (1..=CHUNK).map(build).collect())[n - 1]
}
