//! A token kept in a file, sent as an `Authorization` header (the Kubernetes and
//! NetBox sources' `token_file`).
//!
//! The token is trimmed of surrounding whitespace (`echo "$TOKEN" > token` leaves a
//! final newline no server accepts), an empty or unreadable file is an error at start,
//! and the file is read again at most once a minute, so a rotated token is used; a
//! re-read that fails keeps the last token, as client-go does.
use dnsplane_common::secret;
use http::HeaderValue;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the file is read again.
const REREAD: Duration = Duration::from_secs(60);

/// The scheme a token is sent with (`"Bearer "`), chosen by looking at it.
pub type Scheme = fn(&str) -> &'static str;

/// A file's token, as an `Authorization` header.
#[derive(Debug)]
pub struct HeaderFile {
    path: PathBuf,
    scheme: Scheme,
    pub(crate) reread: Duration,
    /// The header, and when the file was last read.
    current: Mutex<(HeaderValue, Instant)>,
}

impl HeaderFile {
    /// Reads `path` now: `Err` says why it holds no usable token.
    pub fn new(path: &Path, scheme: Scheme) -> Result<HeaderFile, String> {
        let header = read(path, scheme)?;
        Ok(HeaderFile {
            path: path.to_path_buf(),
            scheme,
            reread: REREAD,
            current: Mutex::new((header, Instant::now())),
        })
    }

    /// The header for the next request (the file read again when it is due).
    pub fn header(&self) -> HeaderValue {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.1.elapsed() >= self.reread {
            match read(&self.path, self.scheme) {
                Ok(h) => current.0 = h,
                Err(problem) => tracing::warn!(
                    file = %self.path.display(),
                    problem = %problem,
                    "The token file cannot be read again; the last token is used."
                ),
            }
            current.1 = Instant::now();
        }
        current.0.clone()
    }
}

fn read(path: &Path, scheme: Scheme) -> Result<HeaderValue, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let token = secret::trimmed(&text).ok_or("the file holds no token")?;
    secret::sensitive_header(scheme(token), token)
        .ok_or_else(|| "the token holds a character an HTTP header cannot carry".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_trimmed_read_again_and_kept_when_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first\n").unwrap();
        let mut file = HeaderFile::new(&path, |_| "Bearer ").unwrap();
        assert_eq!(file.header(), "Bearer first");
        assert!(file.header().is_sensitive());
        file.reread = Duration::ZERO;
        std::fs::write(&path, "  second\r\n").unwrap();
        assert_eq!(file.header(), "Bearer second", "a rotated token is used");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(file.header(), "Bearer second", "a failed re-read keeps it");
    }

    #[test]
    fn a_missing_empty_or_broken_token_is_named_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let e = HeaderFile::new(&path, |_| "Bearer ").unwrap_err();
        assert!(e.contains("No such file"), "{e}");
        std::fs::write(&path, "\n \n").unwrap();
        let e = HeaderFile::new(&path, |_| "Bearer ").unwrap_err();
        assert!(e.contains("holds no token"), "{e}");
        std::fs::write(&path, "two\nlines\n").unwrap();
        let e = HeaderFile::new(&path, |_| "Bearer ").unwrap_err();
        assert!(e.contains("cannot carry"), "{e}");
    }
}
