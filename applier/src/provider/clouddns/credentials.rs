//! OAuth 2 access tokens for Cloud DNS, in the order Google's own tools use:
//!
//! 1. `GOOGLE_OAUTH_ACCESS_TOKEN`: a token used as it is (as Google's Terraform
//!    provider reads it); never renewed, so it suits short runs and CI.
//! 2. A credentials JSON file: the account's `credentials_file`, else
//!    `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's application-default file
//!    (`$CLOUDSDK_CONFIG` or `~/.config/gcloud`, `application_default_credentials.json`):
//!    - `service_account`: a JWT signed RS256 with the key's private key (aws-lc-rs,
//!      already in the build for rustls and DNSSEC) and exchanged at its `token_uri`
//!      (`urn:ietf:params:oauth:grant-type:jwt-bearer`);
//!    - `authorized_user` (`gcloud auth application-default login`): the refresh
//!      token exchanged at its `token_uri`;
//!    - `external_account` (workload identity federation, e.g. GKE or GitHub OIDC):
//!      the subject token from `credential_source` (a file or a URL, text or JSON)
//!      exchanged at the STS `token_url`, then, with
//!      `service_account_impersonation_url`, for the service account's token.
//!      AWS and executable sources are refused with a message saying so.
//! 3. The metadata server (GCE, GKE, Cloud Run): `GCE_METADATA_HOST`, else
//!    `metadata.google.internal`, asked for the default service account's token.
//!
//! Tokens are kept until five minutes before they expire (a static one until the
//! provider refuses it: [`TokenSource::forget`] reads the chain again). Nothing
//! secret reaches `Debug` output or logs.
pub use crate::provider::kit::renew::{EnvReader, process_env};
use crate::provider::kit::renew::{Expiring, Kept};
use crate::provider::{ErrorClass, ProviderError};
pub use jwt::sign_jwt;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The scope dnsplane asks for: read and write Cloud DNS, nothing else.
pub const SCOPE: &str = "https://www.googleapis.com/auth/ndev.clouddns.readwrite";
/// Google's token endpoint, when a file names none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The metadata server's host, when `GCE_METADATA_HOST` is not set.
pub const DEFAULT_METADATA_HOST: &str = "metadata.google.internal";

/// One access token. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    pub secret: String,
    /// When it stops working (`None`: unknown, kept until refused).
    pub expires: Option<SystemTime>,
    /// Where it came from, for messages (`GOOGLE_OAUTH_ACCESS_TOKEN`, `service
    /// account x@y`, …).
    pub origin: String,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("secret", &"<redacted>")
            .field("expires", &self.expires)
            .field("origin", &self.origin)
            .finish()
    }
}

impl Expiring for AccessToken {
    fn expires(&self) -> Option<SystemTime> {
        self.expires
    }
}

/// The chain and its current token.
pub struct TokenSource {
    env: EnvReader,
    credentials_file: Option<PathBuf>,
    http: reqwest::Client,
    current: Kept<AccessToken>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("credentials_file", &self.credentials_file)
            .finish_non_exhaustive()
    }
}

/// A credential problem: the account cannot be used until someone fixes it.
fn refused(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorClass::Permanent, message)
}

fn transient(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorClass::Transient, message)
}

/// A credentials JSON file, whichever kind.
#[derive(Deserialize)]
struct CredentialsFile {
    #[serde(rename = "type")]
    kind: String,
    // service_account
    #[serde(default)]
    client_email: Option<String>,
    #[serde(default)]
    private_key: Option<String>,
    #[serde(default)]
    private_key_id: Option<String>,
    #[serde(default)]
    token_uri: Option<String>,
    // authorized_user
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    // external_account
    #[serde(default)]
    audience: Option<String>,
    #[serde(default)]
    subject_token_type: Option<String>,
    #[serde(default)]
    token_url: Option<String>,
    #[serde(default)]
    service_account_impersonation_url: Option<String>,
    #[serde(default)]
    credential_source: Option<CredentialSource>,
}

#[derive(Deserialize)]
struct CredentialSource {
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    environment_id: Option<String>,
    #[serde(default)]
    executable: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    format: Option<SourceFormat>,
}

#[derive(Deserialize)]
struct SourceFormat {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    subject_token_field_name: Option<String>,
}

/// An OAuth token endpoint's answer.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl TokenSource {
    pub fn new(env: EnvReader, credentials_file: Option<PathBuf>, http: reqwest::Client) -> Self {
        TokenSource {
            env,
            credentials_file,
            http,
            current: Kept::default(),
        }
    }

    /// A token valid for at least [`RENEW_BEFORE`](crate::provider::kit::renew::RENEW_BEFORE),
    /// from the chain when there is none yet or it is about to expire.
    pub async fn get(&self) -> Result<AccessToken, ProviderError> {
        self.current
            .get(async {
                let fresh = self.resolve().await?;
                tracing::debug!(origin = %fresh.origin, "Got a Google access token.");
                Ok(fresh)
            })
            .await
    }

    /// The provider refused the token: read the chain again next time.
    pub async fn forget(&self) {
        self.current.forget().await;
    }

    async fn resolve(&self) -> Result<AccessToken, ProviderError> {
        let env = |k: &str| (self.env)(k);
        if let Some(t) = env("GOOGLE_OAUTH_ACCESS_TOKEN") {
            return Ok(AccessToken {
                secret: t.trim().to_string(),
                expires: None,
                origin: "GOOGLE_OAUTH_ACCESS_TOKEN".into(),
            });
        }
        let explicit = self
            .credentials_file
            .clone()
            .map(|p| (p, "credentials_file"))
            .or_else(|| {
                env("GOOGLE_APPLICATION_CREDENTIALS")
                    .map(|p| (PathBuf::from(p), "GOOGLE_APPLICATION_CREDENTIALS"))
            });
        if let Some((path, from)) = explicit {
            return self.read_file(&path, from).await;
        }
        let adc = env("CLOUDSDK_CONFIG")
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config/gcloud")))
            .map(|d| d.join("application_default_credentials.json"));
        if let Some(path) = adc.filter(|p| p.is_file()) {
            return self
                .read_file(&path, "gcloud application-default credentials")
                .await;
        }
        self.metadata().await
    }

    async fn read_file(&self, path: &Path, from: &str) -> Result<AccessToken, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            refused(format!(
                "cannot read the Google credentials file {} ({from}): {e}",
                path.display()
            ))
        })?;
        let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| {
            refused(format!(
                "the Google credentials file {} ({from}) is not a credentials JSON: {e}",
                path.display()
            ))
        })?;
        let missing = |field: &str| {
            refused(format!(
                "the Google credentials file {} ({from}) of type {} has no {field}",
                path.display(),
                file.kind
            ))
        };
        match file.kind.as_str() {
            "service_account" => {
                let email = file
                    .client_email
                    .as_deref()
                    .ok_or_else(|| missing("client_email"))?;
                let pem = file
                    .private_key
                    .as_deref()
                    .ok_or_else(|| missing("private_key"))?;
                let token_uri = file.token_uri.as_deref().unwrap_or(DEFAULT_TOKEN_URI);
                let jwt = sign_jwt(
                    email,
                    file.private_key_id.as_deref(),
                    token_uri,
                    pem,
                    SystemTime::now(),
                )
                .map_err(|e| {
                    refused(format!(
                        "service account {email} in {}: {e}",
                        path.display()
                    ))
                })?;
                let t = self
                    .exchange(
                        token_uri,
                        &[
                            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                            ("assertion", &jwt),
                        ],
                        &format!("service account {email}"),
                    )
                    .await?;
                Ok(t)
            }
            "authorized_user" => {
                let id = file
                    .client_id
                    .as_deref()
                    .ok_or_else(|| missing("client_id"))?;
                let secret = file
                    .client_secret
                    .as_deref()
                    .ok_or_else(|| missing("client_secret"))?;
                let refresh = file
                    .refresh_token
                    .as_deref()
                    .ok_or_else(|| missing("refresh_token"))?;
                let token_uri = file.token_uri.as_deref().unwrap_or(DEFAULT_TOKEN_URI);
                self.exchange(
                    token_uri,
                    &[
                        ("grant_type", "refresh_token"),
                        ("client_id", id),
                        ("client_secret", secret),
                        ("refresh_token", refresh),
                    ],
                    &format!("authorized user {id}"),
                )
                .await
            }
            "external_account" => self.external_account(&file, path).await,
            other => Err(refused(format!(
                "the Google credentials file {} ({from}) is of type {other:?}; dnsplane reads service_account, authorized_user and external_account",
                path.display()
            ))),
        }
    }

    /// Workload identity federation: the subject token exchanged at STS, then for the
    /// impersonated service account's token when the file names one.
    async fn external_account(
        &self,
        file: &CredentialsFile,
        path: &Path,
    ) -> Result<AccessToken, ProviderError> {
        let need = |v: &Option<String>, field: &str| {
            v.clone().ok_or_else(|| {
                refused(format!(
                    "the external_account credentials {} have no {field}",
                    path.display()
                ))
            })
        };
        let audience = need(&file.audience, "audience")?;
        let token_type = need(&file.subject_token_type, "subject_token_type")?;
        let token_url = need(&file.token_url, "token_url")?;
        let source = file.credential_source.as_ref().ok_or_else(|| {
            refused(format!(
                "the external_account credentials {} have no credential_source",
                path.display()
            ))
        })?;
        if source.environment_id.is_some() || source.executable.is_some() {
            return Err(refused(format!(
                "the external_account credentials {} take their subject token from AWS or an executable, which dnsplane does not read; use a file or URL source, or a service account key",
                path.display()
            )));
        }
        let raw = if let Some(f) = &source.file {
            std::fs::read_to_string(f)
                .map_err(|e| refused(format!("cannot read the subject token file {f}: {e}")))?
        } else if let Some(url) = &source.url {
            let mut req = self.http.get(url);
            for (k, v) in &source.headers {
                req = req.header(k, v);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| transient(format!("subject token from {url}: {e}")))?;
            let status = resp.status().as_u16();
            let body = resp
                .text()
                .await
                .map_err(|e| transient(format!("subject token from {url}: {e}")))?;
            if status != 200 {
                return Err(transient(format!(
                    "subject token from {url} answered {status}"
                )));
            }
            body
        } else {
            return Err(refused(format!(
                "the external_account credentials {} have a credential_source with neither file nor url",
                path.display()
            )));
        };
        let subject = match source.format.as_ref() {
            Some(f) if f.kind.as_deref() == Some("json") => {
                let field = f
                    .subject_token_field_name
                    .as_deref()
                    .unwrap_or("access_token");
                serde_json::from_str::<serde_json::Value>(&raw)
                    .ok()
                    .and_then(|v| v.get(field).and_then(|t| t.as_str()).map(str::to_string))
                    .ok_or_else(|| {
                        refused(format!(
                            "the subject token JSON has no string field {field:?}"
                        ))
                    })?
            }
            _ => raw.trim().to_string(),
        };
        let sts = self
            .exchange(
                &token_url,
                &[
                    (
                        "grant_type",
                        "urn:ietf:params:oauth:grant-type:token-exchange",
                    ),
                    ("audience", &audience),
                    ("scope", "https://www.googleapis.com/auth/cloud-platform"),
                    (
                        "requested_token_type",
                        "urn:ietf:params:oauth:token-type:access_token",
                    ),
                    ("subject_token_type", &token_type),
                    ("subject_token", &subject),
                ],
                &format!("workload identity {audience}"),
            )
            .await?;
        let Some(url) = &file.service_account_impersonation_url else {
            return Ok(sts);
        };
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Impersonated {
            access_token: String,
            #[serde(default)]
            expire_time: Option<String>,
        }
        let what = format!("impersonating via {url}");
        let resp = self
            .http
            .post(url)
            .bearer_auth(&sts.secret)
            .json(&serde_json::json!({"scope": [SCOPE], "lifetime": "3600s"}))
            .send()
            .await
            .map_err(|e| transient(format!("{what}: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .text()
            .await
            .map_err(|e| transient(format!("{what}: {e}")))?;
        if status != 200 {
            let err = super::wire::parse_error(&body);
            let class = if status >= 500 || status == 429 {
                ErrorClass::Transient
            } else {
                ErrorClass::Permanent
            };
            return Err(ProviderError::new(
                class,
                format!("{what} answered {status}: {}", err.message),
            ));
        }
        let i: Impersonated = serde_json::from_str(&body)
            .map_err(|e| transient(format!("{what}: cannot decode the answer: {e}")))?;
        Ok(AccessToken {
            secret: i.access_token,
            expires: i
                .expire_time
                .as_deref()
                .and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok()),
            origin: format!("workload identity {audience} as {url}"),
        })
    }

    /// The default service account's token from the metadata server.
    async fn metadata(&self) -> Result<AccessToken, ProviderError> {
        let set = (self.env)("GCE_METADATA_HOST");
        let host = set.clone().unwrap_or_else(|| DEFAULT_METADATA_HOST.into());
        let url =
            format!("http://{host}/computeMetadata/v1/instance/service-accounts/default/token");
        let none_found = |why: String| {
            let msg = format!(
                "no Google credentials: GOOGLE_OAUTH_ACCESS_TOKEN is not set, no credentials file (credentials_file, GOOGLE_APPLICATION_CREDENTIALS, gcloud's application_default_credentials.json), and the metadata server at {host} {why}"
            );
            // An explicitly named metadata server that fails is worth retrying; the
            // default name outside Google Cloud is simply absent.
            if set.is_some() {
                transient(msg)
            } else {
                refused(msg)
            }
        };
        let resp = self
            .http
            .get(&url)
            .header("Metadata-Flavor", "Google")
            .timeout(Duration::from_secs(3))
            .send()
            .await
            .map_err(|e| none_found(format!("did not answer: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .text()
            .await
            .map_err(|e| none_found(format!("did not answer: {e}")))?;
        if status != 200 {
            return Err(none_found(format!(
                "answered {status}: {}",
                body.trim().chars().take(200).collect::<String>()
            )));
        }
        let t: TokenAnswer = serde_json::from_str(&body)
            .map_err(|e| none_found(format!("answered something else than a token: {e}")))?;
        Ok(AccessToken {
            secret: t.access_token,
            expires: t
                .expires_in
                .map(|s| SystemTime::now() + Duration::from_secs(s)),
            origin: format!("metadata server {host}"),
        })
    }

    /// A form POST to an OAuth token endpoint.
    async fn exchange(
        &self,
        uri: &str,
        form: &[(&str, &str)],
        origin: &str,
    ) -> Result<AccessToken, ProviderError> {
        let what = format!("token exchange at {uri} for {origin}");
        let mut body = reqwest::Url::parse("http://form.invalid/").expect("a valid URL");
        body.query_pairs_mut().extend_pairs(form);
        let resp = self
            .http
            .post(uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.query().unwrap_or_default().to_string())
            .send()
            .await
            .map_err(|e| transient(format!("{what}: {e}")))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| transient(format!("{what}: {e}")))?;
        if status != 200 {
            // OAuth errors: {"error":"invalid_grant","error_description":"…"}.
            #[derive(Deserialize)]
            struct OAuthError {
                error: String,
                #[serde(default)]
                error_description: String,
            }
            let detail = serde_json::from_str::<OAuthError>(&text)
                .map(|e| format!("{}: {}", e.error, e.error_description))
                .unwrap_or_else(|_| text.trim().chars().take(300).collect());
            let class = if status >= 500 || status == 429 {
                ErrorClass::Transient
            } else {
                ErrorClass::Permanent
            };
            return Err(ProviderError::new(
                class,
                format!("{what} answered {status}: {detail}"),
            ));
        }
        let t: TokenAnswer = serde_json::from_str(&text)
            .map_err(|e| transient(format!("{what}: cannot decode the answer: {e}")))?;
        Ok(AccessToken {
            secret: t.access_token,
            expires: t
                .expires_in
                .map(|s| SystemTime::now() + Duration::from_secs(s)),
            origin: origin.to_string(),
        })
    }
}

mod jwt;
#[cfg(test)]
mod tests;
