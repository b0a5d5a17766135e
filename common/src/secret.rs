//! [`Secret`]: a value that must never be shown — API keys, tokens, passwords, URLs
//! that carry them. Its `Debug` and `Display` print `<redacted>`, so a config or
//! settings struct holding one can derive `Debug` and be logged whole; the value is
//! reached only through [`Secret::expose`], which names every place that uses it.
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A secret's text as a file or variable holds it, trimmed of surrounding whitespace
/// (`echo "$TOKEN" > token` leaves a final newline that no server accepts); `None`
/// when nothing is left, which every reader refuses.
pub fn trimmed(raw: &str) -> Option<&str> {
    let secret = raw.trim();
    (!secret.is_empty()).then_some(secret)
}

/// `prefix` and `secret` (`"Bearer "`, a token) as a header value marked sensitive, so
/// that no HTTP log or trace shows it; `None` when it holds a character a header
/// cannot carry.
pub fn sensitive_header(prefix: &str, secret: &str) -> Option<http::HeaderValue> {
    let mut value = http::HeaderValue::from_str(&format!("{prefix}{secret}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// What every [`Secret`] prints instead of its value.
pub const REDACTED: &str = "<redacted>";

/// A value never shown by `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The value itself: hand it to the one call that needs it, never to a formatter.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Secret)
    }
}

/// `url` with any `user:password@` replaced by `<redacted>@`: what logs and errors may
/// show of a URL that can carry credentials. Text that is not a URL is returned as it
/// is when it has no `@`, else redacted whole.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return if url.contains('@') {
            REDACTED.to_string()
        } else {
            url.to_string()
        };
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{REDACTED}{}", &rest[at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let s = Secret::new("SECRET-3f9a".to_string());
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{s}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(&s)), "Some(<redacted>)");
        assert_eq!(s.expose(), "SECRET-3f9a");
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Config {
            url: Secret<String>,
        }
        let c: Config = serde_json::from_str(r#"{"url":"redis://:pw-3f9a@h:1"}"#).unwrap();
        assert_eq!(c.url.expose(), "redis://:pw-3f9a@h:1");
        assert!(!format!("{c:?}").contains("3f9a"));
    }

    #[test]
    fn a_secret_is_trimmed_and_its_header_is_sensitive() {
        assert_eq!(trimmed("s3cret\n"), Some("s3cret"));
        assert_eq!(trimmed(" \n\t"), None);
        let h = sensitive_header("Bearer ", "s3cret").unwrap();
        assert_eq!(h, "Bearer s3cret");
        assert!(h.is_sensitive());
        assert!(sensitive_header("Bearer ", "two\nlines").is_none());
    }

    #[test]
    fn urls_lose_their_credentials() {
        for (url, shown) in [
            (
                "redis://:pw@127.0.0.1:6379/0",
                "redis://<redacted>@127.0.0.1:6379/0",
            ),
            (
                "http://user:pw@host:8888/records?x=1",
                "http://<redacted>@host:8888/records?x=1",
            ),
            ("http://u:p@ss@host/", "http://<redacted>@host/"),
            ("http://host:8888/a@b", "http://host:8888/a@b"),
            ("https://api.example.com/v1", "https://api.example.com/v1"),
            ("not a url", "not a url"),
            ("u:p@host", "<redacted>"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }
}
