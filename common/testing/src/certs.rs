//! Test certificates (rcgen): a CA, and leaf certificates it signs for servers and
//! clients, written as PEM files the services' `[tls]` keys can name.
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// A certificate authority.
#[derive(Debug)]
pub struct Ca {
    params: CertificateParams,
    key: KeyPair,
    /// The CA certificate, PEM.
    pub pem: String,
}

/// A leaf certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub cert: String,
    pub key: String,
}

/// Paths of a written [`Leaf`].
#[derive(Debug, Clone)]
pub struct LeafFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("ca key");
        let pem = params.self_signed(&key).expect("ca cert").pem();
        Ca { params, key, pem }
    }

    /// A certificate for `names` (DNS names or IP addresses), good for both server and
    /// client authentication.
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("leaf"));
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("leaf key");
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).expect("leaf cert");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    /// Writes the CA certificate to `dir/<name>.pem`.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(format!("{name}.pem"));
        std::fs::write(&path, &self.pem).expect("write ca");
        path
    }
}

impl Leaf {
    /// Writes `dir/<name>.crt` and `dir/<name>.key`.
    pub fn write(&self, dir: &Path, name: &str) -> LeafFiles {
        let files = LeafFiles {
            cert: dir.join(format!("{name}.crt")),
            key: dir.join(format!("{name}.key")),
        };
        std::fs::write(&files.cert, &self.cert).expect("write cert");
        std::fs::write(&files.key, &self.key).expect("write key");
        files
    }
}
