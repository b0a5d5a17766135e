//! The server side: certificate, key and optional client CA, reloaded on change.
use super::reload::Reloading;
use super::{TlsError, pem};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Whether clients must present a certificate chaining to the client CA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A client may present one (verified, and then named in [`super::ConnInfo`]) or
    /// none (the planner: people and tools that authenticate otherwise).
    Optional,
    /// No certificate, no connection (the applier: mTLS).
    Required,
}

/// Where a server's TLS files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTlsSettings {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key of the leaf.
    pub key: PathBuf,
    /// PEM CA bundle that client certificates must chain to; none: no client
    /// certificates asked.
    pub client_ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
}

/// What the files hold, built.
#[derive(Debug)]
pub(crate) struct Material {
    key: Arc<CertifiedKey>,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
}

/// A server's certificate (and client CA), re-read when the files change. Shared by
/// every port of a service; [`ServerTls::port`] gives each its rustls config.
#[derive(Debug)]
pub struct ServerTls {
    files: Arc<Reloading<Material>>,
}

impl ServerTls {
    /// Reads and checks the files (the key must match the certificate). Call inside a
    /// Tokio runtime: it starts the task that re-reads them every
    /// [`RELOAD_INTERVAL`](super::RELOAD_INTERVAL).
    pub fn load(settings: &ServerTlsSettings) -> Result<Arc<ServerTls>, TlsError> {
        let tls = Self::load_unwatched(settings)?;
        tls.files.watch(super::RELOAD_INTERVAL);
        Ok(tls)
    }

    /// [`load`](Self::load) without the reloading task (config checks, tests).
    pub fn load_unwatched(settings: &ServerTlsSettings) -> Result<Arc<ServerTls>, TlsError> {
        let s = settings.clone();
        let mut paths = vec![s.cert.clone(), s.key.clone()];
        paths.extend(s.client_ca.clone());
        let files = Reloading::load("server certificate", paths, move |c| build(&s, c))?;
        Ok(Arc::new(ServerTls { files }))
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

    /// One port's view: rustls config with `alpn` (and the client CA, if any),
    /// rebuilt after a reload.
    pub fn port(self: &Arc<Self>, alpn: &[&[u8]]) -> PortTls {
        PortTls {
            tls: self.clone(),
            alpn: alpn.iter().map(|a| a.to_vec()).collect(),
            client_certs: true,
            cache: Mutex::new(None),
        }
    }

    /// [`port`](Self::port) that asks no client certificate, whatever the client CA:
    /// for admin ports, which probes and scrapers reach without one.
    pub fn port_without_client_certs(self: &Arc<Self>, alpn: &[&[u8]]) -> PortTls {
        PortTls {
            client_certs: false,
            ..self.port(alpn)
        }
    }
}

fn build(s: &ServerTlsSettings, contents: &[Vec<u8>]) -> Result<Material, TlsError> {
    let chain = pem::certs(&s.cert, &contents[0])?;
    let key = pem::key(&s.key, &contents[1])?;
    let key = pem::certified_key(&s.cert, chain, &s.key, key)?;
    let verifier = match (&s.client_ca, contents.get(2)) {
        (Some(path), Some(bytes)) => {
            let roots = pem::roots(path, bytes)?;
            let builder =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), super::provider());
            let builder = match s.client_auth {
                ClientAuth::Optional => builder.allow_unauthenticated(),
                ClientAuth::Required => builder,
            };
            Some(builder.build().map_err(|e| TlsError::Invalid {
                path: path.clone(),
                message: format!("not a usable client CA: {e}"),
            })?)
        }
        _ => None,
    };
    Ok(Material {
        key: Arc::new(key),
        verifier,
    })
}

/// One certificate for every client hello.
#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// One port's TLS: the shared files with this port's ALPN.
#[derive(Debug)]
pub struct PortTls {
    tls: Arc<ServerTls>,
    alpn: Vec<Vec<u8>>,
    client_certs: bool,
    cache: Mutex<Option<(Arc<Material>, Arc<rustls::ServerConfig>)>>,
}

impl PortTls {
    /// The rustls config for the next handshake: the files as last read.
    pub fn config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let material = self.tls.files.current();
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| TlsError::Setup("poisoned".into()))?;
        if let Some((m, c)) = &*cache
            && Arc::ptr_eq(m, &material)
        {
            return Ok(c.clone());
        }
        let builder = rustls::ServerConfig::builder_with_provider(super::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Setup(e.to_string()))?;
        let builder = match material.verifier.as_ref().filter(|_| self.client_certs) {
            Some(v) => builder.with_client_cert_verifier(v.clone()),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_cert_resolver(Arc::new(Fixed(material.key.clone())));
        config.alpn_protocols.clone_from(&self.alpn);
        let config = Arc::new(config);
        *cache = Some((material, config.clone()));
        Ok(config)
    }
}
