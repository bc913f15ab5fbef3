//! Redirect links, `GET /r/{short_link}`: a person's visit is a click and a 302 to the
//! destination with `aff`, `rt_click` and the request's query; `HEAD`, crawlers and
//! link-preview fetchers are sent on without a click; links that lead nowhere are an HTML
//! 404 page. And the destinations of programs and links in the management API.

use crate::common::*;
use reftrack::config::RateLimitArgs;
use reftrack::http::client_ip::ClientResolver;
use serde_json::json;

const BROWSER: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

/// User agents as the crawlers and link-preview fetchers send them.
const CRAWLERS: &[(&str, &str)] = &[
    ("Slack", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"),
    ("Discord", "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"),
    ("Twitter/X", "Twitterbot/1.0"),
    ("Facebook", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"),
    ("LinkedIn", "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)"),
    ("WhatsApp", "WhatsApp/2.23.20.0 A"),
    ("Telegram", "TelegramBot (like TwitterBot)"),
    ("Google", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
    ("Bing", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"),
];

/// The query parameters of a `Location`, in order.
fn query_of(location: &str) -> Vec<(String, String)> {
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

fn param<'a>(q: &'a [(String, String)], name: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A GET (or HEAD) of a redirect link with these headers; returns the status and
/// `Location`.
async fn visit(app: &TestApp, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    app.send(method, path, None, headers).await
}

async fn link_clicks(app: &TestApp, program_id: i64) -> i64 {
    let links = app
        .admin("GET", &format!("/links?program_id={program_id}"), None)
        .await
        .expect(200);
    links.body["data"][0]["clicks"].as_i64().unwrap()
}

#[track_caller]
fn assert_html_404(r: &Reply) {
    assert_eq!(r.status.as_u16(), 404, "{:?}", r.body);
    let kind = r.headers["content-type"].to_str().unwrap();
    assert!(kind.starts_with("text/html"), "{kind}");
    let body = r.body.as_str().expect("an HTML page, not JSON");
    assert!(body.contains("<h1>Link not found</h1>"), "{body}");
}

on_both_backends!(crawlers_and_head_are_sent_on_without_a_click);
async fn crawlers_and_head_are_sent_on_without_a_click(app: TestApp) {
    let seed = app
        .seed_with(json!({"destination_url": "https://shop.example/landing?ref=site"}))
        .await;
    let path = format!("/r/{}?utm_source=tw&q=a%20b", seed.short_link);
    for (who, ua) in CRAWLERS {
        let r = visit(&app, "GET", &path, &[("user-agent", ua)])
            .await
            .expect(302);
        let location = r.headers["location"].to_str().unwrap();
        let q = query_of(location);
        assert_eq!(
            param(&q, "aff"),
            Some(seed.short_link.as_str()),
            "{who}: {location}"
        );
        assert_eq!(
            param(&q, "rt_click"),
            None,
            "{who}: no click id for a crawler"
        );
        assert_eq!(param(&q, "utm_source"), Some("tw"), "{who}");
        assert_eq!(param(&q, "ref"), Some("site"), "{who}");
    }
    // HEAD from a browser: sent on, not counted.
    let r = visit(&app, "HEAD", &path, &[("user-agent", BROWSER)])
        .await
        .expect(302);
    let q = query_of(r.headers["location"].to_str().unwrap());
    assert_eq!(param(&q, "rt_click"), None);
    assert_eq!(param(&q, "aff"), Some(seed.short_link.as_str()));
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        0
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 0);
    assert_eq!(link_clicks(&app, seed.program_id).await, 0);
}

on_both_backends!(a_browser_visit_is_a_click_and_a_302_with_aff_rt_click_and_the_query);
async fn a_browser_visit_is_a_click_and_a_302_with_aff_rt_click_and_the_query(app: TestApp) {
    let seed = app
        .seed_with(json!({"destination_url": "https://shop.example/landing?ref=site", "cookie_window_days": 30}))
        .await;
    let path = format!(
        "/r/{}?utm_source=newsletter&q=a%20b&aff=forged&rt_click=forged",
        seed.short_link
    );
    let r = visit(
        &app,
        "GET",
        &path,
        &[
            ("user-agent", BROWSER),
            ("referer", "https://blog.example/post"),
        ],
    )
    .await
    .expect(302);
    assert_eq!(r.headers["cache-control"], "private, no-store");
    let location = r.headers["location"].to_str().unwrap();
    assert!(
        location.starts_with("https://shop.example/landing?"),
        "{location}"
    );
    let q = query_of(location);
    assert_eq!(param(&q, "ref"), Some("site"));
    assert_eq!(param(&q, "utm_source"), Some("newsletter"));
    assert_eq!(param(&q, "q"), Some("a b"));
    assert_eq!(
        param(&q, "aff"),
        Some(seed.short_link.as_str()),
        "ours, not the request's"
    );
    assert_eq!(q.iter().filter(|(k, _)| k == "aff").count(), 1);
    assert_eq!(param(&q, "rt_window"), Some("30"));
    let click_id = param(&q, "rt_click").unwrap();
    assert!(
        reftrack::domain::click_id::is_well_formed(click_id),
        "{click_id}"
    );

    // Recorded as the click API records a click: customer, event, counters.
    assert_eq!(link_clicks(&app, seed.program_id).await, 1);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM customers WHERE click_id = '{click_id}' AND customer_status = 'click'"
        ))
        .await,
        1
    );
    // The click's page is the landing page the visitor was sent to.
    let landing = format!(
        "https://shop.example/landing?ref=site&utm_source=newsletter&q=a+b&aff={}",
        seed.short_link
    );
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM affiliate_click_events WHERE referrer_url = 'https://blog.example/post' \
                 AND device_type = 'desktop' AND browser_name = 'Chrome' AND page_url = '{landing}' \
                 AND click_id = '{click_id}'"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT total_clicks FROM partner_programs").await,
        1
    );
    assert_eq!(app.count("SELECT clicks FROM daily_rollups").await, 1);

    // The click attributes what follows, like any click: a lead and a sale.
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": "bob"}),
    )
    .await
    .expect(200);
    let sale = app
        .post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": "t1", "amount_cents": 1000, "customer_key": "bob"}),
        )
        .await
        .expect(200);
    assert!(sale.body["commission_id"].is_i64());

    // `aff` is the partner's code, whatever the link's short name.
    app.admin("POST", "/links", Some(json!({"program_id": seed.program_id, "partner_id": seed.partner_id, "short_link": "podcast-ep-12"})))
        .await
        .expect(201);
    let r = visit(&app, "GET", "/r/podcast-ep-12", &[("user-agent", BROWSER)])
        .await
        .expect(302);
    let q = query_of(r.headers["location"].to_str().unwrap());
    assert_eq!(
        param(&q, "aff"),
        Some(seed.short_link.as_str()),
        "the seed's partner code"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_click_events e JOIN referral_links l ON l.id = e.link_id WHERE l.short_link = 'podcast-ep-12'").await, 1);

    // Each visit is a click of its own.
    visit(
        &app,
        "GET",
        &format!("/r/{}", seed.short_link),
        &[("user-agent", BROWSER)],
    )
    .await
    .expect(302);
    assert_eq!(
        app.count(&format!(
            "SELECT clicks FROM referral_links WHERE short_link = '{}'",
            seed.short_link
        ))
        .await,
        2
    );
}

on_both_backends!(links_that_lead_nowhere_are_an_html_404);
async fn links_that_lead_nowhere_are_an_html_404(app: TestApp) {
    let seed = app.seed().await;
    let browser = [("user-agent", BROWSER)];
    // Unknown link.
    assert_html_404(&visit(&app, "GET", "/r/nobody", &browser).await);
    assert_html_404(&visit(&app, "GET", "/r/%FF%FE", &browser).await);
    // A known link, but neither it nor its program has a destination.
    assert_html_404(&visit(&app, "GET", &format!("/r/{}", seed.short_link), &browser).await);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        0
    );

    // The program's destination; then the link's own wins; cleared, the program's again.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"destination_url": "https://shop.example/"})),
    )
    .await
    .expect(200);
    let r = visit(&app, "GET", &format!("/r/{}", seed.short_link), &browser)
        .await
        .expect(302);
    assert!(r.headers["location"]
        .to_str()
        .unwrap()
        .starts_with("https://shop.example/?aff="));
    let link_id = app.link_id(&seed.short_link).await;
    let l = app
        .admin(
            "PATCH",
            &format!("/links/{link_id}"),
            Some(json!({"destination_url": "https://podcast.example/offer"})),
        )
        .await
        .expect(200);
    assert_eq!(l.body["destination_url"], "https://podcast.example/offer");
    assert_eq!(
        l.body["status"], "active",
        "a patch of the destination leaves the status"
    );
    let r = visit(&app, "GET", &format!("/r/{}", seed.short_link), &browser)
        .await
        .expect(302);
    assert!(r.headers["location"]
        .to_str()
        .unwrap()
        .starts_with("https://podcast.example/offer?aff="));
    app.admin(
        "PATCH",
        &format!("/links/{link_id}"),
        Some(json!({"destination_url": null})),
    )
    .await
    .expect(200);
    let r = visit(&app, "GET", &format!("/r/{}", seed.short_link), &browser)
        .await
        .expect(302);
    assert!(r.headers["location"]
        .to_str()
        .unwrap()
        .starts_with("https://shop.example/?aff="));

    // An inactive link leads nowhere, and counts nothing.
    let clicks = link_clicks(&app, seed.program_id).await;
    app.admin(
        "PATCH",
        &format!("/links/{link_id}"),
        Some(json!({"status": "inactive"})),
    )
    .await
    .expect(200);
    assert_html_404(&visit(&app, "GET", &format!("/r/{}", seed.short_link), &browser).await);
    assert_eq!(link_clicks(&app, seed.program_id).await, clicks);
    // A link without a partner leads nowhere either.
    app.admin(
        "POST",
        "/links",
        Some(json!({"program_id": seed.program_id, "short_link": "orphan"})),
    )
    .await
    .expect(201);
    assert_html_404(&visit(&app, "GET", "/r/orphan", &browser).await);
    // Only GET and HEAD.
    let r = app
        .send(
            "POST",
            &format!("/r/{}", seed.short_link),
            Some(json!({})),
            &[],
        )
        .await;
    assert_eq!(r.status.as_u16(), 405);
}

on_both_backends!(destinations_are_validated_shown_and_cleared);
async fn destinations_are_validated_shown_and_cleared(app: TestApp) {
    let ws = app
        .admin("POST", "/workspaces", Some(json!({"name": "W"})))
        .await
        .expect(201);
    let text = "destination_url must be an absolute http or https URL";
    for bad in [
        "shop.example",
        "ftp://shop.example/",
        "javascript:alert(1)",
        "https://u:p@shop.example/",
        "",
    ] {
        let r = app
            .admin(
                "POST",
                "/programs",
                Some(json!({"workspace_id": ws.body["id"], "name": "P", "destination_url": bad})),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), text, "{bad}");
    }
    let p = app
        .admin("POST", "/programs", Some(json!({"workspace_id": ws.body["id"], "name": "P", "destination_url": " https://shop.example/a?x=1 "})))
        .await
        .expect(201);
    assert_eq!(p.body["destination_url"], "https://shop.example/a?x=1");
    let id = p.body["id"].as_i64().unwrap();
    let shown = app
        .admin("GET", &format!("/programs/{id}"), None)
        .await
        .expect(200);
    assert_eq!(shown.body["destination_url"], "https://shop.example/a?x=1");
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{id}"),
            Some(json!({"destination_url": "mailto:a@b.c"})),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), text);
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{id}"),
            Some(json!({"name": "Q"})),
        )
        .await
        .expect(200);
    assert_eq!(
        r.body["destination_url"], "https://shop.example/a?x=1",
        "absent: unchanged"
    );
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{id}"),
            Some(json!({"destination_url": null})),
        )
        .await
        .expect(200);
    assert!(r.body["destination_url"].is_null());

    let r = app
        .admin(
            "POST",
            "/links",
            Some(json!({"program_id": id, "short_link": "l1", "destination_url": "nope"})),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), text);
    let l = app
        .admin("POST", "/links", Some(json!({"program_id": id, "short_link": "l1", "destination_url": "http://shop.example/l1"})))
        .await
        .expect(201);
    assert_eq!(l.body["destination_url"], "http://shop.example/l1");
    assert_eq!(l.body["coupon_codes"], json!([]));
    let link_id = l.body["id"].as_i64().unwrap();
    let r = app
        .admin(
            "PATCH",
            &format!("/links/{link_id}"),
            Some(json!({"destination_url": "ftp://x"})),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), text);
    // Every field of a link patch may be left out, but the body is still an object.
    let r = app
        .admin(
            "PATCH",
            &format!("/links/{link_id}"),
            Some(json!([null, null])),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "Invalid request body: expected a JSON object");
    let shown = app
        .admin("GET", &format!("/links/{link_id}"), None)
        .await
        .expect(200);
    assert_eq!(shown.body["destination_url"], "http://shop.example/l1");
}

on_both_backends!(the_click_limit_and_the_client_ip_apply_to_redirects);
async fn the_click_limit_and_the_client_ip_apply_to_redirects(app: TestApp) {
    // Behind a trusted proxy, so that the test speaks for client IPs.
    let app = app
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
        .with_rate_limits(RateLimitArgs {
            rate_limit_click: 2,
            rate_limit_lead: 0,
            rate_limit_login: 0,
        });
    let seed = app
        .seed_with(json!({"destination_url": "https://shop.example/"}))
        .await;
    let path = format!("/r/{}", seed.short_link);
    let from = |ip: &'static str| {
        [
            ("user-agent", BROWSER),
            ("x-forwarded-for", ip),
            ("cf-ipcountry", "NL"),
        ]
    };
    for _ in 0..2 {
        let r = visit(&app, "GET", &path, &from("198.51.100.7"))
            .await
            .expect(302);
        assert!(param(
            &query_of(r.headers["location"].to_str().unwrap()),
            "rt_click"
        )
        .is_some());
    }
    // Over the limit: the visitor still goes on, without a click.
    let r = visit(&app, "GET", &path, &from("198.51.100.7"))
        .await
        .expect(302);
    assert_eq!(
        param(
            &query_of(r.headers["location"].to_str().unwrap()),
            "rt_click"
        ),
        None
    );
    assert_eq!(link_clicks(&app, seed.program_id).await, 2);
    // The redirect and the click API share one budget per client.
    let click = json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)});
    let r = app
        .send(
            "POST",
            "/api/v1/track/click",
            Some(click),
            &[("x-forwarded-for", "198.51.100.7")],
        )
        .await;
    assert_eq!(r.status.as_u16(), 429);
    // Another client counts; the trusted proxy's geo header is the click's.
    let r = visit(&app, "GET", &path, &from("198.51.100.8"))
        .await
        .expect(302);
    assert!(param(
        &query_of(r.headers["location"].to_str().unwrap()),
        "rt_click"
    )
    .is_some());
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE geo_country = 'NL'")
            .await,
        3
    );
    // No CORS on the redirect: it is a navigation, not a fetch.
    let r = visit(
        &app,
        "GET",
        &path,
        &[
            ("user-agent", BROWSER),
            ("origin", "https://evil.example"),
            ("x-forwarded-for", "198.51.100.9"),
        ],
    )
    .await
    .expect(302);
    assert!(!r.headers.contains_key("access-control-allow-origin"));
}
