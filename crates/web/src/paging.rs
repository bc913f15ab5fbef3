//! The paging of the management and partner lists: [`PageQuery`] for a list that only
//! pages, [`ListQuery`] for one that also exports as CSV.

use std::future::Future;

use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::downloads::{csv_stream, CsvChunks};
use super::error::{Error, Result};
use reftrack_service::PageParams;

/// The paging of a list that has no CSV form.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageQuery {
    /// The paging asked for.
    pub(super) fn page(self) -> PageParams {
        PageParams {
            limit: self.limit,
            cursor: self.cursor,
        }
    }
}

/// Paging and, on lists that export, `format`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Rows per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// `csv`: every matching row as `text/csv` with a header row, instead of a page.
    pub format: Option<String>,
}

impl ListQuery {
    /// The paging asked for.
    pub(super) fn page(&self) -> PageParams {
        PageParams {
            limit: self.limit.clone(),
            cursor: self.cursor.clone(),
        }
    }

    /// Whether the list is asked for as CSV; another format is a 400.
    pub(super) fn csv(&self) -> Result<bool> {
        match self.format.as_deref().map(str::trim) {
            None | Some("") | Some("json") => Ok(false),
            Some("csv") => Ok(true),
            Some(_) => Err(Error::bad_request("format must be csv or json")),
        }
    }

    /// The answer of a list that exports: with `format=csv` every row of `export`, as the
    /// download `file_name` written by `write` ([`csv_stream`]), else the JSON page of
    /// `page`. Only the one asked for is read.
    pub(super) async fn page_or_csv<P: Serialize, T: Send + 'static>(
        &self,
        page: impl Future<Output = reftrack_service::Result<P>>,
        export: impl Future<Output = reftrack_service::Result<CsvChunks<T>>>,
        file_name: String,
        write: fn(&[T], bool) -> Vec<u8>,
    ) -> Result<Response> {
        if self.csv()? {
            return Ok(csv_stream(&file_name, export.await?, write));
        }
        Ok(Json(page.await?).into_response())
    }
}
