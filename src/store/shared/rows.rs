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
    /// by [`Rows::bind`] for each statement that names them; PostgreSQL numbered ones,
    /// bound once for its single statement.
    pub fn cte(names: &[&str], n: usize, columns: &[&str]) -> String {
        use std::fmt::Write;
        let mut sql = format!("WITH rows ({}) AS (VALUES ", columns.join(", "));
        for r in 0..n {
            sql.push_str(if r == 0 { "(" } else { ", (" });
            for (i, column) in columns.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                match BACKEND {
                    Backend::Sqlite => {
                        let _ = write!(sql, "{sep}?");
                    }
                    Backend::Postgres => {
                        let c = names
                            .iter()
                            .position(|name| name == column)
                            .expect("a column of the rows");
                        let _ = write!(sql, "{sep}${}", r * names.len() + c + 1);
                    }
                }
            }
            sql.push(')');
        }
        sql.push(')');
        sql
    }

    /// Binds `columns` of each row of `chunk` (one of [`Rows::chunks`]), row after row.
    pub fn bind<'q>(
        &self,
        mut query: Query<'q>,
        chunk: &[Value<'q>],
        columns: &[&str],
    ) -> Query<'q> {
        let at: Vec<usize> = columns
            .iter()
            .map(|column| {
                self.names
                    .iter()
                    .position(|name| name == column)
                    .expect("a column of the rows")
            })
            .collect();
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
