//! `token_file` beside `api_server`: the bearer token is read by dnsplane, not by kube.
//! kube sends a token file's content as it is, so the final newline that
//! `echo "$TOKEN" > token` leaves made every request fail ("invalid bearer token"),
//! retried for ever. Here the token is trimmed of surrounding whitespace, an empty or
//! unreadable file is an error at start, and the file is read again at most once a
//! minute (as kube does), so a rotated token is used; a re-read that fails keeps the
//! last token, as client-go does.
use super::KubeSourceError;
use dnsplane_common::secret;
use http::header::AUTHORIZATION;
use http::{HeaderValue, Request};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the file is read again.
const REREAD: Duration = Duration::from_secs(60);

/// The token of a file, as an `Authorization` header.
#[derive(Debug)]
pub struct BearerFile {
    path: PathBuf,
    reread: Duration,
    /// The header, and when the file was last read.
    current: Mutex<(HeaderValue, Instant)>,
}

impl BearerFile {
    /// Reads `path` now: a missing, empty or unusable token is an error naming it.
    pub fn new(path: &Path) -> Result<BearerFile, KubeSourceError> {
        let header = read(path).map_err(|problem| KubeSourceError::TokenFile {
            path: path.display().to_string(),
            problem,
        })?;
        Ok(BearerFile {
            path: path.to_path_buf(),
            reread: REREAD,
            current: Mutex::new((header, Instant::now())),
        })
    }

    /// The header for the next request (the file read again when it is due).
    pub fn header(&self) -> HeaderValue {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.1.elapsed() >= self.reread {
            match read(&self.path) {
                Ok(h) => current.0 = h,
                Err(problem) => tracing::warn!(
                    file = %self.path.display(),
                    problem = %problem,
                    "The Kubernetes token file cannot be read again; the last token is used."
                ),
            }
            current.1 = Instant::now();
        }
        current.0.clone()
    }
}

fn read(path: &Path) -> Result<HeaderValue, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let token = secret::trimmed(&text).ok_or("the file holds no token")?;
    secret::sensitive_header("Bearer ", token)
        .ok_or_else(|| "the token holds a character an HTTP header cannot carry".to_string())
}

/// The layer that puts the file's token on every request of the client.
pub fn layer(
    file: Arc<BearerFile>,
) -> tower::util::MapRequestLayer<
    impl Fn(Request<kube::client::Body>) -> Request<kube::client::Body> + Clone,
> {
    tower::util::MapRequestLayer::new(move |mut req: Request<kube::client::Body>| {
        req.headers_mut().insert(AUTHORIZATION, file.header());
        req
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_trimmed_read_again_and_kept_when_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first\n").unwrap();
        let mut file = BearerFile::new(&path).unwrap();
        assert_eq!(file.header(), "Bearer first");
        assert!(file.header().is_sensitive());
        file.reread = Duration::ZERO;
        std::fs::write(&path, "  second\r\n").unwrap();
        assert_eq!(file.header(), "Bearer second", "a rotated token is used");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(file.header(), "Bearer second", "a failed re-read keeps it");
    }

    /// `echo "$TOKEN" > token`: kube sent the final newline and every request failed
    /// before it left ("invalid bearer token"). Now the list reaches the API server.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_token_file_with_a_final_newline_reaches_the_api_server() {
        use dnsplane_testing::crd::{Crd, DNSPLANE_CRD};
        let api = dnsplane_testing::kube_api::FakeKubeApi::start_with_crd(
            Crd::parse(DNSPLANE_CRD).expect("CRD"),
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "a-service-account-token\n").unwrap();
        let config = crate::config::KubernetesSourceConfig {
            api_server: Some(api.url()),
            token_file: Some(path),
            ..Default::default()
        };
        let client = super::super::client(&config).await.expect("client");
        let endpoints: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(client, &super::super::dnsendpoint_resource());
        endpoints
            .list(&kube::api::ListParams::default())
            .await
            .expect("the list reaches the API server");
    }

    #[test]
    fn a_missing_empty_or_broken_token_is_named_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let e = BearerFile::new(&path).unwrap_err().to_string();
        assert!(
            e.contains("token") && e.contains(&path.display().to_string()),
            "{e}"
        );
        std::fs::write(&path, "\n \n").unwrap();
        let e = BearerFile::new(&path).unwrap_err().to_string();
        assert!(e.contains("holds no token"), "{e}");
        std::fs::write(&path, "two\nlines\n").unwrap();
        let e = BearerFile::new(&path).unwrap_err().to_string();
        assert!(e.contains("cannot carry"), "{e}");
    }
}
