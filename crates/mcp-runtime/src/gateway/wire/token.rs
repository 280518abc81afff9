//! The HTTP gateway's bearer token: kept as a digest and compared in constant time, and read
//! from a request's `Authorization: Bearer <token>` header.

use axum::http::{HeaderValue, header};
use sha2::{Digest, Sha256};

/// The expected token, kept as a digest so that comparing takes the same time whatever the
/// length or content of what a client sends.
pub(super) struct Token {
    digest: [u8; 32],
}

impl Token {
    pub(super) fn new(token: &str) -> Self {
        Token {
            digest: Sha256::digest(token.as_bytes()).into(),
        }
    }

    pub(super) fn matches(&self, presented: &[u8]) -> bool {
        let presented: [u8; 32] = Sha256::digest(presented).into();
        // Constant time: look at every byte, whatever the first difference.
        let difference = self
            .digest
            .iter()
            .zip(presented.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(difference) == 0
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub(super) fn presented_token(headers: &axum::http::HeaderMap) -> Option<&[u8]> {
    let value = headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes)?;
    let scheme = value.get(..7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| value[7..].trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_by_content() {
        let token = Token::new("secret");
        assert!(token.matches(b"secret"));
        assert!(!token.matches(b"secret2"));
        assert!(!token.matches(b""));
    }
}
