//! `dnsplane up`'s security, made once per state directory and kept: a private CA,
//! a certificate for the two servers, one for the planner as the applier's client (the
//! only one that may write batches) and one for operators (read-only at the applier),
//! all signed by it, and an admin token, so that the planner speaks TLS with token auth
//! and the applier takes only mTLS clients, with nothing to set up by hand
//! (docs/security.md).
//!
//! ```text
//! <state>/ca.pem           the CA (trust it: grpcurl -cacert, dnsplane --ca-file)
//! <state>/ca-key.pem       its key (0600)
//! <state>/server.pem       planner and applier server certificate (localhost, 127.0.0.1, ::1)
//! <state>/server-key.pem   (0600)
//! <state>/planner.pem      the planner's client certificate: the applier's only writer
//! <state>/planner-key.pem  (0600)
//! <state>/client.pem       your client certificate for the applier (grpcurl): read-only
//! <state>/client-key.pem   (0600)
//! <state>/token            the admin token (role approve) (0600)
//! <state>/tokens.toml      the planner's tokens file: the token's SHA-256 only
//! ```
//!
//! The CLI finds `ca.pem` and `token` by itself (`--state-dir`, `DNSPLANE_STATE_DIR`).
use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The files of a secured state directory.
#[derive(Debug, Clone)]
pub struct Secured {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    pub planner_cert: PathBuf,
    pub planner_key: PathBuf,
    pub token: PathBuf,
    pub tokens_file: PathBuf,
}

/// The name in the operators' client certificate: the applier under `up` lets it read.
pub const CLIENT_NAME: &str = "dnsplane-client";
/// The name in the planner's client certificate: the applier under `up` lets only it
/// write (`[tls] writer_names`), so an operator's certificate can never fence it out.
pub const PLANNER_NAME: &str = "dnsplane-planner";

impl Secured {
    /// The files under `state`, made or not.
    pub fn paths(state: &Path) -> Secured {
        Secured {
            ca: state.join("ca.pem"),
            server_cert: state.join("server.pem"),
            server_key: state.join("server-key.pem"),
            client_cert: state.join("client.pem"),
            client_key: state.join("client-key.pem"),
            planner_cert: state.join("planner.pem"),
            planner_key: state.join("planner-key.pem"),
            token: state.join("token"),
            tokens_file: state.join("tokens.toml"),
        }
    }

    /// The state directory's CA, certificates and token: those already there are kept
    /// (a restart changes nothing a client trusts); when any certificate or key is
    /// missing, all certificates are made anew; a missing token is made alone.
    /// `server_ips`: addresses the servers listen on besides loopback.
    pub fn ensure(state: &Path, server_ips: &[std::net::IpAddr]) -> anyhow::Result<Secured> {
        Secured::ensure_for(state, server_ips, &[])
    }

    /// [`Secured::ensure`] with more DNS names in the server certificate (the names
    /// the services are dialled by, e.g. compose's service names).
    pub fn ensure_for(
        state: &Path,
        server_ips: &[std::net::IpAddr],
        server_names: &[String],
    ) -> anyhow::Result<Secured> {
        std::fs::create_dir_all(state)
            .with_context(|| format!("cannot create {}", state.display()))?;
        let s = Secured::paths(state);
        let ca_key = state.join("ca-key.pem");
        let certs = [
            &s.ca,
            &ca_key,
            &s.server_cert,
            &s.server_key,
            &s.client_cert,
            &s.client_key,
            &s.planner_cert,
            &s.planner_key,
        ];
        if !certs.iter().all(|p| p.exists()) {
            let (ca_params, ca) = ca()?;
            let issuer = Issuer::from_params(&ca_params, &ca);
            write(&s.ca, &ca_params.self_signed(&ca)?.pem(), false)?;
            write(&ca_key, &ca.serialize_pem(), true)?;
            let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
            names.extend(server_names.iter().cloned());
            names.extend(
                server_ips
                    .iter()
                    .filter(|ip| !ip.is_unspecified() && !ip.is_loopback())
                    .map(ToString::to_string),
            );
            let (cert, key) = leaf(&issuer, names, ExtendedKeyUsagePurpose::ServerAuth)?;
            write(&s.server_cert, &cert, false)?;
            write(&s.server_key, &key, true)?;
            let (cert, key) = leaf(
                &issuer,
                vec![CLIENT_NAME.into()],
                ExtendedKeyUsagePurpose::ClientAuth,
            )?;
            write(&s.client_cert, &cert, false)?;
            write(&s.client_key, &key, true)?;
            let (cert, key) = leaf(
                &issuer,
                vec![PLANNER_NAME.into()],
                ExtendedKeyUsagePurpose::ClientAuth,
            )?;
            write(&s.planner_cert, &cert, false)?;
            write(&s.planner_key, &key, true)?;
        }
        if !s.token.exists() {
            let bytes: [u8; 32] = rand::random();
            let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            write(&s.token, &format!("{token}\n"), true)?;
        }
        for (path, mode) in loose_secrets(state, &s) {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{mode:o}"),
                "A secret in the state directory can be read by others than its owner; it is used as it is. Run: chmod 600 {}",
                path.display()
            );
        }
        let token = std::fs::read_to_string(&s.token)
            .with_context(|| format!("cannot read {}", s.token.display()))?;
        let hash: String = Sha256::digest(token.trim().as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        write(
            &s.tokens_file,
            &format!(
                "# Written by `dnsplane up` from ./token (its SHA-256 only).\n[[token]]\nname = \"admin\"\nsha256 = \"{hash}\"\nrole = \"approve\"\n"
            ),
            false,
        )?;
        Ok(s)
    }
}

fn ca() -> anyhow::Result<(CertificateParams, KeyPair)> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(DnType::CommonName, "dnsplane up local CA");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok((params, KeyPair::generate()?))
}

/// A certificate for `names` (DNS names or IP addresses) signed by `issuer`, and its
/// key, as PEM.
fn leaf(
    issuer: &Issuer<'_, &KeyPair>,
    names: Vec<String>,
    usage: ExtendedKeyUsagePurpose,
) -> anyhow::Result<(String, String)> {
    let mut params = CertificateParams::new(names.clone())?;
    params
        .distinguished_name
        .push(DnType::CommonName, names[0].as_str());
    params.extended_key_usages = vec![usage];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes `path` whole; `private`: readable by its owner only (mode 0600), from its
/// creation on.
/// The secrets of `state` (the token and the private keys) that others than their
/// owner can read, with their modes: made 0600, a copy or a `chmod` may have widened
/// them, and `up` keeps what it finds, so it says so.
fn loose_secrets(state: &Path, s: &Secured) -> Vec<(PathBuf, u32)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let ca_key = state.join("ca-key.pem");
        [
            &s.token,
            &ca_key,
            &s.server_key,
            &s.client_key,
            &s.planner_key,
        ]
        .into_iter()
        .filter_map(|p| {
            let mode = std::fs::metadata(p).ok()?.permissions().mode() & 0o777;
            (mode & 0o077 != 0).then(|| (p.clone(), mode))
        })
        .collect()
    }
    #[cfg(not(unix))]
    {
        let _ = (state, s);
        Vec::new()
    }
}

fn write(path: &Path, text: &str, private: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let _ = private;
    let mut f = opts
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// `dnsplane certs DIR --name NAME…`: the same CA, certificates and admin token as
/// `dnsplane up` makes, for services run elsewhere (the compose demo): the server
/// certificate also carries each NAME.
pub fn certs(dir: &Path, names: &[String]) -> anyhow::Result<std::process::ExitCode> {
    for n in names {
        dnsplane_common::Name::parse(n).with_context(|| format!("--name {n:?}"))?;
    }
    let s = Secured::ensure_for(dir, &[], names)?;
    println!(
        "{}: CA {}, server, planner and client certificates, admin token {} (kept if already there)",
        dir.display(),
        s.ca.display(),
        s.token.display()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_and_kept_with_private_keys() {
        let dir = tempfile::tempdir().unwrap();
        let s = Secured::ensure(dir.path(), &[]).unwrap();
        let ca = std::fs::read_to_string(&s.ca).unwrap();
        let token = std::fs::read_to_string(&s.token).unwrap();
        assert!(ca.contains("BEGIN CERTIFICATE"));
        assert_eq!(token.trim().len(), 64);
        let tokens = std::fs::read_to_string(&s.tokens_file).unwrap();
        assert!(
            !tokens.contains(token.trim()),
            "only the hash is in tokens.toml"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for p in [
                &s.server_key,
                &s.client_key,
                &s.planner_key,
                &s.token,
                &dir.path().join("ca-key.pem"),
            ] {
                let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "{}", p.display());
            }
        }
        assert!(loose_secrets(dir.path(), &s).is_empty());
        #[cfg(unix)]
        {
            // A token someone made readable by all is named, with its mode (issue 35).
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&s.token, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert_eq!(
                loose_secrets(dir.path(), &s),
                vec![(s.token.clone(), 0o644)]
            );
            std::fs::set_permissions(&s.token, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        // A second start keeps everything clients trust.
        let again = Secured::ensure(dir.path(), &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&again.ca).unwrap(), ca);
        assert_eq!(std::fs::read_to_string(&again.token).unwrap(), token);
        // A lost key makes the certificates anew, the token stays.
        std::fs::remove_file(&s.server_key).unwrap();
        let renewed = Secured::ensure(dir.path(), &[]).unwrap();
        assert_ne!(std::fs::read_to_string(&renewed.ca).unwrap(), ca);
        assert_eq!(std::fs::read_to_string(&renewed.token).unwrap(), token);
    }
}
