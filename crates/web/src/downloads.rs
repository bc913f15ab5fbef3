//! CSV downloads: the headers every download is answered with ([`csv_response`]), and
//! an export streamed a chunk of rows at a time ([`csv_stream`]).

use axum::body::{Body, Bytes};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS,
};
use axum::response::{IntoResponse, Response};
use futures::stream::BoxStream;
use futures::StreamExt;

/// The rows of a CSV export, a chunk at a time.
pub(super) type CsvChunks<T> = BoxStream<'static, reftrack_service::Result<Vec<T>>>;

/// A `text/csv` answer of `file_name`, every download's: kept out of caches (a
/// shared or back-button copy of partners' payout details outlives the session that
/// asked for it) and never sniffed into something a browser would run.
pub(super) fn csv_response(file_name: &str, body: Body) -> Response {
    (
        [
            (CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file_name}\""),
            ),
            (CACHE_CONTROL, "no-store".to_string()),
            (X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        body,
    )
        .into_response()
}

/// A CSV answer streamed from `chunks`, each written by `write` (the first with the
/// header row). An error after the first byte ends the answer early: it is logged, and
/// the client sees a cut-off download rather than a wrong file.
pub(super) fn csv_stream<T: Send + 'static>(
    file_name: &str,
    chunks: CsvChunks<T>,
    write: fn(&[T], bool) -> Vec<u8>,
) -> Response {
    let header = Bytes::from(write(&[], true));
    let rows = chunks.map(move |chunk| match chunk {
        Ok(rows) => Ok(Bytes::from(write(&rows, false))),
        Err(e) => {
            tracing::error!(error = %e, "CSV export stopped");
            Err(std::io::Error::other("export stopped"))
        }
    });
    let body = futures::stream::once(async move { Ok(header) }).chain(rows);
    csv_response(file_name, Body::from_stream(body))
}
