//! NetBox's REST API, as the source reads it.
use crate::source::header_file::HeaderFile;
use serde::de::DeserializeOwned;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What went wrong reading NetBox; the read it belonged to is not used.
#[derive(Debug, thiserror::Error)]
pub enum NetboxError {
    #[error("{url}: {source}")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url}: NetBox answered {status}: {body}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
        body: String,
    },
    #[error("{url}: not the list NetBox sends: {source}")]
    Decode {
        url: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{url}: not a URL: {problem}")]
    Url { url: String, problem: String },
    #[error("{url}: more than {max} pages; a `next` link loops")]
    Loop { url: String, max: usize },
}

/// One page of a NetBox list.
#[derive(Debug, serde::Deserialize)]
struct Page<T> {
    next: Option<String>,
    results: Vec<T>,
}

/// An object NetBox lists: the list is paged by its id.
pub trait HasId {
    fn id(&self) -> u64;
}

/// How many objects a page asks for (NetBox's `MAX_PAGE_SIZE` defaults to 1000).
pub const PAGE_SIZE: usize = 1000;
/// More pages than this is a loop, not a list (10 million objects).
const MAX_PAGES: usize = 10_000;

/// A NetBox instance and the token to read it with.
#[derive(Debug, Clone)]
pub struct NetboxClient {
    base: String,
    token: Arc<HeaderFile>,
    http: reqwest::Client,
}

/// How NetBox 4.7 wants a token sent: a v2 token (`nbt_<key>.<token>`) as `Bearer`,
/// a v1 token (40 hex digits) as `Token`.
pub fn scheme(token: &str) -> &'static str {
    if token.starts_with("nbt_") {
        "Bearer "
    } else {
        "Token "
    }
}

impl NetboxClient {
    /// `base` is NetBox's URL (`https://netbox.example.com`); `ca_file` the CA bundle
    /// (PEM) its certificate is checked against instead of the system's roots.
    pub fn new(
        base: &str,
        token: Arc<HeaderFile>,
        ca_file: Option<&Path>,
        timeout: Duration,
    ) -> Result<NetboxClient, String> {
        let mut http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout);
        if let Some(path) = ca_file {
            let pem =
                std::fs::read(path).map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "ca_file {}: no PEM certificate in it",
                    path.display()
                ));
            }
            http = http.tls_certs_only(certs);
        }
        let http = http.build().map_err(|e| format!("the HTTP client: {e}"))?;
        Ok(NetboxClient {
            base: base.trim_end_matches('/').to_string(),
            token,
            http,
        })
    }

    /// NetBox's URL, without a final `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Every object of the list at `path` (`/api/ipam/ip-addresses/`) with `query`, and
    /// how many requests the read took.
    ///
    /// Paged by id (`ordering=id`, `id__gt=` the last id read), not by `offset`: with
    /// offsets, an object deleted during the read shifts the rest back and the next
    /// page skips one that still exists, and a skipped address reads as a record to
    /// delete. By id, every object that exists throughout the read is read. Whole or an
    /// error: a failed page fails the read.
    pub async fn list_all_counted<T: DeserializeOwned + HasId>(
        &self,
        path: &str,
        query: &[(String, String)],
    ) -> Result<(Vec<T>, usize), NetboxError> {
        let base = format!("{}{path}", self.base);
        let mut all: Vec<T> = Vec::new();
        for requests in 1..=MAX_PAGES {
            let mut url = reqwest::Url::parse(&base).map_err(|e| NetboxError::Url {
                url: base.clone(),
                problem: e.to_string(),
            })?;
            {
                let mut q = url.query_pairs_mut();
                q.extend_pairs(query)
                    .append_pair("ordering", "id")
                    .append_pair("limit", &PAGE_SIZE.to_string());
                if let Some(last) = all.last() {
                    q.append_pair("id__gt", &last.id().to_string());
                }
            }
            let page: Page<T> = self.get(url.as_str()).await?;
            let more = page.next.is_some() && !page.results.is_empty();
            all.extend(page.results);
            if !more {
                return Ok((all, requests));
            }
        }
        Err(NetboxError::Loop {
            url: base,
            max: MAX_PAGES,
        })
    }

    /// One object (`/api/ipam/ip-addresses/7/`); `None` when NetBox has none (404).
    pub async fn get_one<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, NetboxError> {
        match self.get(&format!("{}{path}", self.base)).await {
            Err(NetboxError::Status { status, .. }) if status == reqwest::StatusCode::NOT_FOUND => {
                Ok(None)
            }
            other => other.map(Some),
        }
    }

    /// A bulk `PATCH` of the list at `path` (`[{"id": 7, …}, …]`): NetBox applies all of
    /// it or none.
    pub async fn patch(&self, path: &str, body: &serde_json::Value) -> Result<(), NetboxError> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .http
            .patch(&url)
            .header(reqwest::header::AUTHORIZATION, self.token.header())
            .header(reqwest::header::ACCEPT, "application/json")
            .json(body)
            .send()
            .await
            .map_err(|source| NetboxError::Transport {
                url: url.clone(),
                source,
            })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let body = resp.text().await.unwrap_or_default();
        Err(NetboxError::Status {
            url,
            status,
            body: body.chars().take(300).collect(),
        })
    }

    async fn get<T: DeserializeOwned>(&self, url: &str) -> Result<T, NetboxError> {
        let transport = |source| NetboxError::Transport {
            url: url.to_string(),
            source,
        };
        let resp = self
            .http
            .get(url)
            .header(reqwest::header::AUTHORIZATION, self.token.header())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(transport)?;
        if !status.is_success() {
            let body = String::from_utf8_lossy(&bytes);
            return Err(NetboxError::Status {
                url: url.to_string(),
                status,
                body: body.chars().take(300).collect(),
            });
        }
        serde_json::from_slice(&bytes).map_err(|source| NetboxError::Decode {
            url: url.to_string(),
            source,
        })
    }
}
