//! The binary's connection timeouts: a connection that does not send its request headers
//! in time is closed, and so is a kept-alive connection idle for longer than its own,
//! longer, time (docs/deploy.md, "Connection timeouts").

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::server::Server;

const ADMIN: &str = "rta_connection_timeouts_0123456789";

/// What the server sends on `stream` until it closes it, or `None` if it is still open
/// after `limit`.
async fn until_closed(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Sends a complete `GET /healthz` on `stream` and reads its whole answer.
async fn health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: reftrack.test\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    loop {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(
            n > 0,
            "closed before answering: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("a content-length");
            if body.len() >= length {
                return text;
            }
        }
    }
}

async fn timeouts(url: String) {
    let server = Server::on(
        &url,
        ADMIN,
        &[
            ("REFTRACK_HEADER_TIMEOUT", "1"),
            ("REFTRACK_KEEP_ALIVE_TIMEOUT", "3"),
        ],
    );
    let addr = server.listen().to_string();

    // Half a request line, then nothing: closed after the header time, unanswered.
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    let opened = Instant::now();
    slow.write_all(b"GET /healthz HT").await.unwrap();
    let sent = until_closed(&mut slow, Duration::from_secs(10))
        .await
        .expect("the half-sent request's connection is closed");
    let took = opened.elapsed();
    assert!(sent.is_empty(), "{:?}", String::from_utf8_lossy(&sent));
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // A connection that sends nothing at all is closed as well.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    assert!(until_closed(&mut silent, Duration::from_secs(10))
        .await
        .is_some());

    // A kept-alive connection outlives the header time while idle, serves its next
    // request, and is closed after the idle time.
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    assert!(health(&mut kept).await.starts_with("HTTP/1.1 200"));
    assert!(
        until_closed(&mut kept, Duration::from_secs(2))
            .await
            .is_none(),
        "a kept-alive connection was closed after the header time"
    );
    assert!(health(&mut kept).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    let sent = until_closed(&mut kept, Duration::from_secs(10))
        .await
        .expect("the idle connection is closed");
    assert!(sent.is_empty());
    let idle = answered.elapsed();
    assert!(
        idle >= Duration::from_millis(2900) && idle < Duration::from_secs(7),
        "{idle:?}"
    );

    // The server itself is unaffected.
    let mut fresh = TcpStream::connect(&addr).await.unwrap();
    assert!(health(&mut fresh).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn slow_headers_and_idle_connections_are_closed_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("reftrack.db").display());
    timeouts(url).await;
}

#[tokio::test]
async fn slow_headers_and_idle_connections_are_closed_on_postgres() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(url.clone(), timeouts(url)).await;
}
