//! Credentials as they are kept: static and refresh tokens hashed with a
//! fast digest, passwords with argon2, and new random tokens; the access
//! tokens the platform signs (`jwt`) and the session rows they name
//! (`sessions`). What proves who a caller is, below both the resolver
//! (`auth`) and the sign-in flows (`signin`).

pub mod jwt;
pub mod sessions;

use argon2::password_hash::{rand_core::OsRng, PasswordHasher, SaltString};
use argon2::Argon2;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Tokens are high-entropy random strings, so a fast digest is the right
/// hash: it lets a token be looked up by equality on an index.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Passwords hashed since the process started (`/server/metrics`).
pub static PASSWORD_HASHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub fn hash_password(password: &str) -> Result<String, String> {
    PASSWORD_HASHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("cannot hash password: {e}"))
}

/// A new random static token (256 bits, hex).
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_hash_is_stable_and_not_the_token() {
        let t = "secret-token";
        assert_eq!(hash_token(t), hash_token(t));
        assert_ne!(hash_token(t), t);
        assert_eq!(hash_token(t).len(), 64);
        assert_ne!(generate_token(), generate_token());
    }

    #[test]
    fn password_hash_is_salted_argon2() {
        let a = hash_password("pw").unwrap();
        let b = hash_password("pw").unwrap();
        assert!(a.starts_with("$argon2"));
        assert_ne!(a, b);
    }
}
