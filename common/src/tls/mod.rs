//! TLS for every port dnsplane serves and mTLS between planner and applier, on rustls
//! with aws-lc-rs (no OpenSSL).
//!
//! - [`server`]: a server certificate, key and optional client CA, read from PEM files
//!   and re-read when they change ([`reload`]), so that cert-manager can rotate them in
//!   place; [`ServerTls::port`] gives one port's rustls config (its ALPN);
//! - [`incoming`]: accepted connections for tonic and axum alike, each handshake off
//!   the accept loop; a plaintext client is answered in words, not dropped;
//!   [`ConnInfo`] says who the client is (the names of its verified certificate);
//! - [`client`]: the planner's (and the CLI's) side: trust roots, an optional client
//!   certificate, and a connector for tonic that says plainly when the peer does not
//!   speak TLS;
//! - [`san`]: the DNS names of a certificate, for [`ConnInfo`] and `allowed_names`.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub mod client;
pub mod incoming;
mod pem;
mod reload;
pub mod san;
pub mod server;

pub use client::{ClientTls, ClientTlsSettings, TlsConnector};
pub use incoming::{ClientIdentity, Conn, ConnInfo, Incoming};
pub use server::{ClientAuth, PortTls, ServerTls, ServerTlsSettings};

/// How often certificate files are read again to see whether they changed.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(3);

/// ALPN for gRPC ports.
pub const ALPN_GRPC: &[&[u8]] = &[b"h2"];
/// ALPN for the HTTP/1.1 ports (admin, webhook).
pub const ALPN_HTTP1: &[&[u8]] = &[b"http/1.1"];

/// A certificate, key or CA file that cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("TLS setup: {0}")]
    Setup(String),
}

/// The one crypto provider every TLS config here is built with (explicit, so that
/// another provider compiled into the binary can never be picked by accident).
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The identity of the client of a gRPC request, when it presented a verified
/// certificate. For services that map certificate names to roles.
pub fn client_identity<T>(request: &tonic::Request<T>) -> Option<&ClientIdentity> {
    request
        .extensions()
        .get::<ConnInfo>()
        .and_then(|c| c.client.as_deref())
}

/// A gRPC interceptor (for `Server::builder().layer(InterceptorLayer::new(..))`) that
/// lets through only clients whose verified certificate carries one of `allowed` as a
/// DNS name; others get PERMISSION_DENIED naming what they presented. Empty `allowed`:
/// every client the handshake accepted.
pub fn allowed_names(
    allowed: Vec<String>,
) -> impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone {
    let allowed: Arc<[String]> = allowed.into();
    move |request: tonic::Request<()>| {
        if allowed.is_empty() {
            return Ok(request);
        }
        match client_identity(&request) {
            Some(id) if id.dns_names.iter().any(|n| allowed.contains(n)) => Ok(request),
            Some(id) => Err(tonic::Status::permission_denied(format!(
                "client certificate names {:?} are not in allowed_names {:?}",
                id.dns_names, &*allowed
            ))),
            None => Err(tonic::Status::permission_denied(format!(
                "no client certificate: only clients with a certificate named one of {:?} (allowed_names) are served",
                &*allowed
            ))),
        }
    }
}

#[cfg(test)]
mod tests;
