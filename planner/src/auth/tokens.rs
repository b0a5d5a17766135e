//! The tokens file (`[auth] tokens_file`): who may call the planner's API. Only the
//! SHA-256 of each token is stored, so the file can be read by more people than the
//! tokens themselves; a presented token is hashed and compared with every stored digest
//! in constant time.
//!
//! ```toml
//! [[token]]
//! name = "ci"                          # in logs and metrics (never the token)
//! sha256 = "9f86d0…"                   # hex of sha256(token)
//! role = "write"                       # read | write | approve
//! zones = ["example.com."]             # optional: only these zones
//! name_suffix = "team-a.example.com."  # optional: only names at or below this one
//! ```
use super::{Role, Scope};
use dnsplane_common::Name;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use toml::Spanned;

/// A tokens file that cannot be used; each names the file, and the line when there is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokensError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
    /// Seen at a reload: every token is revoked until the file is back.
    #[error("{path}: deleted: every token is revoked until the file is back")]
    Deleted { path: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// The caller's name in logs, errors and the `caller` label of metrics.
    name: Spanned<String>,
    /// Hex of SHA-256 over the token's bytes (`printf %s "$TOKEN" | sha256sum`).
    sha256: Spanned<String>,
    role: Role,
    /// Only these zones (absent: every zone).
    #[serde(default)]
    zones: Option<Spanned<Vec<String>>>,
    /// Only names at or below this one (absent: any name).
    #[serde(default)]
    name_suffix: Option<Spanned<String>>,
}

/// One caller the tokens file admits.
#[derive(Debug, Clone)]
pub struct Token {
    pub name: Arc<str>,
    digest: [u8; 32],
    pub role: Role,
    pub scope: Scope,
}

/// Every token of one version of the tokens file.
#[derive(Debug, Clone, Default)]
pub struct TokenSet {
    tokens: Vec<Token>,
}

/// Reserved: the caller name of calls made without `[auth]`.
pub const ANONYMOUS: &str = "anonymous";

impl TokenSet {
    /// Reads and checks `path`; `zones` are the configured zones a scope may name.
    pub fn load(path: &Path, zones: &[Name]) -> Result<TokenSet, TokensError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokensError::Read {
            path: path.display().to_string(),
            source,
        })?;
        TokenSet::parse(&path.display().to_string(), &text, zones)
    }

    /// Parses `text` (read from `path`, for the errors).
    pub fn parse(path: &str, text: &str, zones: &[Name]) -> Result<TokenSet, TokensError> {
        let invalid = |at: usize, message: String| TokensError::Invalid {
            path: path.to_string(),
            line: line_of(text, at),
            message,
        };
        let file: File = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            invalid(at, e.message().trim_end().to_string())
        })?;
        // Nobody could call the API: a file truncated while it is written, or one
        // emptied by mistake; removing `[auth]` is how to open the API.
        if file.token.is_empty() {
            return Err(invalid(
                0,
                "no [[token]]: nobody could call the planner's API (remove [auth] to open it)"
                    .into(),
            ));
        }
        let mut tokens: Vec<Token> = Vec::with_capacity(file.token.len());
        for e in file.token {
            let name = e.name.get_ref();
            let name_ok = (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !name_ok {
                return Err(invalid(
                    e.name.span().start,
                    format!("name {name:?}: 1-64 characters of A-Z a-z 0-9 - _ ."),
                ));
            }
            if name == ANONYMOUS {
                return Err(invalid(
                    e.name.span().start,
                    format!("name {name:?} is reserved for calls without [auth]"),
                ));
            }
            if tokens.iter().any(|t| &*t.name == name) {
                return Err(invalid(
                    e.name.span().start,
                    format!("name {name:?} is given to two tokens"),
                ));
            }
            let digest = parse_digest(e.sha256.get_ref()).ok_or_else(|| {
                invalid(
                    e.sha256.span().start,
                    format!(
                        "token {name:?}: sha256 must be 64 hex digits (printf %s \"$TOKEN\" | sha256sum), not the token"
                    ),
                )
            })?;
            if tokens.iter().any(|t| t.digest == digest) {
                return Err(invalid(
                    e.sha256.span().start,
                    format!("token {name:?}: the same sha256 as another token"),
                ));
            }
            let mut scope = Scope::default();
            if let Some(z) = &e.zones {
                let mut list = Vec::new();
                for text in z.get_ref() {
                    let zone = Name::parse(text)
                        .ok()
                        .and_then(|n| zones.iter().find(|c| **c == n).cloned())
                        .ok_or_else(|| {
                            invalid(
                                z.span().start,
                                format!("token {name:?}: zones: {text:?} is not a configured zone"),
                            )
                        })?;
                    list.push(zone);
                }
                if list.is_empty() {
                    return Err(invalid(
                        z.span().start,
                        format!(
                            "token {name:?}: zones = [] would allow nothing; leave the key out for every zone"
                        ),
                    ));
                }
                scope.zones = Some(list);
            }
            if let Some(s) = &e.name_suffix {
                scope.name_suffix = Some(Name::parse(s.get_ref()).map_err(|err| {
                    invalid(
                        s.span().start,
                        format!("token {name:?}: name_suffix: {err}"),
                    )
                })?);
            }
            tokens.push(Token {
                name: Arc::from(name.as_str()),
                digest,
                role: e.role,
                scope,
            });
        }
        Ok(TokenSet { tokens })
    }

    /// The token whose digest is SHA-256 of `presented`. Every stored digest is
    /// compared, each in constant time, so the answer's timing says nothing about
    /// which digest (or how much of one) matched.
    pub fn find(&self, presented: &[u8]) -> Option<&Token> {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        let mut found = None;
        for t in &self.tokens {
            let eq: bool = t.digest.ct_eq(&digest).into();
            if eq && found.is_none() {
                found = Some(t);
            }
        }
        found
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The configured names, for the bounded `caller` label.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(|t| &*t.name)
    }
}

fn parse_digest(hex_text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_text.trim(), &mut out).ok()?;
    Some(out)
}

/// The 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Hex of SHA-256 over `token`: what the tokens file stores for it.
pub fn digest_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}
