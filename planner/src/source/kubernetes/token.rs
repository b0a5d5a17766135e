//! `token_file` beside `api_server`: the bearer token is read by dnsplane, not by kube.
//! kube sends a token file's content as it is, so the final newline that
//! `echo "$TOKEN" > token` leaves made every request fail ("invalid bearer token"),
//! retried for ever. Here the token is trimmed of surrounding whitespace, an empty or
//! unreadable file is an error at start, and the file is read again at most once a
//! minute (as kube does), so a rotated token is used; a re-read that fails keeps the
//! last token, as client-go does.
use super::KubeSourceError;
use crate::source::header_file::HeaderFile;
use http::Request;
use http::header::AUTHORIZATION;
use std::path::Path;
use std::sync::Arc;

/// The token of a file, as an `Authorization: Bearer` header.
pub type BearerFile = HeaderFile;

/// Reads `path` now: a missing, empty or unusable token is an error naming it.
pub fn bearer_file(path: &Path) -> Result<BearerFile, KubeSourceError> {
    HeaderFile::new(path, |_| "Bearer ").map_err(|problem| KubeSourceError::TokenFile {
        path: path.display().to_string(),
        problem,
    })
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
    #[test]
    fn a_token_file_that_cannot_be_used_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let e = super::bearer_file(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
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
}
