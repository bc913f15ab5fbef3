//! Redirect links: which destinations a link may send visitors to, and the address a
//! visitor is sent to.

/// The query parameter carrying the partner's code.
pub const AFF: &str = "aff";
/// The query parameter carrying the click id a redirect recorded, for the tracker.
pub const CLICK: &str = "rt_click";
/// The query parameter carrying the program's cookie window in days, so that the
/// tracker's cookie lasts as long as a click it records itself would.
pub const WINDOW: &str = "rt_window";

/// Longest destination URL accepted.
pub const MAX_DESTINATION_LEN: usize = 2048;

/// A destination URL as stored, or why it is refused: an absolute `http` or `https` URL
/// with a host and without credentials.
pub fn destination(url: &str) -> Result<String, &'static str> {
    const TEXT: &str = "must be an absolute http or https URL";
    let url = url.trim();
    if url.chars().count() > MAX_DESTINATION_LEN {
        return Err("must be at most 2048 characters");
    }
    let parsed = url::Url::parse(url).map_err(|_| TEXT)?;
    if !matches!(parsed.scheme(), "http" | "https")
        || parsed.host_str().is_none_or(str::is_empty)
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(TEXT);
    }
    Ok(parsed.to_string())
}

/// The click a redirect recorded, as the landing page's tracker reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedClick<'a> {
    pub click_id: &'a str,
    pub cookie_window_days: i64,
}

/// Where a redirect sends the visitor: the destination with its own query parameters,
/// then the request's (a request parameter replaces the destination's of the same name),
/// then `aff` with the partner's code and, when a click was recorded, `rt_click` and
/// `rt_window`. Those three are always Reftrack's: a request cannot set them.
pub fn location(
    destination: &str,
    request_query: Option<&str>,
    partner_code: &str,
    click: Option<RecordedClick<'_>>,
) -> Option<String> {
    let mut url = url::Url::parse(destination).ok()?;
    let ours = |k: &str| k == AFF || k == CLICK || k == WINDOW;
    let request: Vec<(String, String)> = request_query
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .filter(|(k, _)| !ours(k))
                .collect()
        })
        .unwrap_or_default();
    let own: Vec<(String, String)> = url
        .query_pairs()
        .into_owned()
        .filter(|(k, _)| !ours(k) && !request.iter().any(|(r, _)| r == k))
        .collect();
    {
        let mut q = url.query_pairs_mut();
        q.clear();
        q.extend_pairs(own.iter().chain(&request));
        q.append_pair(AFF, partner_code);
        if let Some(c) = click {
            q.append_pair(CLICK, c.click_id);
            q.append_pair(WINDOW, &c.cookie_window_days.to_string());
        }
    }
    Some(url.to_string())
}

/// The server's address as `REFTRACK_PUBLIC_URL` or an owner gives it: an `http://` or
/// `https://` URL with a host and no query, trimmed, without a trailing slash.
pub fn server_url(value: &str) -> Result<String, String> {
    let url = url::Url::parse(value.trim()).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() || url.query().is_some() {
        return Err("must be an http:// or https:// URL with a host and no query".into());
    }
    Ok(value.trim().trim_end_matches('/').to_string())
}

/// The address of a redirect link on the server at `public_url`: `<public_url>/r/` and the
/// short link as one path segment, every byte but the unreserved characters of a URL
/// (letters, digits, `-`, `.`, `_`, `~`) percent-encoded. `None` for `.` and `..`, which a
/// browser would take as a step in the path rather than a name.
pub fn link_url(public_url: &str, short_link: &str) -> Option<String> {
    if matches!(short_link, "." | "..") {
        return None;
    }
    let mut url = format!("{}/r/", public_url.trim_end_matches('/'));
    for b in short_link.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    Some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_absolute_web_urls() {
        assert_eq!(
            destination(" https://shop.example/landing?x=1 ").unwrap(),
            "https://shop.example/landing?x=1"
        );
        assert_eq!(
            destination("http://shop.example").unwrap(),
            "http://shop.example/"
        );
        for bad in [
            "shop.example",
            "/landing",
            "ftp://shop.example/",
            "javascript:alert(1)",
            "https://user:pw@shop.example/",
            "https://",
            "",
        ] {
            assert!(destination(bad).is_err(), "{bad:?}");
        }
        assert!(destination(&format!("https://x.io/{}", "a".repeat(2100))).is_err());
    }

    #[test]
    fn the_location_keeps_queries_and_adds_ours() {
        let click = RecordedClick {
            click_id: "cust_1_2",
            cookie_window_days: 30,
        };
        assert_eq!(
            location("https://shop.example/p?ref=x", Some("utm_source=tw&q=a%20b"), "alice", Some(click)).unwrap(),
            "https://shop.example/p?ref=x&utm_source=tw&q=a+b&aff=alice&rt_click=cust_1_2&rt_window=30"
        );
        assert_eq!(
            location("https://shop.example/", None, "alice", None).unwrap(),
            "https://shop.example/?aff=alice"
        );
    }

    #[test]
    fn the_request_overrides_the_destination_but_not_our_parameters() {
        assert_eq!(
            location(
                "https://shop.example/?utm_source=site&aff=old#top",
                Some("utm_source=mail&aff=mallory&rt_click=forged&rt_window=9"),
                "alice",
                None
            )
            .unwrap(),
            "https://shop.example/?utm_source=mail&aff=alice#top"
        );
    }

    #[test]
    fn a_link_url_carries_its_short_link_as_one_segment() {
        assert_eq!(
            link_url("https://go.example/", "alice-2024_x.y~z").as_deref(),
            Some("https://go.example/r/alice-2024_x.y~z")
        );
        assert_eq!(
            link_url("http://localhost:3000", "a/b?c#d %é").as_deref(),
            Some("http://localhost:3000/r/a%2Fb%3Fc%23d%20%25%C3%A9")
        );
        assert_eq!(
            link_url("https://go.example", "..."),
            Some("https://go.example/r/...".into())
        );
        assert_eq!(link_url("https://go.example", "."), None);
        assert_eq!(link_url("https://go.example", ".."), None);
    }
}
