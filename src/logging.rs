//! The process's logs, on stderr: `REFTRACK_LOG` filters them (`tracing` syntax) and
//! `REFTRACK_LOG_FORMAT` chooses their form, `text` (the default, for people) or `json`
//! (one object per line, for log shippers). Text is coloured only on a terminal, and not
//! when `NO_COLOR` is set. Each line logged while serving a request carries that
//! request's span, with its `request_id` (`http::request_id`).

use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;

/// The filter when `REFTRACK_LOG` is unset or empty.
pub const DEFAULT_FILTER: &str = "reftrack=info,tower_http=warn";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields` (with `message`),
    /// `target`, and the spans the line was logged in (`span`, `spans`).
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!(
                "REFTRACK_LOG_FORMAT must be `text` or `json`, not `{}`",
                s.trim()
            )),
        }
    }
}

impl LogFormat {
    /// The format `REFTRACK_LOG_FORMAT` names; text when it is unset.
    pub fn from_env() -> anyhow::Result<LogFormat> {
        match std::env::var("REFTRACK_LOG_FORMAT") {
            Ok(value) => value.parse().map_err(anyhow::Error::msg),
            Err(std::env::VarError::NotPresent) => Ok(LogFormat::Text),
            Err(std::env::VarError::NotUnicode(_)) => {
                anyhow::bail!("REFTRACK_LOG_FORMAT must be `text` or `json`")
            }
        }
    }
}

/// The filter `REFTRACK_LOG` names: [`DEFAULT_FILTER`] when it is unset or empty, an
/// error naming the variable when it is not a filter.
pub fn filter(value: Option<&str>) -> anyhow::Result<EnvFilter> {
    match value.map(str::trim) {
        None | Some("") => Ok(EnvFilter::new(DEFAULT_FILTER)),
        Some(value) => EnvFilter::builder()
            .parse(value)
            .map_err(|e| anyhow::anyhow!("REFTRACK_LOG is not a log filter (`{value}`): {e}")),
    }
}

/// Whether text lines are coloured: only on a terminal, and not when `NO_COLOR` is set
/// to anything but the empty string (no-color.org).
fn colours() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the process's log subscriber from `REFTRACK_LOG` and `REFTRACK_LOG_FORMAT`;
/// an invalid value of either is an error, for the caller to report before doing
/// anything else.
pub fn init() -> anyhow::Result<()> {
    let format = LogFormat::from_env()?;
    let filter = match std::env::var("REFTRACK_LOG") {
        Ok(value) => filter(Some(&value))?,
        Err(std::env::VarError::NotPresent) => filter(None)?,
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("REFTRACK_LOG is not a log filter (not UTF-8)")
        }
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colours());
    match format {
        LogFormat::Text => logs.try_init(),
        LogFormat::Json => logs.json().try_init(),
    }
    .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_others_are_refused() {
        assert_eq!("json".parse(), Ok(LogFormat::Json));
        assert_eq!(" JSON ".parse(), Ok(LogFormat::Json));
        assert_eq!("text".parse(), Ok(LogFormat::Text));
        assert_eq!("".parse(), Ok(LogFormat::Text));
        let refused = "xml".parse::<LogFormat>().unwrap_err();
        assert!(refused.contains("REFTRACK_LOG_FORMAT") && refused.contains("xml"));
    }

    #[test]
    fn a_filter_that_does_not_parse_is_refused_with_the_variable_named() {
        assert!(filter(None).is_ok());
        assert!(filter(Some(" ")).is_ok());
        assert!(filter(Some("reftrack=debug,tower_http=info")).is_ok());
        assert!(filter(Some("debug")).is_ok());
        for bad in ["reftrack=loud", "[{"] {
            let refused = filter(Some(bad)).unwrap_err().to_string();
            assert!(
                refused.contains("REFTRACK_LOG") && refused.contains(bad),
                "{refused}"
            );
        }
    }
}
