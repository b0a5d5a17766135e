//! How the CLI reaches a planner: the address, TLS and the bearer token, found by
//! itself for a planner `dnsplane up` runs (its state directory holds the CA and the
//! admin token, [`crate::secure`]).
use crate::secure::Secured;
use anyhow::Context;
use dnsplane_common::pb::planner_client::PlannerClient;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Conn {
    /// Planner gRPC address: `https://…` speaks TLS, `http://…` plaintext; without a
    /// scheme, TLS when the state directory (or --ca-file) has a CA. Default: the
    /// planner `dnsplane up` runs (127.0.0.1:50051).
    #[arg(long, env = "DNSPLANE_PLANNER_ADDR")]
    addr: Option<String>,
    /// File holding the bearer token for a planner with `[auth]` (else the
    /// DNSPLANE_TOKEN environment variable, else the state directory's token).
    #[arg(long, env = "DNSPLANE_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// PEM CA bundle to verify the planner's certificate with (an `https://` --addr);
    /// without it, the state directory's CA, else the system's trust roots.
    #[arg(long, env = "DNSPLANE_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// The state directory of `dnsplane up`: its `ca.pem` and `token` are used when
    /// no other CA or token is given.
    #[arg(long, env = "DNSPLANE_STATE_DIR", default_value = ".dnsplane-state")]
    state_dir: PathBuf,
}

/// Where and how to call, once the defaults are resolved.
#[derive(Debug)]
struct Target {
    addr: String,
    ca: Option<PathBuf>,
    /// The state directory's token: only ever sent to a planner whose certificate
    /// chains to the state directory's CA, so it cannot leak to another server.
    state_token: Option<PathBuf>,
}

impl Conn {
    fn target(&self) -> Target {
        let state = Secured::paths(&self.state_dir);
        let has_state_ca = state.ca.exists();
        let tls_default = has_state_ca || self.ca_file.is_some();
        let addr = match &self.addr {
            Some(a) if a.contains("://") => a.clone(),
            Some(a) if tls_default => format!("https://{a}"),
            Some(a) => format!("http://{a}"),
            None if tls_default => "https://127.0.0.1:50051".into(),
            None => "http://127.0.0.1:50051".into(),
        };
        let https = addr.starts_with("https://");
        let (ca, from_state) = match &self.ca_file {
            Some(c) => (Some(c.clone()), false),
            None if https && has_state_ca => (Some(state.ca.clone()), true),
            None => (None, false),
        };
        Target {
            addr,
            ca,
            state_token: (from_state && state.token.exists()).then_some(state.token),
        }
    }
}

/// Sends `authorization: Bearer <token>` with every call, when there is a token.
#[derive(Clone)]
pub struct Bearer(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

fn read_token(path: &Path, what: &str) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{what} {}: cannot read", path.display()))?;
    dnsplane_common::secret::trimmed(&text)
        .map(str::to_string)
        .with_context(|| format!("{what} {}: the file is empty", path.display()))
}

/// The token of `--token-file` (its content, trimmed), else of `DNSPLANE_TOKEN`, else
/// the state directory's.
fn bearer(conn: &Conn, target: &Target) -> anyhow::Result<Bearer> {
    let token = match &conn.token_file {
        Some(path) => Some(read_token(path, "--token-file")?),
        None => match std::env::var("DNSPLANE_TOKEN")
            .ok()
            .and_then(|t| dnsplane_common::secret::trimmed(&t).map(str::to_string))
        {
            Some(t) => Some(t),
            None => match &target.state_token {
                Some(path) => Some(read_token(path, "the state directory's token")?),
                None => None,
            },
        },
    };
    let Some(token) = token else {
        return Ok(Bearer(None));
    };
    let value = format!("Bearer {token}").parse().map_err(|_| {
        anyhow::anyhow!("the bearer token holds characters a gRPC header cannot carry")
    })?;
    Ok(Bearer(Some(value)))
}

pub type Client = PlannerClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
>;

pub async fn connect(conn: &Conn) -> anyhow::Result<Client> {
    let target = conn.target();
    let bearer = bearer(conn, &target)?;
    let channel = channel(&target).await.with_context(|| {
        format!(
            "cannot reach the planner at {} (is `dnsplane up` running? --addr)",
            target.addr
        )
    })?;
    // A plan of a proposed 100,000-record state is one answer of several MiB; the
    // server sends at most 64 MiB.
    Ok(PlannerClient::with_interceptor(channel, bearer).max_decoding_message_size(64 << 20))
}

/// A channel to the address: TLS for `https://`, trusting the CA or the system.
async fn channel(target: &Target) -> anyhow::Result<tonic::transport::Channel> {
    let endpoint = tonic::transport::Endpoint::from_shared(target.addr.clone())
        .with_context(|| format!("--addr {}: not a URI", target.addr))?;
    if !target.addr.starts_with("https://") {
        anyhow::ensure!(
            target.ca.is_none(),
            "--ca-file is for an https:// --addr, not {}",
            target.addr
        );
        return Ok(endpoint.connect().await?);
    }
    let tls = dnsplane_common::tls::ClientTls::load_unwatched(
        &dnsplane_common::tls::ClientTlsSettings {
            ca: target.ca.clone(),
            ..Default::default()
        },
    )?;
    Ok(endpoint.connect_with_connector(tls.connector(None)).await?)
}

pub fn status_err(s: tonic::Status) -> anyhow::Error {
    match s.code() {
        tonic::Code::Unauthenticated => anyhow::anyhow!(
            "the planner wants a bearer token ({}): pass --token-file PATH or set DNSPLANE_TOKEN",
            s.message()
        ),
        tonic::Code::PermissionDenied => {
            anyhow::anyhow!("the planner refused the call: {}", s.message())
        }
        _ => anyhow::anyhow!("{}: {}", s.code(), s.message()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        conn: Conn,
    }

    fn target(dir: &Path, args: &[&str]) -> Target {
        let mut argv = vec!["t", "--state-dir", dir.to_str().unwrap()];
        argv.extend(args);
        Cli::parse_from(argv).conn.target()
    }

    #[test]
    fn the_state_directory_makes_the_default_tls_with_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path(), &[]);
        assert_eq!(t.addr, "http://127.0.0.1:50051");
        assert!(t.ca.is_none() && t.state_token.is_none());
        Secured::ensure(dir.path(), &[]).unwrap();
        let t = target(dir.path(), &[]);
        assert_eq!(t.addr, "https://127.0.0.1:50051");
        assert_eq!(t.ca, Some(dir.path().join("ca.pem")));
        assert_eq!(t.state_token, Some(dir.path().join("token")));
        // No scheme: TLS too.
        assert_eq!(
            target(dir.path(), &["--addr", "10.0.0.1:50051"]).addr,
            "https://10.0.0.1:50051"
        );
        // Another CA: the state's token is never sent with it.
        let t = target(dir.path(), &["--ca-file", "/other/ca.pem"]);
        assert_eq!(t.state_token, None);
        // Plaintext asked for: neither CA nor token.
        let t = target(dir.path(), &["--addr", "http://127.0.0.1:50051"]);
        assert!(t.ca.is_none() && t.state_token.is_none());
    }
}
