//! Pages of the management lists: the `limit` and `cursor` of a call, the page it
//! answers, and the chunks a streamed CSV export reads.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{Error, Result};
use reftrack_store::{Page, Store, StoreResult};

/// The rows a streamed export reads per query.
pub(super) const EXPORT_CHUNK: i64 = 1000;

/// The paging of a list call: `limit` 1–100 (default 50) and the `cursor` of the
/// previous page's `next_cursor`.
#[derive(Debug, Default, Clone)]
pub struct PageParams {
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

/// One page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct Listed<T> {
    pub data: Vec<T>,
    /// The `cursor` of the next page; null on the last.
    pub next_cursor: Option<String>,
}

impl PageParams {
    /// The page these parameters ask for; one row more than the limit is read, to know
    /// whether another page follows.
    pub(super) fn page(&self) -> Result<Page> {
        // An integer parameter is an integer when given: empty or padded is refused, as
        // the API description's type says.
        let limit = match self.limit.as_deref() {
            None => 50,
            Some(l) => l
                .parse()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| Error::invalid("limit must be an integer from 1 to 100"))?,
        };
        let before = match self.cursor.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(c) => Some(
                c.parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| Error::invalid("cursor is not a next_cursor of this list"))?,
            ),
        };
        Ok(Page { limit, before })
    }
}

/// Cuts a page read with one extra row to its limit, with the cursor of what follows.
pub(super) fn listed<T>(mut rows: Vec<T>, page: Page, key: impl Fn(&T) -> i64) -> Listed<T> {
    let more = rows.len() as i64 > page.limit;
    rows.truncate(page.limit as usize);
    let next_cursor = match rows.last() {
        Some(last) if more => Some(key(last).to_string()),
        _ => None,
    };
    Listed {
        data: rows,
        next_cursor,
    }
}

/// Reads one page with one extra row.
pub(super) fn probe(page: Page) -> Page {
    Page {
        limit: page.limit + 1,
        ..page
    }
}

/// An optional id filter: absent is `None`, else a positive integer (empty is refused).
pub(super) fn id_filter(field: &str, value: Option<&str>) -> Result<Option<i64>> {
    match value {
        None => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| Error::invalid(format!("{field} must be a positive integer"))),
    }
}

/// An optional filter naming one value of a closed set.
pub(super) fn named_filter<T>(field: &str, value: Option<&str>) -> Result<Option<T>>
where
    T: std::str::FromStr<Err = reftrack_domain::status::UnknownValue>,
{
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse::<T>()
            .map(Some)
            .map_err(|e| Error::invalid(e.message(field))),
    }
}

/// A stream of the chunks `fetch` reads from `store`, each the page of [`EXPORT_CHUNK`]
/// rows after the last `key` of the one before, until one comes back short.
pub(super) fn chunks<T, F>(
    store: Arc<dyn Store>,
    fetch: F,
    key: fn(&T) -> i64,
) -> BoxStream<'static, Result<Vec<T>>>
where
    T: Send + 'static,
    F: Fn(Arc<dyn Store>, Page) -> BoxFuture<'static, StoreResult<Vec<T>>> + Send + 'static,
{
    stream::unfold(Some(None), move |next: Option<Option<i64>>| {
        let read = next.map(|before| {
            let page = Page {
                limit: EXPORT_CHUNK,
                before,
            };
            fetch(store.clone(), page)
        });
        async move {
            let rows = match read?.await {
                Ok(rows) => rows,
                Err(e) => return Some((Err(e.into()), None)),
            };
            let after = match rows.last() {
                Some(last) if rows.len() as i64 == EXPORT_CHUNK => Some(Some(key(last))),
                _ => None,
            };
            if rows.is_empty() {
                return None;
            }
            Some((Ok(rows), after))
        }
    })
    .boxed()
}
