//! The client side (the planner towards appliers, the CLI towards the planner): trust
//! roots (a CA file, or the system's), an optional client certificate for mTLS, both
//! re-read when their files change (new connections use them), and a connector for
//! tonic's `Endpoint::connect_with_connector*` whose errors say what went wrong — in
//! particular when the peer answers a TLS hello in plaintext.
use super::reload::Reloading;
use super::{TlsError, pem};
use rustls_pki_types::ServerName;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpStream;

/// Where a client's TLS files are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTlsSettings {
    /// PEM CA bundle the server's certificate must chain to; none: the system's roots.
    pub ca: Option<PathBuf>,
    /// PEM client certificate chain (mTLS), with `key`.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// A client's TLS config, re-read when its files change.
#[derive(Debug)]
pub struct ClientTls {
    files: Arc<Reloading<Arc<rustls::ClientConfig>>>,
}

impl ClientTls {
    /// Reads and checks the files; inside a Tokio runtime, starts the task that
    /// re-reads them every [`RELOAD_INTERVAL`](super::RELOAD_INTERVAL).
    pub fn load(settings: &ClientTlsSettings) -> Result<Arc<ClientTls>, TlsError> {
        let tls = Self::load_unwatched(settings)?;
        tls.files.watch(super::RELOAD_INTERVAL);
        Ok(tls)
    }

    /// [`load`](Self::load) without the reloading task (a one-shot CLI, config checks).
    pub fn load_unwatched(settings: &ClientTlsSettings) -> Result<Arc<ClientTls>, TlsError> {
        if settings.cert.is_some() != settings.key.is_some() {
            return Err(TlsError::Setup(
                "a client certificate needs both cert and key".into(),
            ));
        }
        let s = settings.clone();
        let paths: Vec<PathBuf> = [&s.ca, &s.cert, &s.key]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        // Read once: the system's roots do not change under a running process.
        let system = match s.ca {
            None => Some(Arc::new(system_roots()?)),
            Some(_) => None,
        };
        let files = Reloading::load("TLS client config", paths, move |c| {
            build(&s, system.clone(), c).map(Arc::new)
        })?;
        Ok(Arc::new(ClientTls { files }))
    }

    /// Reads the files now (what the reloading task does).
    pub fn reload(&self) -> bool {
        self.files.reload()
    }

    /// Why the files cannot be (re)loaded now (the ones read before stay in use);
    /// `None` while they can.
    pub fn problem(&self) -> Option<String> {
        self.files.problem()
    }

    /// A connector for tonic. `server_name`: the name the server's certificate must
    /// carry, when it is not the host of the address (an address found by DNS).
    pub fn connector(self: &Arc<Self>, server_name: Option<String>) -> TlsConnector {
        TlsConnector {
            tls: self.clone(),
            server_name,
        }
    }
}

fn system_roots() -> Result<rustls::RootCertStore, TlsError> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = rustls::RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(TlsError::Setup(
            "no CA file given and no system trust roots found".into(),
        ));
    }
    Ok(store)
}

fn build(
    s: &ClientTlsSettings,
    system: Option<Arc<rustls::RootCertStore>>,
    contents: &[Vec<u8>],
) -> Result<rustls::ClientConfig, TlsError> {
    let mut next = contents.iter();
    let roots = match (&s.ca, system) {
        (Some(path), _) => Arc::new(pem::roots(path, next.next().map_or(&[][..], |v| v))?),
        (None, Some(system)) => system,
        (None, None) => return Err(TlsError::Setup("no trust roots".into())),
    };
    let builder = rustls::ClientConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup(e.to_string()))?
        .with_root_certificates(roots);
    let mut config = match (&s.cert, &s.key) {
        (Some(cert), Some(key)) => {
            let chain = pem::certs(cert, next.next().map_or(&[][..], |v| v))?;
            let private = pem::key(key, next.next().map_or(&[][..], |v| v))?;
            // The same check as the server's: a key of another certificate is named.
            pem::certified_key(cert, chain.clone(), key, private.clone_key())?;
            builder
                .with_client_auth_cert(chain, private)
                .map_err(|e| TlsError::Invalid {
                    path: key.clone(),
                    message: format!("unusable client key: {e}"),
                })?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// Why a TLS connection could not be made. Its text becomes the UNAVAILABLE status
/// callers see, so it says where and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    #[error("cannot connect: {0} has no host")]
    NoHost(String),
    #[error("cannot connect to {addr}: {source}")]
    Tcp {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{addr}: {name:?} is not a valid TLS server name")]
    ServerName { addr: String, name: String },
    /// The peer answered the TLS hello with something that is not TLS, or hung up.
    #[error(
        "TLS handshake with {addr} failed: the peer does not speak TLS (a plaintext server behind an https:// address?): {source}"
    )]
    NotTls {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS handshake with {addr} failed: {source}")]
    Handshake {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

/// tonic's connector over [`ClientTls`]: TCP (no Nagle), then the TLS handshake with
/// the config in force now.
#[derive(Debug, Clone)]
pub struct TlsConnector {
    tls: Arc<ClientTls>,
    server_name: Option<String>,
}

type Io = hyper_util::rt::TokioIo<tokio_rustls::client::TlsStream<TcpStream>>;

impl tonic::codegen::Service<http::Uri> for TlsConnector {
    type Response = Io;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Io, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let config = self.tls.files.current();
        let server_name = self.server_name.clone();
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or_else(|| ConnectError::NoHost(uri.to_string()))?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            let port = uri.port_u16().unwrap_or(443);
            let addr = format!("{}:{port}", uri.host().unwrap_or_default());
            let name = server_name.unwrap_or_else(|| host.clone());
            let name =
                ServerName::try_from(name.clone()).map_err(|_| ConnectError::ServerName {
                    addr: addr.clone(),
                    name,
                })?;
            let tcp = TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|source| ConnectError::Tcp {
                    addr: addr.clone(),
                    source,
                })?;
            let _ = tcp.set_nodelay(true);
            let stream = tokio_rustls::TlsConnector::from((*config).clone())
                .connect(name, tcp)
                .await
                .map_err(|source| classify(addr, source))?;
            Ok(hyper_util::rt::TokioIo::new(stream))
        })
    }
}

/// A reply that is no TLS record, or a hang-up before any, means the peer is not a
/// TLS server; anything else (a certificate it does not trust) is said as it is.
fn classify(addr: String, source: std::io::Error) -> ConnectError {
    let not_tls = source.kind() == std::io::ErrorKind::UnexpectedEof
        || matches!(
            source
                .get_ref()
                .and_then(|e| e.downcast_ref::<rustls::Error>()),
            Some(rustls::Error::InvalidMessage(_))
        );
    if not_tls {
        ConnectError::NotTls { addr, source }
    } else {
        ConnectError::Handshake { addr, source }
    }
}
