//! Secrets: API and admin tokens (stored as SHA-256 hashes, compared in constant time)
//! and dashboard passwords (argon2id).

use std::sync::{Arc, LazyLock};

use argon2::password_hash::{rand_core::OsRng as PwOsRng, SaltString};
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use rand::{rngs::OsRng, RngCore};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

/// Prefix of program API keys.
pub const API_TOKEN_PREFIX: &str = "rtk_";
/// Prefix of the management API's admin token.
pub const ADMIN_TOKEN_PREFIX: &str = "rta_";

/// A fresh random token: `prefix` and 256 bits in hex.
pub fn generate_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// The stored form of a token.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The part of a token shown to operators so they can tell keys apart.
pub fn token_prefix(token: &str) -> String {
    token.chars().take(API_TOKEN_PREFIX.len() + 6).collect()
}

/// Compares two token hashes in constant time.
pub fn hashes_match(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// Hashes a password with argon2id and a random salt.
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut PwOsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("password hashing failed: {e}"))
}

/// Password hashes and checks that may run at once: one per core. Each argon2id run holds
/// about 19 MiB and a core for tens of milliseconds, so a burst of sign-ins or
/// applications waits its turn instead of taking the server's memory.
static PASSWORD_WORK: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    ))
});

/// Runs `work` (a password hash or check) off the async workers, once one of the
/// [`PASSWORD_WORK`] permits is free.
pub async fn password_work<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    // The permit goes with the work: a caller that gives up (a client gone, a request
    // timed out) does not free it while argon2 still runs.
    let permit = PASSWORD_WORK.clone().acquire_owned().await?;
    Ok(tokio::task::spawn_blocking(move || {
        let done = work();
        drop(permit);
        done
    })
    .await?)
}

/// Checks a password against its stored hash.
pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hash_stably() {
        let a = generate_token(API_TOKEN_PREFIX);
        let b = generate_token(API_TOKEN_PREFIX);
        assert_ne!(a, b);
        assert!(a.starts_with("rtk_") && a.len() == 4 + 64);
        assert!(hashes_match(&hash_token(&a), &hash_token(&a)));
        assert!(!hashes_match(&hash_token(&a), &hash_token(&b)));
        assert_eq!(token_prefix(&a).len(), 10);
    }

    #[test]
    fn passwords() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
        assert!(!verify_password("x", "not a hash"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn password_work_runs_at_most_one_per_core() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..cores * 4)
            .map(|_| {
                let (running, most) = (running.clone(), most.clone());
                tokio::spawn(password_work(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                }))
            })
            .collect();
        // Callers that give up while their work runs keep its permit until it ends.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        for t in tasks.iter().step_by(2) {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
        // Aborted callers' work may still run: wait until none does.
        while running.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let most = most.load(Ordering::SeqCst);
        assert!(
            (1..=cores).contains(&most),
            "{most} ran at once on {cores} cores"
        );
    }
}
