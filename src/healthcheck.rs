//! `reftrack healthcheck [URL]`: asks a running server whether it is ready (`GET
//! /readyz`, 200 when its database answers) and exits 0 if so, 1 if not. Container images
//! without an HTTP client use it as their health check.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use axum::body::Body;
use axum::http::{header, Request, StatusCode, Uri};
use clap::Args;
use hyper_util::rt::TokioIo;

/// Options of `reftrack healthcheck`.
#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// The URL to ask (plain `http://`): its `/readyz` when it has no path
    /// (`http://127.0.0.1:8080`), else the path it names; by default `/readyz` at the
    /// address the server listens on (`REFTRACK_LISTEN`), through loopback when that is a
    /// wildcard address.
    pub url: Option<String>,
    /// The server's listening address, for the default URL.
    #[arg(long, env = "REFTRACK_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 5)]
    pub timeout: u64,
}

/// Runs the check: `Ok` when the answer is 200, an error saying what came instead.
pub async fn run(args: HealthcheckArgs) -> anyhow::Result<()> {
    let url = args
        .url
        .map_or_else(|| default_url(args.listen), |url| readiness_url(&url));
    let uri: Uri = url.parse().map_err(|e| anyhow!("not a URL: {url}: {e}"))?;
    let wait = Duration::from_secs(args.timeout.max(1));
    let status = tokio::time::timeout(wait, get(&uri))
        .await
        .map_err(|_| {
            anyhow!(
                "not ready: {url} did not answer within {} s",
                wait.as_secs()
            )
        })?
        .with_context(|| format!("not ready: {url}"))?;
    if status != StatusCode::OK {
        bail!("not ready: {url} answered {status}");
    }
    println!("ready: {url}");
    Ok(())
}

/// `/readyz` at `listen`, with a wildcard address replaced by loopback.
fn default_url(listen: SocketAddr) -> String {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}/readyz", SocketAddr::new(ip, listen.port()))
}

/// The URL asked for `url`: `/readyz` of a URL without a path (or with just `/`), any
/// other as it is.
fn readiness_url(url: &str) -> String {
    match url.parse::<Uri>() {
        Ok(uri)
            if uri.authority().is_some()
                && uri.path_and_query().is_none_or(|p| p.as_str() == "/") =>
        {
            format!("{}/readyz", url.trim_end_matches('/'))
        }
        _ => url.to_string(),
    }
}

/// The status of `GET uri` over one HTTP/1.1 connection.
async fn get(uri: &Uri) -> anyhow::Result<StatusCode> {
    if uri.scheme_str() != Some("http") {
        bail!("only http:// URLs are checked (the check runs beside the server)");
    }
    let authority = uri
        .authority()
        .ok_or_else(|| anyhow!("the URL names no host"))?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let stream = tokio::net::TcpStream::connect((host, authority.port_u16().unwrap_or(80))).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake::<_, Body>(TokioIo::new(stream)).await?;
    let connection = tokio::spawn(connection);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = Request::get(path)
        .header(header::HOST, authority.as_str())
        .body(Body::empty())?;
    let status = sender.send_request(request).await?.status();
    connection.abort();
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_url_reaches_a_wildcard_listener_through_loopback() {
        let url = |s: &str| default_url(s.parse().unwrap());
        assert_eq!(url("0.0.0.0:8080"), "http://127.0.0.1:8080/readyz");
        assert_eq!(url("[::]:9000"), "http://[::1]:9000/readyz");
        assert_eq!(url("10.1.2.3:80"), "http://10.1.2.3:80/readyz");
    }

    #[test]
    fn a_url_without_a_path_asks_readyz() {
        for (given, asked) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/readyz"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/readyz"),
            ("http://[::1]:9000", "http://[::1]:9000/readyz"),
            (
                "http://127.0.0.1:8080/readyz",
                "http://127.0.0.1:8080/readyz",
            ),
            (
                "http://127.0.0.1:8080/healthz",
                "http://127.0.0.1:8080/healthz",
            ),
            ("http://127.0.0.1:8080/?x=1", "http://127.0.0.1:8080/?x=1"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(readiness_url(given), asked, "{given}");
        }
    }
}
