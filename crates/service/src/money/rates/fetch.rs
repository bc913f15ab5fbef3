//! The optional daily fetch of the European Central Bank's reference rates: the file at
//! a URL (the ECB's `eurofxref.zip` by default, or the CSV itself) downloaded and stored
//! as `reftrack rates import` stores it.

use std::io::Read;
use std::time::Duration;

use super::EcbImport;
use crate::{App, Error, Result};

/// Where the ECB publishes the day's reference rates, zipped.
pub const ECB_DAILY_URL: &str = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref.zip";

/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest file a fetch takes: the ECB's daily file is about a kilobyte, its whole
/// history a few hundred.
const MAX_FILE_BYTES: usize = 8 << 20;

/// A fetch that failed: the network, the server's answer or its content.
fn unavailable(what: impl std::fmt::Display) -> Error {
    Error::Unavailable(anyhow::anyhow!("{what}"))
}

/// The CSV a fetched file holds: the file itself, or the first `.csv` in a zip.
fn csv_text(body: &[u8]) -> Result<String> {
    if !body.starts_with(b"PK") {
        return String::from_utf8(body.to_vec())
            .map_err(|_| unavailable("the rate file is neither a CSV nor a zip"));
    }
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(body))
        .map_err(|e| unavailable(format!("the rate file is not a readable zip: {e}")))?;
    for i in 0..archive.len() {
        let mut file = archive
            .by_index(i)
            .map_err(|e| unavailable(format!("the rate zip cannot be read: {e}")))?;
        if !file.name().to_ascii_lowercase().ends_with(".csv") {
            continue;
        }
        let mut text = String::new();
        file.by_ref()
            .take(MAX_FILE_BYTES as u64)
            .read_to_string(&mut text)
            .map_err(|e| unavailable(format!("the rate zip's CSV cannot be read: {e}")))?;
        return Ok(text);
    }
    Err(unavailable("the rate zip holds no CSV file"))
}

impl App {
    /// Downloads the ECB reference-rate file at `url` and stores its rates.
    pub async fn fetch_ecb_rates(&self, url: &str) -> Result<EcbImport> {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .user_agent(concat!("Reftrack/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(unavailable)?;
        let answer = client
            .get(url)
            .send()
            .await
            .map_err(|e| unavailable(format!("fetching {url} failed: {e}")))?;
        if !answer.status().is_success() {
            return Err(unavailable(format!("{url} answered {}", answer.status())));
        }
        let body = answer
            .bytes()
            .await
            .map_err(|e| unavailable(format!("reading {url} failed: {e}")))?;
        if body.len() > MAX_FILE_BYTES {
            return Err(unavailable(format!(
                "{url} is larger than {MAX_FILE_BYTES} bytes"
            )));
        }
        let text = csv_text(&body)?;
        self.import_ecb_file(&text).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_zip_gives_its_csv_and_a_csv_itself() {
        let csv = "Date, USD, \n27 November 2026, 1.0423, \n";
        assert_eq!(csv_text(csv.as_bytes()).unwrap(), csv);
        let mut zipped = std::io::Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut zipped);
            let options = zip::write::SimpleFileOptions::default();
            w.start_file("eurofxref.csv", options).unwrap();
            w.write_all(csv.as_bytes()).unwrap();
            w.finish().unwrap();
        }
        assert_eq!(csv_text(zipped.get_ref()).unwrap(), csv);
        assert!(csv_text(b"PK\x03\x04 not a zip").is_err());
        assert!(csv_text(&[0xff, 0xfe, 0x00]).is_err());
    }
}
