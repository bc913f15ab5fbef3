//! Who is calling: the client IP and its geo, believed from proxy and CDN headers only
//! when the direct peer is a trusted proxy (`REFTRACK_TRUSTED_PROXIES`).

use std::net::IpAddr;
use std::path::Path;
use std::str::FromStr;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// Peers whose forwarding headers are believed.
#[derive(Debug, Clone, PartialEq)]
pub enum TrustedProxies {
    /// Any peer (`*`): for deployments reachable only through the proxy.
    Any,
    /// Peers within these networks.
    Nets(Vec<IpNet>),
}

impl FromStr for TrustedProxies {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim() == "*" {
            return Ok(TrustedProxies::Any);
        }
        let nets = s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                p.parse::<IpNet>()
                    .or_else(|_| p.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("not an IP address or CIDR: {p}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if nets.is_empty() {
            return Err("expected `*` or a comma-separated list of IPs/CIDRs".into());
        }
        Ok(TrustedProxies::Nets(nets))
    }
}

impl TrustedProxies {
    /// Whether `ip` is a trusted proxy.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match self {
            TrustedProxies::Any => true,
            TrustedProxies::Nets(nets) => nets.iter().any(|n| n.contains(&ip)),
        }
    }
}

/// Geo of a client, as far as known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Geo {
    pub country: Option<String>,
    pub region: Option<String>,
    pub city: Option<String>,
}

/// Resolves client IP and geo for a request.
pub struct ClientResolver {
    trusted: Option<TrustedProxies>,
    geoip: Option<maxminddb::Reader<Vec<u8>>>,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// A header value as stored text: bounded, and URL-decoded where CDNs encode it.
fn geo_header(headers: &HeaderMap, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| header(headers, n)).map(|v| {
        let decoded = url::form_urlencoded::parse(format!("v={v}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| v.to_string());
        super::fields::truncate(&decoded, 128)
    })
}

impl ClientResolver {
    /// Builds a resolver; opens the GeoIP database when a path is given.
    pub fn new(trusted: Option<TrustedProxies>, geoip: Option<&Path>) -> anyhow::Result<Self> {
        let geoip = match geoip {
            Some(path) => Some(maxminddb::Reader::open_readfile(path).map_err(|e| {
                anyhow::anyhow!("cannot open GeoIP database {}: {e}", path.display())
            })?),
            None => None,
        };
        Ok(ClientResolver { trusted, geoip })
    }

    fn peer_trusted(&self, peer: Option<IpAddr>) -> bool {
        match (&self.trusted, peer) {
            (Some(TrustedProxies::Any), _) => true,
            (Some(t), Some(ip)) => t.contains(ip),
            _ => false,
        }
    }

    /// The client's IP: the peer's, unless the peer is a trusted proxy, in which case the
    /// CDN's client header or the nearest untrusted hop of `X-Forwarded-For`.
    pub fn client_ip(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        if !self.peer_trusted(peer) {
            return peer;
        }
        for name in ["cf-connecting-ip", "true-client-ip", "x-real-ip"] {
            if let Some(ip) = header(headers, name).and_then(|v| v.parse().ok()) {
                return Some(ip);
            }
        }
        let hops: Vec<IpAddr> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        // Walk back from the nearest hop past our own proxies; with `*` every hop is
        // ours, so the client is the first.
        let client = match &self.trusted {
            Some(TrustedProxies::Nets(nets)) => hops
                .iter()
                .rev()
                .find(|ip| !nets.iter().any(|n| n.contains(*ip)))
                .or(hops.first()),
            _ => hops.first(),
        };
        client.copied().or(peer)
    }

    /// Geo from CDN headers of a trusted proxy, else from the GeoIP database, else empty.
    pub fn geo(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Geo {
        if self.peer_trusted(peer) {
            let g = Geo {
                country: geo_header(
                    headers,
                    &[
                        "cf-ipcountry",
                        "x-vercel-ip-country",
                        "cloudfront-viewer-country",
                        "x-country-code",
                    ],
                )
                .filter(|c| c != "XX" && c != "T1"),
                region: geo_header(
                    headers,
                    &[
                        "cf-region-code",
                        "cf-region",
                        "x-vercel-ip-country-region",
                        "cloudfront-viewer-country-region",
                    ],
                ),
                city: geo_header(
                    headers,
                    &["cf-ipcity", "x-vercel-ip-city", "cloudfront-viewer-city"],
                ),
            };
            if g != Geo::default() {
                return g;
            }
        }
        match (&self.geoip, self.client_ip(peer, headers)) {
            (Some(reader), Some(ip)) => lookup(reader, ip),
            _ => Geo::default(),
        }
    }
}

fn lookup(reader: &maxminddb::Reader<Vec<u8>>, ip: IpAddr) -> Geo {
    let Ok(city) = reader.lookup::<maxminddb::geoip2::City>(ip) else {
        return Geo::default();
    };
    let en = |names: Option<std::collections::BTreeMap<&str, &str>>| {
        names.and_then(|n| n.get("en").map(|s| s.to_string()))
    };
    Geo {
        country: city
            .country
            .as_ref()
            .and_then(|c| c.iso_code)
            .map(str::to_string),
        region: city
            .subdivisions
            .as_ref()
            .and_then(|s| s.first())
            .and_then(|s| {
                s.iso_code
                    .map(str::to_string)
                    .or_else(|| en(s.names.clone()))
            }),
        city: city.city.and_then(|c| en(c.names)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn untrusted_peer_headers_are_ignored() {
        let r = ClientResolver::new(None, None).unwrap();
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        let h = headers(&[("x-forwarded-for", "1.2.3.4"), ("cf-ipcountry", "US")]);
        assert_eq!(r.client_ip(Some(peer), &h), Some(peer));
        assert_eq!(r.geo(Some(peer), &h), Geo::default());
        // Trusted list that does not include the peer: still ignored.
        let r = ClientResolver::new(Some("10.0.0.0/8".parse().unwrap()), None).unwrap();
        assert_eq!(r.client_ip(Some(peer), &h), Some(peer));
    }

    #[test]
    fn trusted_proxy_headers_are_used() {
        let r = ClientResolver::new(Some("10.0.0.0/8, 127.0.0.1".parse().unwrap()), None).unwrap();
        let proxy: IpAddr = "10.1.2.3".parse().unwrap();
        let h = headers(&[("x-forwarded-for", "198.51.100.7, 10.9.9.9")]);
        assert_eq!(
            r.client_ip(Some(proxy), &h),
            Some("198.51.100.7".parse().unwrap())
        );
        let h = headers(&[
            ("cf-connecting-ip", "198.51.100.8"),
            ("cf-ipcountry", "DE"),
            ("x-vercel-ip-city", "M%C3%BCnchen"),
        ]);
        assert_eq!(
            r.client_ip(Some(proxy), &h),
            Some("198.51.100.8".parse().unwrap())
        );
        let g = r.geo(Some(proxy), &h);
        assert_eq!(g.country.as_deref(), Some("DE"));
        assert_eq!(g.city.as_deref(), Some("München"));
    }

    #[test]
    fn parse_trusted_proxies() {
        assert_eq!("*".parse::<TrustedProxies>(), Ok(TrustedProxies::Any));
        assert!("nonsense".parse::<TrustedProxies>().is_err());
        assert!("".parse::<TrustedProxies>().is_err());
        let t: TrustedProxies = "::1, 192.168.0.0/16".parse().unwrap();
        assert!(t.contains("192.168.4.4".parse().unwrap()));
        assert!(t.contains("::1".parse().unwrap()));
        assert!(!t.contains("8.8.8.8".parse().unwrap()));
    }
}
