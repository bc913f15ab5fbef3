//! Click ids: `cust_<n>_<epoch-ms>`. In browser mode the click id is the only
//! credential, so `<n>` carries 63 random bits from a cryptographically secure generator
//! (rand's `ThreadRng`: ChaCha seeded from the OS, without a system call per id).
//!
//! `<n>` is the epoch-ms followed by those random bits as 19 zero-padded digits
//! (`n = ms · 10^19 + r`): ids issued later sort after earlier ones, so the unique index
//! on click ids takes new keys at its end, where the pages are already in memory and one
//! page holds a whole batch of new ids, instead of one random page of a large index per
//! click (docs/benchmarks.md).

use rand::RngCore;

/// Makes a fresh click id for the given instant.
pub fn generate(now_ms: i64) -> String {
    let random = u128::from(rand::thread_rng().next_u64() >> 1);
    let n = u128::try_from(now_ms.max(0)).unwrap_or(0) * 10u128.pow(19) + random;
    format!("cust_{n}_{now_ms}")
}

/// Whether `s` has the shape of a click id this service issues (or issued before ids
/// were time-ordered).
pub fn is_well_formed(s: &str) -> bool {
    let mut parts = s.splitn(3, '_');
    let digits = |p: Option<&str>| {
        p.is_some_and(|p| !p.is_empty() && p.len() <= 40 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    parts.next() == Some("cust") && digits(parts.next()) && digits(parts.next())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_part(id: &str) -> u128 {
        let n: u128 = id.split('_').nth(1).unwrap().parse().unwrap();
        n % 10u128.pow(19)
    }

    #[test]
    fn shape_is_cust_number_epoch_ms() {
        let id = generate(1_700_000_000_123);
        assert!(id.starts_with("cust_1700000000123"));
        assert!(id.ends_with("_1700000000123"));
        assert!(is_well_formed(&id));
    }

    #[test]
    fn ids_do_not_repeat_and_carry_enough_entropy() {
        let ids: std::collections::HashSet<_> = (0..10_000).map(|_| generate(1)).collect();
        assert_eq!(ids.len(), 10_000);
        // With 63 random bits, at least one of many ids must exceed 2^50.
        assert!(ids.iter().any(|id| random_part(id) > 1 << 50));
    }

    #[test]
    fn later_ids_sort_after_earlier_ones() {
        let mut ids: Vec<String> = (0..1_000)
            .map(|i| generate(1_763_800_000_000 + i))
            .collect();
        let issued = ids.clone();
        ids.sort();
        assert_eq!(ids, issued);
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
