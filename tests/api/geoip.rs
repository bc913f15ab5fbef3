//! Server-side geo from a MaxMind-format database (`REFTRACK_GEOIP_DB`), used when no
//! trusted CDN header gives it. The test writes a tiny database itself.

use std::net::SocketAddr;

use crate::common::*;
use axum::extract::ConnectInfo;
use reftrack::http::client_ip::ClientResolver;
use serde_json::json;

/// MaxMind DB encoding of the few types the test needs.
enum V<'a> {
    Str(&'a str),
    U16(u16),
    U32(u32),
    U64(u64),
    Map(Vec<(&'a str, V<'a>)>),
    Arr(Vec<V<'a>>),
}

fn encode(v: &V, out: &mut Vec<u8>) {
    fn uint(kind: u8, n: u64, extended: bool, out: &mut Vec<u8>) {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        if extended {
            out.push(bytes.len() as u8);
            out.push(kind - 7);
        } else {
            out.push(kind << 5 | bytes.len() as u8);
        }
        out.extend(bytes);
    }
    match v {
        V::Str(s) => {
            out.push(2 << 5 | s.len() as u8);
            out.extend(s.as_bytes());
        }
        V::U16(n) => uint(5, *n as u64, false, out),
        V::U32(n) => uint(6, *n as u64, false, out),
        V::U64(n) => uint(9, *n, true, out),
        V::Map(entries) => {
            out.push(7 << 5 | entries.len() as u8);
            for (k, v) in entries {
                encode(&V::Str(k), out);
                encode(v, out);
            }
        }
        V::Arr(items) => {
            out.push(items.len() as u8);
            out.push(11 - 7);
            for i in items {
                encode(i, out);
            }
        }
    }
}

/// An IPv4 database in which only `prefix`/24 has a record: country DE, region BE,
/// city Berlin.
fn write_mmdb(prefix: [u8; 3]) -> Vec<u8> {
    let node_count: u32 = 24;
    let mut data = Vec::new();
    encode(
        &V::Map(vec![
            (
                "city",
                V::Map(vec![("names", V::Map(vec![("en", V::Str("Berlin"))]))]),
            ),
            ("country", V::Map(vec![("iso_code", V::Str("DE"))])),
            (
                "subdivisions",
                V::Arr(vec![V::Map(vec![("iso_code", V::Str("BE"))])]),
            ),
        ]),
        &mut data,
    );
    let bits: Vec<bool> = prefix
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1 == 1))
        .collect();
    let mut out = Vec::new();
    for (depth, bit) in bits.iter().enumerate() {
        // Node `depth`: the path bit leads on, the other side has no data.
        let next = if depth + 1 == bits.len() {
            node_count + 16
        } else {
            depth as u32 + 1
        };
        let (left, right) = if *bit {
            (node_count, next)
        } else {
            (next, node_count)
        };
        out.extend(&left.to_be_bytes()[1..]);
        out.extend(&right.to_be_bytes()[1..]);
    }
    out.extend([0u8; 16]);
    out.extend(data);
    out.extend(b"\xAB\xCD\xEFMaxMind.com");
    encode(
        &V::Map(vec![
            ("binary_format_major_version", V::U16(2)),
            ("binary_format_minor_version", V::U16(0)),
            ("build_epoch", V::U64(1_700_000_000)),
            ("database_type", V::Str("GeoIP2-City")),
            ("description", V::Map(vec![("en", V::Str("reftrack test"))])),
            ("ip_version", V::U16(4)),
            ("languages", V::Arr(vec![V::Str("en")])),
            ("node_count", V::U32(node_count)),
            ("record_size", V::U16(24)),
        ]),
        &mut out,
    );
    out
}

on_both_backends!(geo_from_the_geoip_database_for_the_peer);
async fn geo_from_the_geoip_database_for_the_peer(app: TestApp) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.mmdb");
    std::fs::write(&path, write_mmdb([203, 0, 113])).unwrap();
    let app = app.with_resolver(ClientResolver::new(None, Some(&path)).unwrap());
    let seed = app.seed().await;
    for (peer, forwarded) in [
        ("203.0.113.7:5000", "198.51.100.1"),
        ("198.51.100.1:5000", "203.0.113.7"),
    ] {
        let mut req = axum::http::Request::post("/api/v1/track/click")
            .header("content-type", "application/json")
            // Not a trusted proxy: its forwarding header is ignored.
            .header("x-forwarded-for", forwarded)
            .body(axum::body::Body::from(
                json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link)})
                    .to_string(),
            ))
            .unwrap();
        req.extensions_mut()
            .insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        app.raw(req).await.expect(200);
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE geo_country = 'DE' AND geo_region = 'BE' AND geo_city = 'Berlin'").await,
        1
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE geo_country IS NULL")
            .await,
        1
    );
}
