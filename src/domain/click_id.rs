//! Click ids: `cust_<n>_<epoch-ms>` (D4). In browser mode the click id is the only
//! credential, so `<n>` carries 63 random bits from the OS generator.

use rand::{rngs::OsRng, RngCore};

/// Makes a fresh click id for the given instant.
pub fn generate(now_ms: i64) -> String {
    let n = OsRng.next_u64() >> 1;
    format!("cust_{n}_{now_ms}")
}

/// Whether `s` has the shape of a click id this service issues.
pub fn is_well_formed(s: &str) -> bool {
    let mut parts = s.splitn(3, '_');
    let digits = |p: Option<&str>| {
        p.is_some_and(|p| !p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    parts.next() == Some("cust") && digits(parts.next()) && digits(parts.next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_is_cust_number_epoch_ms() {
        let id = generate(1_700_000_000_123);
        assert!(id.starts_with("cust_"));
        assert!(id.ends_with("_1700000000123"));
        assert!(is_well_formed(&id));
    }

    #[test]
    fn ids_do_not_repeat_and_carry_enough_entropy() {
        let ids: std::collections::HashSet<_> = (0..10_000).map(|_| generate(1)).collect();
        assert_eq!(ids.len(), 10_000);
        // With 63 random bits, at least one of many ids must exceed 2^50.
        let big = ids.iter().any(|id| {
            let n: u64 = id.split('_').nth(1).unwrap().parse().unwrap();
            n > 1 << 50
        });
        assert!(big);
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in [
            "",
            "cust_",
            "cust_1",
            "cust_a_1",
            "click_1_2",
            "cust_1_2_3",
            "cust__1",
        ] {
            assert!(!is_well_formed(bad), "{bad}");
        }
    }
}
