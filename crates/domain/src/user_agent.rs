//! Device, OS and browser from a User-Agent string (woothee's maintained rule set), and
//! whether it is a crawler or link-preview fetcher (the `isbot` crate's pattern list).

use std::sync::LazyLock;

/// Fetchers the `isbot` list misses: WhatsApp's preview without its trailing platform
/// letter, Meta's and Snapchat's preview agents, VK, and Google's newer crawlers.
const MORE_BOTS: &[&str] = &[
    "^whatsapp/",
    "meta-external",
    "snap url preview",
    "vkshare",
    "googleother",
    "google-inspectiontool",
];

static BOTS: LazyLock<isbot::Bots> = LazyLock::new(|| {
    let mut bots = isbot::Bots::default();
    bots.append(MORE_BOTS);
    bots
});

/// Whether a user agent is a crawler, a link-preview fetcher or a script rather than a
/// person's browser. No browser sends an empty user agent, so none is a bot too.
pub fn is_bot(ua: &str) -> bool {
    ua.trim().is_empty() || BOTS.is_bot(ua)
}

/// What the click listing shows of a user agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `desktop`, `mobile`, `tablet`, `bot` or `other`.
    pub device_type: Option<String>,
    /// Operating system name, e.g. `Windows 10`, `iOS`, `Android`.
    pub device_os: Option<String>,
    /// Browser name, e.g. `Chrome`, `Safari`, `Firefox`.
    pub browser_name: Option<String>,
}

/// Classifies a user agent. Unknown parts stay `None`.
pub fn parse(ua: &str) -> DeviceInfo {
    let known =
        |s: &str| (!s.is_empty() && s != woothee::woothee::VALUE_UNKNOWN).then(|| s.to_string());
    let Some(r) = woothee::parser::Parser::new().parse(ua) else {
        return DeviceInfo::default();
    };
    let tablet = r.name == "iPad"
        || r.os == "iPad"
        || (r.os == "Android" && !ua.contains("Mobile") && r.category == "smartphone");
    let device_type = match r.category {
        _ if tablet => "tablet",
        "pc" => "desktop",
        "smartphone" | "mobilephone" => "mobile",
        "crawler" => "bot",
        "appliance" => "other",
        _ => {
            return DeviceInfo {
                device_type: None,
                device_os: known(r.os),
                browser_name: known(r.name),
            }
        }
    };
    DeviceInfo {
        device_type: Some(device_type.to_string()),
        device_os: known(r.os),
        browser_name: known(r.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktop_chrome_on_windows() {
        let d = parse("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36");
        assert_eq!(d.device_type.as_deref(), Some("desktop"));
        assert_eq!(d.browser_name.as_deref(), Some("Chrome"));
        assert_eq!(d.device_os.as_deref(), Some("Windows 10"));
    }

    #[test]
    fn iphone_is_mobile_ipad_is_tablet() {
        let iphone = parse("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1");
        assert_eq!(iphone.device_type.as_deref(), Some("mobile"));
        assert_eq!(iphone.browser_name.as_deref(), Some("Safari"));
        let ipad = parse("Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1");
        assert_eq!(ipad.device_type.as_deref(), Some("tablet"));
    }

    /// User agents as the fetchers send them.
    const CRAWLERS: &[&str] = &[
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
        "Slackbot 1.0 (+https://api.slack.com/robots)",
        "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
        "Twitterbot/1.0",
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        "WhatsApp/2.23.20.0 A",
        "WhatsApp/2.2408.2",
        "TelegramBot (like TwitterBot)",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
        "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
        "curl/8.5.0",
        "",
    ];

    #[test]
    fn crawlers_and_preview_fetchers_are_bots_browsers_are_not() {
        for ua in CRAWLERS {
            assert!(is_bot(ua), "{ua:?} is a bot");
        }
        for ua in [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
        ] {
            assert!(!is_bot(ua), "{ua:?} is a browser");
        }
    }

    #[test]
    fn bots_and_garbage() {
        let bot = parse("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)");
        assert_eq!(bot.device_type.as_deref(), Some("bot"));
        assert_eq!(parse(""), DeviceInfo::default());
        let _ = parse(&"x".repeat(100_000));
    }
}
