//! API token authentication (`Authorization: Bearer <token>`), answered as Cloudflare
//! does: no credentials at all is 400 9106; a header that is not `Bearer <token>` (or a
//! global-key header, which the emulator has none of) is 400 6003 with the detail in
//! `error_chain` (6111 / 6103); a well-formed token Cloudflare does not know is 403
//! 9109 "Invalid access token". A token limited to some zones gets 403 10000
//! "Authentication error" for every other zone, as a token without permission does.
use super::errors::ApiError;
use http::HeaderMap;
use serde::{Deserialize, Serialize};

/// One accepted token: a bare string, or a table limiting it to some zones.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum TokenSpec {
    /// A token that may use every zone.
    Any(String),
    /// A token limited to `zones` (names or ids), as a token scoped to "specific zones".
    Scoped {
        token: String,
        #[serde(default)]
        zones: Vec<String>,
    },
}

impl TokenSpec {
    pub fn token(&self) -> &str {
        match self {
            TokenSpec::Any(t) | TokenSpec::Scoped { token: t, .. } => t,
        }
    }

    /// Whether the token may use the zone `id` called `name`.
    pub fn allows(&self, id: &str, name: &str) -> bool {
        match self {
            TokenSpec::Any(_) => true,
            TokenSpec::Scoped { zones, .. } => zones.iter().any(|z| {
                let z = z.trim().trim_end_matches('.');
                z.eq_ignore_ascii_case(id) || z.eq_ignore_ascii_case(name)
            }),
        }
    }
}

impl std::fmt::Debug for TokenSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSpec::Any(_) => f.write_str("TokenSpec(<redacted>)"),
            TokenSpec::Scoped { zones, .. } => f
                .debug_struct("TokenSpec")
                .field("token", &"<redacted>")
                .field("zones", zones)
                .finish(),
        }
    }
}

fn token_chars(t: &str) -> bool {
    !t.is_empty()
        && t.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
        })
}

/// The bearer token of a request (its shape checked, not whether it is known).
pub(crate) fn bearer(headers: &HeaderMap) -> Result<String, ApiError> {
    let auth = headers.get(http::header::AUTHORIZATION);
    let key = headers.get("x-auth-key");
    match (auth, key) {
        (None, None) => Err(ApiError::missing_credentials()),
        (None, Some(_)) => Err(ApiError::invalid_headers(6103, "X-Auth-Key")),
        (Some(v), _) => {
            let v = v.to_str().unwrap_or_default().trim();
            let token = v
                .strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
                .map(str::trim)
                .filter(|t| token_chars(t))
                .ok_or_else(|| ApiError::invalid_headers(6111, "Authorization"))?;
            Ok(token.to_string())
        }
    }
}

/// The accepted token a request carries; with `verify` off any well-formed token
/// passes as an unscoped one.
pub(crate) fn authenticate(
    headers: &HeaderMap,
    tokens: &[TokenSpec],
    verify: bool,
) -> Result<TokenSpec, ApiError> {
    let token = bearer(headers)?;
    if !verify {
        return Ok(tokens
            .iter()
            .find(|t| t.token() == token)
            .cloned()
            .unwrap_or(TokenSpec::Any(token)));
    }
    tokens
        .iter()
        .find(|t| t.token() == token)
        .cloned()
        .ok_or_else(ApiError::invalid_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn answers_each_kind_of_bad_credential() {
        let tokens = vec![
            TokenSpec::Any("good".into()),
            TokenSpec::Scoped {
                token: "narrow".into(),
                zones: vec!["example.com.".into()],
            },
        ];
        let code = |h: &[(&str, &str)]| authenticate(&headers(h), &tokens, true).unwrap_err();
        assert_eq!(code(&[]).code, 9106);
        let e = code(&[("authorization", "Token good")]);
        assert_eq!((e.status, e.code, e.chain[0].0), (400, 6003, 6111));
        assert_eq!(code(&[("x-auth-key", "k")]).chain[0].0, 6103);
        let e = code(&[("authorization", "Bearer other")]);
        assert_eq!(
            (e.status, e.code, e.message.as_str()),
            (403, 9109, "Invalid access token")
        );
        let narrow = authenticate(
            &headers(&[("authorization", "Bearer narrow")]),
            &tokens,
            true,
        )
        .unwrap();
        assert!(narrow.allows("id", "example.com"));
        assert!(!narrow.allows("id", "other.com"));
        assert!(authenticate(&headers(&[("authorization", "Bearer x")]), &tokens, false).is_ok());
        assert!(!format!("{narrow:?}").contains("narrow\""));
    }
}
