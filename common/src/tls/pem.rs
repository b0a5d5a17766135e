//! PEM files to rustls types, each error naming the file.
use super::TlsError;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;

pub(crate) fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn invalid(path: &Path, message: impl Into<String>) -> TlsError {
    TlsError::Invalid {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Every certificate in the file, in order (leaf first for a chain); at least one.
pub(crate) fn certs(path: &Path, bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(path, format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(path, "no CERTIFICATE block in the file"));
    }
    Ok(certs)
}

/// The private key (PKCS#8, PKCS#1 or SEC1).
pub(crate) fn key(path: &Path, bytes: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(bytes)
        .map_err(|e| invalid(path, format!("no usable PEM private key: {e}")))
}

/// A CA bundle as trust roots.
pub(crate) fn roots(path: &Path, bytes: &[u8]) -> Result<rustls::RootCertStore, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for cert in certs(path, bytes)? {
        store
            .add(cert)
            .map_err(|e| invalid(path, format!("not a usable CA certificate: {e}")))?;
    }
    Ok(store)
}

/// The signing key for `chain`, checked to belong to its leaf.
pub(crate) fn certified_key(
    cert_path: &Path,
    chain: Vec<CertificateDer<'static>>,
    key_path: &Path,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::sign::CertifiedKey, TlsError> {
    let signing = super::provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| invalid(key_path, format!("unusable private key: {e}")))?;
    let certified = rustls::sign::CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        // Unknown: the key's public half cannot be computed; the handshake tells.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(certified)
        }
        Err(e) => Err(invalid(
            key_path,
            format!(
                "does not match the certificate in {}: {e}",
                cert_path.display()
            ),
        )),
    }
}
