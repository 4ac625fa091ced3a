//! Access tokens: JWTs signed with HS256 under the platform's secret, as
//! Directus issues them, naming the user and the session they belong to.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The issuer Directus writes, so that tools reading the token feel at home.
const ISSUER: &str = "directus";

/// What an access token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user.
    pub id: String,
    pub role: Option<String>,
    pub app_access: bool,
    pub admin_access: bool,
    /// The session the token was issued for: ending the session refuses
    /// the token at once.
    pub session: String,
    pub iat: u64,
    pub exp: u64,
    pub iss: String,
}

/// Signs and checks access tokens.
pub struct Signer {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(..)")
    }
}

/// Why a token was refused (never shown to the caller, who gets 401).
#[derive(Debug, thiserror::Error)]
#[error("access token refused: {0}")]
pub struct Refused(String);

/// Whether `token` has the shape of a JWT (three base64url parts), so a
/// static token is never taken for one.
pub fn looks_like_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.bytes().filter(|b| *b == b'.').count() == 2
}

impl Signer {
    pub fn new(secret: &[u8]) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
        }
    }

    /// A token for `claims` (its `iss` is set here).
    pub fn issue(&self, mut claims: Claims) -> Result<String, String> {
        claims.iss = ISSUER.into();
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| format!("cannot sign an access token: {e}"))
    }

    /// The claims of a token signed here, unexpired; with `allow_expired`,
    /// an expired one too (a session cookie's token, to refresh it).
    pub fn verify(&self, token: &str, allow_expired: bool) -> Result<Claims, Refused> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.leeway = 0;
        validation.validate_exp = !allow_expired;
        validation.set_required_spec_claims(&["exp", "iss"]);
        decode::<Claims>(token, &self.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| Refused(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: u64) -> Claims {
        Claims {
            id: "u1".into(),
            role: None,
            app_access: true,
            admin_access: false,
            session: "s1".into(),
            iat: 0,
            exp,
            iss: String::new(),
        }
    }

    fn now() -> u64 {
        chrono::Utc::now().timestamp() as u64
    }

    #[test]
    fn a_token_verifies_under_its_secret_only() {
        let signer = Signer::new(b"one secret");
        let token = signer.issue(claims(now() + 60)).unwrap();
        assert!(looks_like_jwt(&token));
        let back = signer.verify(&token, false).unwrap();
        assert_eq!((back.id.as_str(), back.iss.as_str()), ("u1", "directus"));
        assert!(Signer::new(b"another").verify(&token, false).is_err());
        let mut tampered = token.clone();
        tampered.insert(token.find('.').unwrap() + 2, 'x');
        assert!(signer.verify(&tampered, false).is_err());
    }

    #[test]
    fn an_expired_token_is_refused_unless_allowed() {
        let signer = Signer::new(b"s");
        let token = signer.issue(claims(now() - 5)).unwrap();
        assert!(signer.verify(&token, false).is_err());
        assert!(signer.verify(&token, true).is_ok());
    }

    #[test]
    fn static_tokens_are_not_jwts() {
        assert!(!looks_like_jwt("demo-admin-token"));
        assert!(!looks_like_jwt(&"ab".repeat(32)));
    }
}
