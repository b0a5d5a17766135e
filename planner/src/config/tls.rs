//! `[tls]` and `[applier_tls]`: the planner's TLS as a server and as a client of
//! appliers (docs/security.md).
use serde::Deserialize;
use std::path::PathBuf;

/// `[tls]`: the planner's server certificate. Paths are relative to the config file;
/// the files are re-read when they change.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain (leaf first) for the gRPC, webhook and admin ports.
    pub cert: PathBuf,
    /// PEM private key of `cert`.
    pub key: PathBuf,
    /// PEM CA bundle: a client (gRPC, webhook) may present a certificate chaining to
    /// it, and its names are then known to the service; clients without one are
    /// still served (they authenticate otherwise). The admin port asks none.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
}

impl TlsConfig {
    /// What the TLS layer reads.
    pub fn settings(&self) -> dnsplane_common::tls::ServerTlsSettings {
        dnsplane_common::tls::ServerTlsSettings {
            cert: self.cert.clone(),
            key: self.key.clone(),
            client_ca: self.client_ca.clone(),
            client_auth: dnsplane_common::tls::ClientAuth::Optional,
        }
    }
}

/// `[applier_tls]`: the planner as a TLS client of appliers. Paths are relative to
/// the config file; the files are re-read when they change (new connections use them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplierTlsConfig {
    /// PEM CA bundle the appliers' certificates must chain to. Required: appliers
    /// hold provider credentials, and their certificates come from a private CA; the
    /// system's public roots would trust any certificate issued for the name.
    pub ca: PathBuf,
    /// PEM client certificate presented to appliers (mTLS), with `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// The name the appliers' certificates must carry, when it is not the host of the
    /// address (for `applier_dns`, the default is its host name, not the IPs it
    /// resolves to).
    #[serde(default)]
    pub server_name: Option<String>,
}

impl ApplierTlsConfig {
    /// What the TLS layer reads.
    pub fn settings(&self) -> dnsplane_common::tls::ClientTlsSettings {
        dnsplane_common::tls::ClientTlsSettings {
            ca: Some(self.ca.clone()),
            cert: self.cert.clone(),
            key: self.key.clone(),
        }
    }
}
