//! A small read-through cache for the lookups every tracking request makes (a referral
//! link by its `short_link`, a program by its API key's hash).
//!
//! Entries live at most a short time-to-live, and the whole cache is dropped whenever
//! this process changes what it holds (the store calls [`ReadCache::clear`] after every
//! program or link change). A generation number makes that race-free: a value read from
//! the database before a change cannot be cached after it. What another process changes
//! (a second server on the same PostgreSQL database, or `reftrack admin` on the same
//! file) is seen once the entry expires, so the time-to-live bounds how stale a lookup can
//! be: an entry's age counts from the moment its database read began, not from when it
//! was cached. Misses (unknown links, wrong keys) are not cached.

use std::borrow::Borrow;
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lru::LruCache;

/// How long a cached lookup may be served without asking the database again.
pub const TTL: Duration = Duration::from_secs(1);

struct Inner<K: Hash + Eq, V> {
    entries: LruCache<K, (Instant, V)>,
    generation: u64,
}

/// Taken before a database read with [`ReadCache::generation`], and handed back with
/// the value read to [`ReadCache::insert`].
#[derive(Debug, Clone, Copy)]
struct Generation {
    number: u64,
    // When the read began: counting an entry's age from here, not from its insertion,
    // keeps a slow read from stretching the time-to-live.
    read_at: Instant,
}

/// A bounded, time-limited cache of values by key; see the module documentation.
pub struct ReadCache<K: Hash + Eq, V> {
    inner: Mutex<Inner<K, V>>,
    ttl: Duration,
}

impl<K: Hash + Eq, V: Clone> ReadCache<K, V> {
    /// A cache of at most `capacity` entries, each served for at most `ttl`.
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        ReadCache {
            inner: Mutex::new(Inner {
                entries: LruCache::new(NonZeroUsize::new(capacity.max(1)).expect("non-zero")),
                generation: 0,
            }),
            ttl,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K, V>> {
        // The cache holds no invariant a panic could break: recover from poisoning.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value cached for `key`, unless absent or older than the time-to-live.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut inner = self.lock();
        match inner.entries.get(key) {
            Some((at, v)) if at.elapsed() < self.ttl => Some(v.clone()),
            Some(_) => {
                inner.entries.pop(key);
                None
            }
            None => None,
        }
    }

    /// The current generation; pass it to [`ReadCache::insert`] with a value read after
    /// this call.
    fn generation(&self) -> Generation {
        Generation {
            number: self.lock().generation,
            read_at: Instant::now(),
        }
    }

    /// Caches `value` read from the database, unless the cache was cleared since
    /// `generation` was taken (the value may then be outdated). The entry expires the
    /// time-to-live after `generation` was taken.
    fn insert(&self, generation: Generation, key: K, value: V) {
        let mut inner = self.lock();
        if inner.generation == generation.number {
            inner.entries.put(key, (generation.read_at, value));
        }
    }

    /// The value for `key`: the cached one, else what `read` finds in the database, which
    /// is cached when found (a miss is not). `read` is called only on a miss, after the
    /// generation is taken, so a change made while it reads keeps its value out.
    pub async fn get_or_read<Q, E, F>(
        &self,
        key: &Q,
        read: impl FnOnce() -> F,
    ) -> Result<Option<V>, E>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        F: std::future::Future<Output = Result<Option<V>, E>>,
    {
        if let Some(v) = self.get(key) {
            return Ok(Some(v));
        }
        let generation = self.generation();
        let found = read().await?;
        if let Some(v) = &found {
            self.insert(generation, key.to_owned(), v.clone());
        }
        Ok(found)
    }

    /// Drops every entry: called after a change to what the cache holds.
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_until_cleared_or_expired() {
        let c: ReadCache<String, i32> = ReadCache::new(2, Duration::from_millis(50));
        let g = c.generation();
        c.insert(g, "a".into(), 1);
        assert_eq!(c.get("a"), Some(1));
        c.clear();
        assert_eq!(c.get("a"), None);
        let g = c.generation();
        c.insert(g, "a".into(), 2);
        assert_eq!(c.get("a"), Some(2));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(c.get("a"), None, "expired");
    }

    #[test]
    fn a_value_read_before_a_change_is_not_cached_after_it() {
        let c: ReadCache<String, i32> = ReadCache::new(8, TTL);
        let g = c.generation();
        // ... the database is read here, then another task changes the row ...
        c.clear();
        c.insert(g, "a".into(), 1);
        assert_eq!(c.get("a"), None);
    }

    #[test]
    fn a_slow_read_counts_from_its_start() {
        let c: ReadCache<String, i32> = ReadCache::new(8, Duration::from_millis(50));
        let g = c.generation();
        // ... a database read that takes longer than the time-to-live ...
        std::thread::sleep(Duration::from_millis(60));
        c.insert(g, "a".into(), 1);
        assert_eq!(c.get("a"), None, "read longer ago than the time-to-live");
    }

    #[tokio::test]
    async fn get_or_read_reads_on_a_miss_only_and_caches_what_it_finds() {
        let c: ReadCache<String, i32> = ReadCache::new(8, TTL);
        let reads = std::cell::Cell::new(0);
        let read = |found: Option<i32>| {
            reads.set(reads.get() + 1);
            async move { Ok::<_, ()>(found) }
        };
        assert_eq!(c.get_or_read("a", || read(None)).await, Ok(None));
        assert_eq!(c.get_or_read("a", || read(Some(1))).await, Ok(Some(1)));
        assert_eq!(c.get_or_read("a", || read(Some(2))).await, Ok(Some(1)));
        assert_eq!(reads.get(), 2, "a miss is read again, a hit is not");
        assert_eq!(c.get_or_read("b", || async { Err(()) }).await, Err(()));
        assert_eq!(c.get("b"), None);
    }

    #[test]
    fn bounded_by_capacity() {
        let c: ReadCache<String, i32> = ReadCache::new(2, TTL);
        let g = c.generation();
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] {
            c.insert(g, k.into(), v);
        }
        assert_eq!(c.get("a"), None);
        assert_eq!(c.get("c"), Some(3));
    }
}
