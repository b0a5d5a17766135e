//! `driver = "azure"`: the account table of an Azure subscription's DNS zones in one
//! resource group: public zones (`Microsoft.Network/dnsZones`), or with `private =
//! true` Private DNS zones (`Microsoft.Network/privateDnsZones`). `endpoint` and
//! `authority_host` point elsewhere for tests (`dnsplane emulate azure`). No secret is
//! written in the table: credentials come from the environment or from files.
//!
//! ```toml
//! [[accounts]]
//! name = "azure"
//! driver = "azure"
//! zones = ["example.com."]
//! subscription_id = "00000000-0000-0000-0000-000000000000"
//! resource_group = "dns"
//! # private = false
//! # token_file = "/run/secrets/azure-token"   # or token_env; else AZURE_* variables
//! ```
use dnsplane_common::Name;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Azure Resource Manager.
pub const DEFAULT_ENDPOINT: &str = "https://management.azure.com";
/// Microsoft Entra ID (Azure AD), where tokens come from.
pub const DEFAULT_AUTHORITY_HOST: &str = "https://login.microsoftonline.com";

/// The `azure` part of an `[[accounts]]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureConfig {
    /// The subscription holding the zones (a GUID).
    pub subscription_id: String,
    /// The resource group holding the zones.
    pub resource_group: String,
    /// Private DNS zones (`privateDnsZones`, api-version 2020-06-01) instead of public
    /// ones (`dnsZones`, 2018-05-01). Default false.
    #[serde(default)]
    pub private: bool,
    /// Azure Resource Manager's base URL. Default `https://management.azure.com`.
    #[serde(default = "default_endpoint")]
    pub endpoint: String,
    /// Where tokens are asked for: `{authority_host}/{tenant}/oauth2/v2.0/token`.
    /// Default `https://login.microsoftonline.com`.
    #[serde(default = "default_authority_host")]
    pub authority_host: String,
    /// The tenant (directory) id; default the `AZURE_TENANT_ID` variable.
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// The application (client) id; default the `AZURE_CLIENT_ID` variable.
    #[serde(default)]
    pub client_id: Option<String>,
    /// A file holding a bearer token obtained elsewhere (whitespace around it
    /// ignored), read at start and again whenever Azure refuses it. At most one of
    /// `token_file` and `token_env`.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The name of an environment variable holding a bearer token obtained elsewhere.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The workload-identity token file (a signed JWT the platform rotates); default
    /// the `AZURE_FEDERATED_TOKEN_FILE` variable. Read again for every token.
    #[serde(default)]
    pub federated_token_file: Option<PathBuf>,
    /// Deadline of one HTTP request, connect included (connect alone: at most 5s).
    /// Default 30s.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
}

fn default_endpoint() -> String {
    DEFAULT_ENDPOINT.into()
}

fn default_authority_host() -> String {
    DEFAULT_AUTHORITY_HOST.into()
}

fn default_timeout() -> Duration {
    Duration::from_secs(30)
}

impl AzureConfig {
    /// A table with every default, for `subscription_id` and `resource_group`.
    pub fn new(subscription_id: impl Into<String>, resource_group: impl Into<String>) -> Self {
        AzureConfig {
            subscription_id: subscription_id.into(),
            resource_group: resource_group.into(),
            private: false,
            endpoint: default_endpoint(),
            authority_host: default_authority_host(),
            tenant_id: None,
            client_id: None,
            token_file: None,
            token_env: None,
            federated_token_file: None,
            timeout: default_timeout(),
        }
    }

    /// Adds every problem with this table to `problems`; `at` names it (`accounts[0]`).
    pub fn check(&self, at: &str, _zones: &[Name], problems: &mut Vec<String>) {
        for (key, url) in [
            ("endpoint", &self.endpoint),
            ("authority_host", &self.authority_host),
        ] {
            match reqwest::Url::parse(url.trim()) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
                Ok(_) => problems.push(format!(
                    "{at}.{key} {url:?} must be an http:// or https:// URL with a host"
                )),
                Err(e) => problems.push(format!("{at}.{key} {url:?}: {e}")),
            }
        }
        for (key, v) in [
            ("subscription_id", &self.subscription_id),
            ("resource_group", &self.resource_group),
        ] {
            if v.trim().is_empty() {
                problems.push(format!("{at}.{key} is empty"));
            } else if v.contains(['/', '?', '#']) || v.chars().any(char::is_whitespace) {
                problems.push(format!(
                    "{at}.{key} {v:?} must not hold '/', '?', '#' or spaces"
                ));
            }
        }
        if self.timeout.is_zero() {
            problems.push(format!("{at}.timeout must be more than 0s"));
        }
        match (&self.token_env, &self.token_file) {
            (Some(_), Some(_)) => {
                problems.push(format!("{at}: set only one of token_env and token_file"));
            }
            (Some(v), None) if v.trim().is_empty() => {
                problems.push(format!("{at}.token_env is empty"));
            }
            (None, Some(f)) if f.as_os_str().is_empty() => {
                problems.push(format!("{at}.token_file is empty"));
            }
            _ => {}
        }
        for (key, v) in [
            ("tenant_id", &self.tenant_id),
            ("client_id", &self.client_id),
        ] {
            if v.as_ref().is_some_and(|v| v.trim().is_empty()) {
                problems.push(format!("{at}.{key} is empty"));
            }
        }
    }
}

/// Why an `azure` account could not be set up. Never carries a secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AzureSetupError {
    #[error("azure {key} {url:?}: {problem}")]
    Url {
        key: &'static str,
        url: String,
        problem: String,
    },
    #[error("azure credentials: {0}")]
    Credentials(String),
    #[error("azure HTTP client: {0}")]
    Client(String),
}
