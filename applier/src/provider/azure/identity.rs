//! Where the `azure` driver's bearer tokens come from, tried in this order:
//!
//! 1. **a token obtained elsewhere**: `token_file` or `token_env` in the account table
//!    (kept until Azure refuses it, then read again);
//! 2. **workload identity**: `federated_token_file` or `AZURE_FEDERATED_TOKEN_FILE`,
//!    with the tenant and client ids: the file's JWT is the `client_assertion` of a
//!    client-credentials grant, read again for every token so that the platform's
//!    rotation of the file is followed;
//! 3. **a client secret**: `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`.
//!
//! Tokens are kept until 5 minutes before they expire, and dropped when Azure answers
//! 401 (the caller then asks once more). Secrets and tokens never appear in `Debug`
//! output, logs or errors; file contents are trimmed.
use super::config::{AzureConfig, AzureSetupError};
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::Secret;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The audience of Azure Resource Manager tokens.
pub const ARM_SCOPE: &str = "https://management.azure.com/.default";
pub use crate::provider::kit::renew::RENEW_BEFORE;
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

pub use crate::provider::kit::renew::EnvReader;
use crate::provider::kit::renew::{Expiring, Kept};

/// The process environment, ignoring empty variables.
pub fn process_env() -> EnvReader {
    Arc::new(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
}

/// One access token. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    pub secret: Secret<String>,
    /// When it stops working (`None`: unknown, kept until refused).
    pub expires: Option<SystemTime>,
}

impl Expiring for AccessToken {
    fn expires(&self) -> Option<SystemTime> {
        self.expires
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("secret", &"<redacted>")
            .field("expires", &self.expires)
            .finish()
    }
}

/// A token obtained elsewhere: where to read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    File(PathBuf),
    /// The name of an environment variable.
    Env(String),
}

/// How tokens are obtained. `Debug` shows the kind, ids and paths, never a secret.
#[derive(Clone)]
pub enum Credential {
    Token(TokenSource),
    Federated {
        tenant: String,
        client: String,
        file: PathBuf,
    },
    ClientSecret {
        tenant: String,
        client: String,
        secret: Secret<String>,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Token(s) => f.debug_tuple("Token").field(s).finish(),
            Credential::Federated {
                tenant,
                client,
                file,
            } => f
                .debug_struct("Federated")
                .field("tenant", tenant)
                .field("client", client)
                .field("file", file)
                .finish(),
            Credential::ClientSecret { tenant, client, .. } => f
                .debug_struct("ClientSecret")
                .field("tenant", tenant)
                .field("client", client)
                .field("secret", &"<redacted>")
                .finish(),
        }
    }
}

impl Credential {
    /// The credential the account table and environment give, in the order of the
    /// module doc; an error naming what is missing when none is complete.
    pub fn resolve(cfg: &AzureConfig, env: &EnvReader) -> Result<Credential, AzureSetupError> {
        if let Some(f) = &cfg.token_file {
            return Ok(Credential::Token(TokenSource::File(f.clone())));
        }
        if let Some(v) = &cfg.token_env {
            return Ok(Credential::Token(TokenSource::Env(v.trim().to_string())));
        }
        let tenant = cfg.tenant_id.clone().or_else(|| env("AZURE_TENANT_ID"));
        let client = cfg.client_id.clone().or_else(|| env("AZURE_CLIENT_ID"));
        let federated = cfg
            .federated_token_file
            .clone()
            .or_else(|| env("AZURE_FEDERATED_TOKEN_FILE").map(PathBuf::from));
        let secret = env("AZURE_CLIENT_SECRET");
        let ids = |how: &str| match (&tenant, &client) {
            (Some(t), Some(c)) => Ok((t.trim().to_string(), c.trim().to_string())),
            _ => Err(AzureSetupError::Credentials(format!(
                "{how} needs the tenant and client ids: set AZURE_TENANT_ID and AZURE_CLIENT_ID (or tenant_id and client_id)"
            ))),
        };
        if let Some(file) = federated {
            let (tenant, client) = ids("the federated token file (workload identity)")?;
            return Ok(Credential::Federated {
                tenant,
                client,
                file,
            });
        }
        if let Some(secret) = secret {
            let (tenant, client) = ids("AZURE_CLIENT_SECRET")?;
            return Ok(Credential::ClientSecret {
                tenant,
                client,
                secret: Secret::new(secret.trim().to_string()),
            });
        }
        Err(AzureSetupError::Credentials(
            "none found: set token_file or token_env, or AZURE_FEDERATED_TOKEN_FILE, or AZURE_CLIENT_SECRET (with AZURE_TENANT_ID and AZURE_CLIENT_ID)".into(),
        ))
    }

    /// What kind of credential, for messages.
    pub fn describe(&self) -> String {
        match self {
            Credential::Token(TokenSource::File(p)) => format!("the token in file {}", p.display()),
            Credential::Token(TokenSource::Env(v)) => {
                format!("the token in environment variable {v}")
            }
            Credential::Federated { client, file, .. } => format!(
                "client {client} with the federated token file {}",
                file.display()
            ),
            Credential::ClientSecret { client, .. } => {
                format!("client {client} with its client secret")
            }
        }
    }
}

fn refused(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorClass::Permanent, message)
}

fn transient(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorClass::Transient, message)
}

/// Reads a secret file or variable: trimmed, never empty; errors name where, never what.
fn read_secret(source: &TokenSource, env: &EnvReader) -> Result<String, ProviderError> {
    let (raw, origin) = match source {
        TokenSource::File(p) => (
            std::fs::read_to_string(p).map_err(|e| e.to_string()),
            format!("file {}", p.display()),
        ),
        TokenSource::Env(v) => (
            env(v).ok_or_else(|| "it is not set".to_string()),
            format!("environment variable {v}"),
        ),
    };
    let raw =
        raw.map_err(|e| refused(format!("cannot read the Azure token from {origin}: {e}")))?;
    let t = raw.trim();
    if t.is_empty() {
        return Err(refused(format!("the Azure token from {origin} is empty")));
    }
    Ok(t.to_string())
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

/// An OAuth error answer: `{"error":"invalid_client","error_description":"AADSTS…"}`.
#[derive(Deserialize)]
struct OAuthError {
    error: String,
    #[serde(default)]
    error_description: String,
}

/// The credential and its current token.
pub struct Identity {
    credential: Credential,
    authority: String,
    env: EnvReader,
    http: reqwest::Client,
    current: Kept<AccessToken>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("credential", &self.credential)
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

impl Identity {
    pub fn new(
        credential: Credential,
        authority: &str,
        env: EnvReader,
        http: reqwest::Client,
    ) -> Identity {
        Identity {
            credential,
            authority: authority.trim().trim_end_matches('/').to_string(),
            env,
            http,
            current: Kept::default(),
        }
    }

    pub fn credential(&self) -> &Credential {
        &self.credential
    }

    /// A token valid for at least [`RENEW_BEFORE`]: the kept one, else a new one.
    pub async fn get(&self) -> Result<AccessToken, ProviderError> {
        self.current
            .get(async {
                let fresh = self.fetch().await?;
                tracing::debug!(credential = %self.credential.describe(), "Got an Azure access token.");
                Ok(fresh)
            })
            .await
    }

    /// Azure refused the token: the next [`get`](Self::get) obtains another.
    pub async fn forget(&self) {
        self.current.forget().await;
    }

    /// `{authority}/{tenant}/oauth2/v2.0/token`.
    pub fn token_url(&self, tenant: &str) -> String {
        format!("{}/{tenant}/oauth2/v2.0/token", self.authority)
    }

    async fn fetch(&self) -> Result<AccessToken, ProviderError> {
        match &self.credential {
            Credential::Token(source) => Ok(AccessToken {
                secret: Secret::new(read_secret(source, &self.env)?),
                expires: None,
            }),
            Credential::Federated {
                tenant,
                client,
                file,
            } => {
                let assertion = read_secret(&TokenSource::File(file.clone()), &self.env)?;
                let form = [
                    ("grant_type", "client_credentials"),
                    ("client_id", client.as_str()),
                    ("scope", ARM_SCOPE),
                    ("client_assertion_type", ASSERTION_TYPE),
                    ("client_assertion", assertion.as_str()),
                ];
                self.exchange(tenant, &form).await
            }
            Credential::ClientSecret {
                tenant,
                client,
                secret,
            } => {
                let form = [
                    ("grant_type", "client_credentials"),
                    ("client_id", client.as_str()),
                    ("scope", ARM_SCOPE),
                    ("client_secret", secret.expose().as_str()),
                ];
                self.exchange(tenant, &form).await
            }
        }
    }

    /// One client-credentials grant. Refusals (4xx) are permanent and carry Entra's
    /// error code and description; 429 and 5xx are transient.
    async fn exchange(
        &self,
        tenant: &str,
        form: &[(&str, &str)],
    ) -> Result<AccessToken, ProviderError> {
        let uri = self.token_url(tenant);
        let what = format!("token request at {uri} for {}", self.credential.describe());
        let mut body = reqwest::Url::parse("http://form.invalid/").expect("a valid URL");
        body.query_pairs_mut().extend_pairs(form);
        let resp = self
            .http
            .post(&uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.query().unwrap_or_default().to_string())
            .send()
            .await
            .map_err(|e| crate::provider::transport_error(&what, &e, false))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| transient(format!("{what}: {e}")))?;
        if status != 200 {
            let detail = serde_json::from_str::<OAuthError>(&text)
                .map(|e| format!("{}: {}", e.error, e.error_description))
                .unwrap_or_else(|_| text.trim().chars().take(300).collect());
            let e = ProviderError::new(
                if status >= 500 || status == 429 || status == 408 {
                    ErrorClass::Transient
                } else {
                    ErrorClass::Permanent
                },
                format!("{what} answered {status}: {detail}"),
            );
            return Err(if status == 429 { e.throttle() } else { e });
        }
        let t: TokenAnswer = serde_json::from_str(&text)
            .map_err(|e| transient(format!("{what}: cannot decode the answer: {e}")))?;
        // `expires_in` is a number, or (Entra's v1 endpoint) a string of one.
        let secs = t.expires_in.and_then(|v| match v {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        });
        Ok(AccessToken {
            secret: Secret::new(t.access_token.trim().to_string()),
            expires: secs.map(|s| SystemTime::now() + Duration::from_secs(s)),
        })
    }
}
