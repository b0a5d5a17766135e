//! A secret (an API key, a token) from a file or an environment variable. Drivers hold
//! it as a [`SecretHeader`]: an HTTP header value marked sensitive (hyper and reqwest
//! print it as "Sensitive" in any Debug output), read again when the provider refuses
//! it, so that an operator who rotates the file or fixes the variable is heard without
//! a restart. Errors name where the secret comes from, never the secret.
use reqwest::header::HeaderValue;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

/// Where a secret comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    /// A file holding the secret (surrounding whitespace is ignored).
    File(PathBuf),
    /// The name of an environment variable holding the secret.
    Env(String),
}

/// A secret that could not be read; `origin` names the file or variable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("from {origin}: {problem}")]
pub struct SecretError {
    pub origin: String,
    pub problem: String,
}

impl SecretSource {
    /// Where it comes from, for messages (never the secret).
    pub fn origin(&self) -> String {
        match self {
            SecretSource::File(p) => format!("file {}", p.display()),
            SecretSource::Env(v) => format!("environment variable {v}"),
        }
    }

    fn error(&self, problem: impl Into<String>) -> SecretError {
        SecretError {
            origin: self.origin(),
            problem: problem.into(),
        }
    }

    /// Reads the secret, trimmed of surrounding whitespace (a file's final newline);
    /// an empty one is an error.
    pub fn read(&self) -> Result<String, SecretError> {
        let raw = match self {
            SecretSource::File(path) => std::fs::read_to_string(path),
            SecretSource::Env(var) => {
                std::env::var(var).map_err(|e| std::io::Error::other(e.to_string()))
            }
        }
        .map_err(|e| self.error(e.to_string()))?;
        match dnsplane_common::secret::trimmed(&raw) {
            Some(secret) => Ok(secret.to_string()),
            None => Err(self.error("it is empty")),
        }
    }

    /// The secret as a sensitive header value, after `prefix` (`"Bearer "`, or `""`).
    pub fn header(&self, prefix: &str) -> Result<HeaderValue, SecretError> {
        let secret = self.read()?;
        dnsplane_common::secret::sensitive_header(prefix, &secret)
            .ok_or_else(|| self.error("it holds characters an HTTP header cannot carry"))
    }
}

/// A secret in use as a header value, with where it came from.
#[derive(Debug)]
pub struct SecretHeader {
    source: SecretSource,
    prefix: &'static str,
    /// Who refuses it, for the log lines: "PowerDNS refused the API key".
    refused_by: &'static str,
    value: Mutex<HeaderValue>,
}

impl SecretHeader {
    /// Reads the secret from `source` now; `refused_by` says who refuses it, for logs.
    pub fn new(
        source: SecretSource,
        prefix: &'static str,
        refused_by: &'static str,
    ) -> Result<SecretHeader, SecretError> {
        let value = Mutex::new(source.header(prefix)?);
        Ok(SecretHeader {
            source,
            prefix,
            refused_by,
            value,
        })
    }

    /// The header value to send now.
    pub fn value(&self) -> HeaderValue {
        self.value
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The provider refused the secret (401, 403): read it again and use it if it
    /// changed. Never logs the secret; a failed read keeps the current one.
    pub fn reload(&self) {
        match self.source.header(self.prefix) {
            Ok(new) => {
                let mut value = self.value.lock().unwrap_or_else(PoisonError::into_inner);
                if new.as_bytes() != value.as_bytes() {
                    *value = new;
                    tracing::info!(origin = %self.source.origin(), "{}; it changed where it is read from, and the next request uses the new one.", self.refused_by);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "{} and reading it again failed; keeping the current one.", self.refused_by);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_trimmed_an_empty_or_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "s3cret\n").unwrap();
        let source = SecretSource::File(path.clone());
        assert_eq!(source.read().unwrap(), "s3cret");
        std::fs::write(&path, " \n").unwrap();
        let e = source.read().unwrap_err();
        assert_eq!(e.problem, "it is empty");
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        let e = SecretSource::File(dir.path().join("absent"))
            .read()
            .unwrap_err();
        assert!(e.origin.starts_with("file "), "{e}");
        let e = SecretSource::Env("DNSPLANE_TEST_NO_SUCH_VARIABLE".into())
            .read()
            .unwrap_err();
        assert_eq!(
            e.origin,
            "environment variable DNSPLANE_TEST_NO_SUCH_VARIABLE"
        );
    }

    /// A rotated file is used after a refusal; a broken one keeps the old secret; the
    /// value is sensitive and never in Debug output.
    #[test]
    fn a_refusal_reads_a_rotated_secret_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first-s3cret\n").unwrap();
        let h =
            SecretHeader::new(SecretSource::File(path.clone()), "Bearer ", "x refused").unwrap();
        assert_eq!(h.value().as_bytes(), b"Bearer first-s3cret");
        assert!(h.value().is_sensitive());
        assert!(!format!("{h:?}").contains("first-s3cret"), "{h:?}");
        std::fs::write(&path, "second-s3cret").unwrap();
        assert_eq!(
            h.value().as_bytes(),
            b"Bearer first-s3cret",
            "no re-read before a refusal"
        );
        h.reload();
        assert_eq!(h.value().as_bytes(), b"Bearer second-s3cret");
        std::fs::write(&path, "bad\nline").unwrap();
        h.reload();
        assert_eq!(h.value().as_bytes(), b"Bearer second-s3cret");
    }
}
