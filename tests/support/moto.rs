//! moto's standalone server (`moto_server`, PyPI `moto[server]`): AWS's APIs served
//! locally by a project that is not dnsplane's, so the `route53` driver is judged by
//! more than dnsplane's own emulator. moto is faithful on the happy path only (it
//! applies a change batch change by change, lets a CREATE duplicate a set, checks each
//! CREATE against the zone before the batch; docs/emulators.md, "moto and
//! LocalStack"), so only the happy path is asked of it: the driver's tests here, and
//! the full-stack stories through `servers::route53_moto`.
use crate::servers::{Daemon, http_exchange};
use crate::{free_port, tool};
use dnsplane_applier::provider::route53::Route53Config;
use dnsplane_applier::provider::route53::credentials::EnvReader;
use dnsplane_common::Name;
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;

/// A private `moto_server` on a loopback port.
#[derive(Debug)]
pub struct Moto {
    daemon: Daemon,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Moto {
    /// Starts `moto_server` (`$DNSPLANE_MOTO_SERVER` or on PATH); `None` (or a panic
    /// under `DNSPLANE_REQUIRE_SERVERS=1`) when it is not installed.
    pub fn start() -> Option<Moto> {
        let bin = tool("DNSPLANE_MOTO_SERVER", "moto_server")?;
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut daemon = Daemon::spawn(
            "moto_server",
            Command::new(bin).args(["-H", "127.0.0.1", "-p", &port.to_string()]),
            dir.path().join("moto.log"),
        );
        daemon.wait_until(|_| TcpStream::connect(("127.0.0.1", port)).is_ok());
        Some(Moto {
            daemon,
            port,
            _dir: dir,
        })
    }

    /// The last lines of moto's log.
    pub fn log_tail(&self) -> String {
        self.daemon.log_tail()
    }

    /// Creates a hosted zone with Route 53's own call; its id.
    pub fn create_zone(&self, zone: &Name, private: bool) -> String {
        let vpc = if private {
            "<VPC><VPCRegion>us-east-1</VPCRegion><VPCId>vpc-12345678</VPCId></VPC>"
        } else {
            ""
        };
        let body = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><CreateHostedZoneRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Name>{zone}</Name><CallerReference>dnsplane-{}</CallerReference><HostedZoneConfig><Comment>test</Comment><PrivateZone>{private}</PrivateZone></HostedZoneConfig>{vpc}</CreateHostedZoneRequest>"#,
            rand::random::<u64>()
        );
        let (status, answer) = http_exchange(
            self.port,
            "POST",
            "/2013-04-01/hostedzone",
            &[
                ("Content-Type", "application/xml"),
                // moto picks the service from the credential scope; it checks no signature.
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=AKIAMOTO000000000000/20260101/us-east-1/route53/aws4_request, SignedHeaders=host, Signature=0",
                ),
            ],
            &body,
        )
        .expect("CreateHostedZone");
        assert!(status == 201 || status == 200, "{status}: {answer}");
        let start = answer.find("<Id>").expect("an Id") + 4;
        let end = answer[start..].find("</Id>").expect("an Id") + start;
        answer[start..end]
            .trim_start_matches("/hostedzone/")
            .to_string()
    }

    /// The driver's config for this server.
    pub fn config(&self) -> Route53Config {
        Route53Config {
            endpoint: format!("http://127.0.0.1:{}", self.port),
            ..Route53Config::default()
        }
    }

    /// An environment holding keys (moto accepts any).
    pub fn env() -> EnvReader {
        Arc::new(|k| match k {
            "AWS_ACCESS_KEY_ID" => Some(Moto::ACCESS_KEY.into()),
            "AWS_SECRET_ACCESS_KEY" => Some(Moto::SECRET.into()),
            _ => None,
        })
    }

    /// The keys the tests give moto (it accepts any, and checks no signature).
    pub const ACCESS_KEY: &str = "AKIAMOTO000000000000";
    pub const SECRET: &str = "moto-secret";

    /// Writes a shared credentials file holding [`Moto::ACCESS_KEY`] (profile
    /// `default`) at `path`, for an applier's `credentials_file`; returns `path`.
    pub fn write_credentials(path: &std::path::Path) -> std::path::PathBuf {
        std::fs::write(
            path,
            format!(
                "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
                Moto::ACCESS_KEY,
                Moto::SECRET
            ),
        )
        .expect("write credentials");
        path.to_path_buf()
    }
}
