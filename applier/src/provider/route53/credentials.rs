//! AWS credentials from the standard chain, in the SDKs' order: the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), web identity
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`: EKS's IRSA, exchanged at STS),
//! then the shared files' profile (`~/.aws/credentials`, `~/.aws/config`: static keys,
//! or a role with a web identity token file). Instance metadata, SSO and
//! `credential_process` are not read: the error says so, rather than silently finding
//! nothing.
//!
//! Credentials are kept until five minutes before they expire (static ones until the
//! provider refuses them: [`CredentialChain::forget`] makes the next request read the
//! chain again, so a rotated credentials file is picked up).
use crate::provider::{ErrorClass, ProviderError};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::SystemTime;

pub use crate::provider::kit::renew::{EnvReader, process_env};
use crate::provider::kit::renew::{Expiring, Kept};

/// One set of AWS credentials. `Debug` never prints the secret or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    /// When temporary credentials stop working.
    pub expires: Option<SystemTime>,
    /// Where they came from, for messages (`environment`, `profile default`, …).
    pub origin: String,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires", &self.expires)
            .field("origin", &self.origin)
            .finish()
    }
}

impl Expiring for AwsCredentials {
    fn expires(&self) -> Option<SystemTime> {
        self.expires
    }
}

/// The chain and its current credentials.
pub struct CredentialChain {
    env: EnvReader,
    profile: Option<String>,
    credentials_file: Option<PathBuf>,
    sts_endpoint: String,
    http: reqwest::Client,
    current: Kept<AwsCredentials>,
}

impl std::fmt::Debug for CredentialChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialChain")
            .field("profile", &self.profile)
            .field("sts_endpoint", &self.sts_endpoint)
            .finish_non_exhaustive()
    }
}

/// A credential problem: the account cannot be used until someone fixes it.
fn refused(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorClass::Permanent, message)
}

impl CredentialChain {
    pub fn new(
        env: EnvReader,
        profile: Option<String>,
        credentials_file: Option<PathBuf>,
        sts_endpoint: String,
        http: reqwest::Client,
    ) -> Self {
        CredentialChain {
            env,
            profile,
            credentials_file,
            sts_endpoint,
            http,
            current: Kept::default(),
        }
    }

    /// Credentials valid for at least [`RENEW_BEFORE`](crate::provider::kit::renew::RENEW_BEFORE),
    /// read from the chain when there are none yet or they are about to expire.
    pub async fn get(&self) -> Result<AwsCredentials, ProviderError> {
        self.current
            .get(async {
                let fresh = self.resolve().await?;
                tracing::debug!(origin = %fresh.origin, access_key_id = %fresh.access_key_id, "Read AWS credentials.");
                Ok(fresh)
            })
            .await
    }

    /// The provider refused the credentials: read the chain again next time.
    pub async fn forget(&self) {
        self.current.forget().await;
    }

    async fn resolve(&self) -> Result<AwsCredentials, ProviderError> {
        let env = |k: &str| (self.env)(k);
        match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => {
                return Ok(AwsCredentials {
                    access_key_id: id.trim().to_string(),
                    secret_access_key: secret.trim().to_string(),
                    session_token: env("AWS_SESSION_TOKEN").map(|t| t.trim().to_string()),
                    expires: None,
                    origin: "environment".into(),
                });
            }
            (Some(_), None) => {
                return Err(refused(
                    "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
                ));
            }
            (None, Some(_)) => {
                return Err(refused(
                    "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not",
                ));
            }
            (None, None) => {}
        }
        if let (Some(token_file), Some(role)) =
            (env("AWS_WEB_IDENTITY_TOKEN_FILE"), env("AWS_ROLE_ARN"))
        {
            let session = env("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| "dnsplane".into());
            return self
                .web_identity(&PathBuf::from(token_file), &role, &session)
                .await;
        }
        self.read_profile().await
    }

    /// The profile's keys, or its role assumed with a web identity token file.
    async fn read_profile(&self) -> Result<AwsCredentials, ProviderError> {
        let env = |k: &str| (self.env)(k);
        let name = self
            .profile
            .clone()
            .or_else(|| env("AWS_PROFILE"))
            .unwrap_or_else(|| "default".into());
        let home = env("HOME").map(PathBuf::from);
        let in_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
        let credentials_file = self
            .credentials_file
            .clone()
            .or_else(|| env("AWS_SHARED_CREDENTIALS_FILE").map(PathBuf::from))
            .or_else(|| in_home(".aws/credentials"));
        let config_file = env("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| in_home(".aws/config"));
        let mut keys = Vec::new();
        let mut looked = Vec::new();
        // The credentials file names a profile `[name]`; the config file `[profile
        // name]` (or `[default]`). The credentials file wins key by key.
        for (file, section) in [
            (credentials_file, name.clone()),
            (
                config_file,
                if name == "default" {
                    name.clone()
                } else {
                    format!("profile {name}")
                },
            ),
        ] {
            let Some(file) = file else { continue };
            looked.push(file.display().to_string());
            match std::fs::read_to_string(&file) {
                Ok(text) => keys.extend(ini_section(&text, &section)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(refused(format!(
                        "cannot read AWS shared config {}: {e}",
                        file.display()
                    )));
                }
            }
        }
        let get = |k: &str| {
            keys.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let origin = format!("profile {name}");
        if let (Some(id), Some(secret)) = (get("aws_access_key_id"), get("aws_secret_access_key")) {
            return Ok(AwsCredentials {
                access_key_id: id,
                secret_access_key: secret,
                session_token: get("aws_session_token"),
                expires: None,
                origin,
            });
        }
        if let (Some(role), Some(token_file)) = (get("role_arn"), get("web_identity_token_file")) {
            let session = get("role_session_name").unwrap_or_else(|| "dnsplane".into());
            return self
                .web_identity(&PathBuf::from(token_file), &role, &session)
                .await;
        }
        if let Some(unsupported) = [
            "sso_session",
            "sso_start_url",
            "credential_process",
            "source_profile",
        ]
        .into_iter()
        .find(|k| get(k).is_some())
        {
            return Err(refused(format!(
                "AWS {origin} uses {unsupported}, which dnsplane does not read; give it keys (environment or profile) or a web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN)"
            )));
        }
        Err(refused(format!(
            "no AWS credentials: none in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), no web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN), and {origin} has no keys in {} (instance metadata is not read)",
            if looked.is_empty() {
                "the shared files (HOME is not set)".to_string()
            } else {
                looked.join(" or ")
            }
        )))
    }

    /// `AssumeRoleWithWebIdentity` at STS (unsigned: the token is the proof).
    async fn web_identity(
        &self,
        token_file: &PathBuf,
        role_arn: &str,
        session: &str,
    ) -> Result<AwsCredentials, ProviderError> {
        let token = std::fs::read_to_string(token_file).map_err(|e| {
            refused(format!(
                "cannot read the web identity token {}: {e}",
                token_file.display()
            ))
        })?;
        let what = format!("STS AssumeRoleWithWebIdentity for {role_arn}");
        // A form body, encoded as a query string is.
        let mut form = reqwest::Url::parse("http://form.invalid/").expect("a valid URL");
        form.query_pairs_mut().extend_pairs([
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session),
            ("WebIdentityToken", token.trim()),
        ]);
        let resp = self
            .http
            .post(self.sts_endpoint.trim_end_matches('/').to_string() + "/")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.query().unwrap_or_default().to_string())
            .send()
            .await
            .map_err(|e| ProviderError::new(ErrorClass::Transient, format!("{what}: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .text()
            .await
            .map_err(|e| ProviderError::new(ErrorClass::Transient, format!("{what}: {e}")))?;
        if status != 200 {
            let err = super::wire::parse_error(&body);
            let class = match (status, err.code.as_str()) {
                (_, "Throttling" | "IDPCommunicationError") | (500..=599, _) => {
                    ErrorClass::Transient
                }
                _ => ErrorClass::Permanent,
            };
            return Err(ProviderError::new(
                class,
                format!("{what} answered {status} {}: {}", err.code, err.message),
            ));
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Response {
            assume_role_with_web_identity_result: AssumeResult,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct AssumeResult {
            credentials: StsCredentials,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct StsCredentials {
            access_key_id: String,
            secret_access_key: String,
            session_token: String,
            expiration: String,
        }
        let doc: Response = quick_xml::de::from_str(&body).map_err(|e| {
            ProviderError::new(
                ErrorClass::Transient,
                format!("{what}: cannot decode the answer: {e}"),
            )
        })?;
        let c = doc.assume_role_with_web_identity_result.credentials;
        let expires = humantime::parse_rfc3339_weak(c.expiration.trim_end_matches('Z'))
            .or_else(|_| humantime::parse_rfc3339(&c.expiration))
            .ok();
        Ok(AwsCredentials {
            access_key_id: c.access_key_id,
            secret_access_key: c.secret_access_key,
            session_token: Some(c.session_token),
            expires,
            origin: format!("web identity {role_arn}"),
        })
    }
}

/// The `key = value` pairs of `[section]` in an INI file (AWS's shared files).
fn ini_section(text: &str, section: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.split_whitespace().collect::<Vec<_>>().join(" ") == section;
            continue;
        }
        if inside && let Some((k, v)) = line.split_once('=') {
            out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn env(pairs: &[(&str, &str)]) -> EnvReader {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Arc::new(move |k| map.get(k).cloned())
    }

    fn chain(e: EnvReader, profile: Option<&str>) -> CredentialChain {
        CredentialChain::new(
            e,
            profile.map(str::to_string),
            None,
            "http://127.0.0.1:1".into(),
            reqwest::Client::new(),
        )
    }

    #[tokio::test]
    async fn the_environment_comes_first() {
        let c = chain(
            env(&[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "s3cret"),
                ("AWS_SESSION_TOKEN", "tok"),
                ("AWS_PROFILE", "other"),
            ]),
            None,
        );
        let got = c.get().await.unwrap();
        assert_eq!(
            (got.access_key_id.as_str(), got.session_token.as_deref()),
            ("AKIDENV", Some("tok"))
        );
        let printed = format!("{got:?}");
        assert!(
            !printed.contains("s3cret") && !printed.contains("tok\""),
            "{printed}"
        );
        let half = chain(env(&[("AWS_ACCESS_KEY_ID", "AKIDENV")]), None);
        let e = half.get().await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Permanent);
        assert!(e.message.contains("AWS_SECRET_ACCESS_KEY"), "{e}");
    }

    #[tokio::test]
    async fn a_profile_is_read_from_the_shared_files() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials");
        std::fs::write(
            &creds,
            "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = d\n\n# team\n[team]\naws_access_key_id=AKIDTEAM\naws_secret_access_key = t\n",
        )
        .unwrap();
        let config = dir.path().join("config");
        std::fs::write(&config, "[profile sso]\nsso_session = corp\n").unwrap();
        let files = |extra: &[(&str, &str)]| {
            let mut pairs = vec![
                ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap()),
                ("AWS_CONFIG_FILE", config.to_str().unwrap()),
            ];
            pairs.extend_from_slice(extra);
            env(&pairs)
        };
        let got = chain(files(&[]), None).get().await.unwrap();
        assert_eq!(got.access_key_id, "AKIDDEFAULT");
        let got = chain(files(&[("AWS_PROFILE", "team")]), None)
            .get()
            .await
            .unwrap();
        assert_eq!(
            (got.access_key_id.as_str(), got.origin.as_str()),
            ("AKIDTEAM", "profile team")
        );
        // The account's `profile` wins over AWS_PROFILE.
        let got = chain(files(&[("AWS_PROFILE", "team")]), Some("default"))
            .get()
            .await
            .unwrap();
        assert_eq!(got.access_key_id, "AKIDDEFAULT");
        // The account's `credentials_file` wins over AWS_SHARED_CREDENTIALS_FILE.
        let own = dir.path().join("own");
        std::fs::write(
            &own,
            "[default]\naws_access_key_id = AKIDOWN\naws_secret_access_key = o\n",
        )
        .unwrap();
        let got = CredentialChain::new(
            files(&[]),
            None,
            Some(own),
            "http://127.0.0.1:1".into(),
            reqwest::Client::new(),
        )
        .get()
        .await
        .unwrap();
        assert_eq!(got.access_key_id, "AKIDOWN");
        let e = chain(files(&[]), Some("sso")).get().await.unwrap_err();
        assert!(e.message.contains("sso_session"), "{e}");
        let e = chain(files(&[]), Some("missing")).get().await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Permanent);
        assert!(
            e.message.contains("profile missing") && e.message.contains("credentials"),
            "{e}"
        );
    }
}
