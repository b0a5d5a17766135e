//! TLS on every port and mTLS between planner and applier, as real processes on
//! loopback with certificates made here (rcgen): the stack converges through mTLS;
//! every configured port speaks TLS (a rustls probe, and `openssl s_client`) and tells
//! a plaintext client so; the applier refuses clients without a certificate, with one
//! of another CA, and with one whose name is not allowed; an `https://` address to a
//! plaintext applier says so; a rotated certificate is served without a restart.
use dnsplane_common::tls::{ClientTls, ClientTlsSettings};
use dnsplane_e2e::{Proc, binary, dig, free_port, tool, wait_for};
use dnsplane_testing::certs::{Ca, Leaf, LeafFiles};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

const ZONE: &str = "example.com.";
const DESIRED: &str = "apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSEndpoint
metadata:
  name: web
spec:
  endpoints:
    - dnsName: www.example.com
      recordType: A
      targets: [192.0.2.10]
";

/// Certificates and configs in a temp dir, ports picked.
struct TlsStack {
    dir: tempfile::TempDir,
    ca: Ca,
    ca_file: PathBuf,
    applier_cert: LeafFiles,
    planner_cert: LeafFiles,
    applier_port: u16,
    applier_admin: u16,
    planner_port: u16,
    planner_admin: u16,
    webhook_port: u16,
    dns_port: u16,
    applier: Option<Proc>,
    planner: Option<Proc>,
}

impl TlsStack {
    fn new() -> TlsStack {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = Ca::new("dnsplane test CA");
        let ca_file = ca.write(dir.path(), "ca");
        let applier_cert = ca
            .leaf(&["applier", "localhost", "127.0.0.1"])
            .write(dir.path(), "applier");
        // One certificate for the planner's ports and as the appliers' client.
        let planner_cert = ca
            .leaf(&["planner", "localhost", "127.0.0.1"])
            .write(dir.path(), "planner");
        std::fs::create_dir_all(dir.path().join("desired")).expect("desired");
        std::fs::write(dir.path().join("desired/web.yaml"), DESIRED).expect("desired");
        TlsStack {
            dir,
            ca,
            ca_file,
            applier_cert,
            planner_cert,
            applier_port: free_port(),
            applier_admin: free_port(),
            planner_port: free_port(),
            planner_admin: free_port(),
            webhook_port: free_port(),
            dns_port: free_port(),
            applier: None,
            planner: None,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `tls`: the applier's `[tls]` table (relative paths, as an operator writes
    /// them); empty: plaintext.
    /// Starts the applier with mutual TLS ([`APPLIER_MTLS`]) and waits until it
    /// serves the planner's certificate.
    async fn start_mtls_applier(&mut self) {
        self.start_applier(APPLIER_MTLS);
        let planner = Some(self.planner_client());
        wait_serving(self.applier_port, planner, "dnsplane.v1.Applier", self).await;
    }

    fn start_applier(&mut self, tls: &str) {
        std::fs::write(
            self.path("applier.toml"),
            format!(
                "[[accounts]]\nname = \"embedded\"\ndriver = \"memory\"\nzones = [\"{ZONE}\"]\nstate_dir = \"{}\"\ndns_listen = \"127.0.0.1:{}\"\n{tls}\n",
                self.path("state").display(),
                self.dns_port
            ),
        )
        .expect("applier.toml");
        let (port, admin) = (self.applier_port, self.applier_admin);
        self.applier = Some(self.spawn("applier", "dnsplane-applier", port, admin));
    }

    /// `scheme` of the applier address; `extra`: the planner's TLS tables.
    fn start_planner(&mut self, scheme: &str, extra: &str) {
        let applier = format!("applier = \"{scheme}://127.0.0.1:{}\"", self.applier_port);
        self.start_planner_to(&applier, extra);
    }

    /// `applier`: how the planner finds appliers (the config line).
    fn start_planner_to(&mut self, applier: &str, extra: &str) {
        std::fs::write(
            self.path("planner.toml"),
            format!(
                "owner_id = \"e2e\"\n{applier}\n\
                 [pool]\nhealth_interval = \"300ms\"\n\
                 [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nsource_poll = \"200ms\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n\
                 [[zones]]\nname = \"{ZONE}\"\naccount = \"embedded\"\n\
                 [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n\
                 [webhook]\nlisten = \"127.0.0.1:{}\"\n{extra}\n",
                self.webhook_port
            ),
        )
        .expect("planner.toml");
        let (port, admin) = (self.planner_port, self.planner_admin);
        self.planner = Some(self.spawn("planner", "dnsplane-planner", port, admin));
    }

    /// `bin --config <name>.toml --listen … --admin-listen …`, its output in `<name>.log`.
    fn spawn(&self, name: &str, bin: &str, port: u16, admin: u16) -> Proc {
        let config = self.path(&format!("{name}.toml"));
        Proc::spawn(
            name,
            &binary(bin),
            &[
                "--config",
                config.to_str().expect("utf8"),
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--admin-listen",
                &format!("127.0.0.1:{admin}"),
            ],
            self.path(&format!("{name}.log")),
        )
    }

    fn logs(&self) -> String {
        [&self.applier, &self.planner]
            .into_iter()
            .flatten()
            .map(|p| format!("--- {} ---\n{}\n", p.name, p.log_text()))
            .collect()
    }

    /// The planner's client config towards the applier (its certificate).
    fn planner_client(&self) -> Arc<ClientTls> {
        client(
            &self.ca_file,
            Some((&self.planner_cert.cert, &self.planner_cert.key)),
        )
    }
}

const APPLIER_MTLS: &str = "[tls]\ncert = \"applier.crt\"\nkey = \"applier.key\"\nclient_ca = \"ca.pem\"\nallowed_names = [\"planner\"]\n";
const PLANNER_TLS: &str = "[tls]\ncert = \"planner.crt\"\nkey = \"planner.key\"\nclient_ca = \"ca.pem\"\n\
    [applier_tls]\nca = \"ca.pem\"\ncert = \"planner.crt\"\nkey = \"planner.key\"\n";

fn client(ca: &Path, identity: Option<(&Path, &Path)>) -> Arc<ClientTls> {
    ClientTls::load_unwatched(&ClientTlsSettings {
        ca: Some(ca.to_path_buf()),
        cert: identity.map(|i| i.0.to_path_buf()),
        key: identity.map(|i| i.1.to_path_buf()),
    })
    .expect("client tls")
}

/// The error and everything under it, as one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}

/// `grpc.health.v1/Check` of `service` over TLS with `tls`, or plaintext without:
/// the status, or the whole error.
/// The error a health check of the applier gets with a client that trusts the CA and
/// shows `identity`: it must be refused (`what`: what it was served otherwise).
async fn applier_refusal(s: &TlsStack, identity: Option<&LeafFiles>, what: &str) -> String {
    let identity = identity.map(|l| (l.cert.as_path(), l.key.as_path()));
    let tls = client(&s.ca_file, identity);
    health(s.applier_port, Some(tls), "").await.expect_err(what)
}

async fn health(port: u16, tls: Option<Arc<ClientTls>>, service: &str) -> Result<i32, String> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let endpoint = tonic::transport::Endpoint::from_shared(format!("{scheme}://127.0.0.1:{port}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5));
    let channel = match tls {
        Some(t) => endpoint.connect_with_connector(t.connector(None)).await,
        None => endpoint.connect().await,
    }
    .map_err(|e| chain(&e))?;
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .map(|r| r.into_inner().status)
        .map_err(|s| format!("{:?}: {}", s.code(), chain(&s)))
}

async fn wait_serving(port: u16, tls: Option<Arc<ClientTls>>, service: &str, stack: &TlsStack) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        match health(port, tls.clone(), service).await {
            Ok(1) => return,
            Ok(s) => last = format!("status {s}"),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "{service} on {port} not serving in 30 s: {last}\n{}",
        stack.logs()
    );
}

/// A TLS connection to `port` trusting `ca_pem`, for `localhost`.
async fn tls_connect(
    port: u16,
    ca_pem: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("ca"))
        .expect("root");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().expect("name"), tcp)
        .await
        .map_err(|e| e.to_string())
}

/// A TLS handshake with `port` trusting `ca_pem`: the server's leaf certificate.
async fn server_cert(port: u16, ca_pem: &str) -> Result<CertificateDer<'static>, String> {
    let tls = tls_connect(port, ca_pem).await?;
    Ok(tls.get_ref().1.peer_certificates().expect("certs")[0].clone())
}

/// An HTTPS GET of `path`: the whole reply.
async fn https_get(port: u16, ca_pem: &str, path: &str) -> String {
    let Ok(tls) = tls_connect(port, ca_pem).await else {
        return String::new();
    };
    get_over(tls, path).await
}

/// An HTTP/1.1 GET of `path` over `stream`: the whole reply (what came before an
/// error).
async fn get_over(
    mut stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    path: &str,
) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let _ = stream.write_all(request.as_bytes()).await;
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    String::from_utf8_lossy(&reply).into_owned()
}

/// A plaintext HTTP/1.1 GET: the whole reply.
async fn plain_get(port: u16) -> String {
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut reply = Vec::new();
    let _ = tcp.read_to_end(&mut reply).await;
    String::from_utf8_lossy(&reply).into_owned()
}

/// `openssl s_client` against `port`, verifying with the CA: its output.
fn s_client(openssl: &Path, port: u16, ca: &Path) -> String {
    let mut child = std::process::Command::new(openssl)
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-CAfile",
            ca.to_str().expect("utf8"),
            "-verify_return_error",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl");
    // Closed stdin: s_client ends after the handshake.
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("openssl output");
    crate::stack::combined(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_stack_converges_and_every_port_speaks_tls() {
    let (Some(dig_path), Some(openssl)) = (
        tool("DNSPLANE_DIG", "dig"),
        tool("DNSPLANE_OPENSSL", "openssl"),
    ) else {
        return;
    };
    let mut s = TlsStack::new();
    s.start_mtls_applier().await;
    s.start_planner("https", PLANNER_TLS);
    let ca_only = client(&s.ca_file, None);
    wait_serving(s.planner_port, Some(ca_only), "dnsplane.v1.Planner", &s).await;

    // The planner reached the applier through mTLS and wrote the zone.
    let converged = wait_for(Duration::from_secs(30), || {
        (dig(&dig_path, s.dns_port, "www.example.com", "A", false) == ["192.0.2.10"]).then_some(())
    });
    assert!(converged.is_some(), "not converged; logs:\n{}", s.logs());

    let ports = [
        ("planner gRPC", s.planner_port),
        ("planner admin", s.planner_admin),
        ("planner webhook", s.webhook_port),
        ("applier gRPC", s.applier_port),
        ("applier admin", s.applier_admin),
    ];
    for (what, port) in ports {
        let cert = server_cert(port, &s.ca.pem)
            .await
            .unwrap_or_else(|e| panic!("{what}: no TLS handshake: {e}"));
        let names = dnsplane_common::tls::san::dns_names(&cert);
        let want = if what.starts_with("planner") {
            "planner"
        } else {
            "applier"
        };
        assert!(names.iter().any(|n| n == want), "{what} served {names:?}");
        let out = s_client(&openssl, port, &s.ca_file);
        assert!(
            out.contains("BEGIN CERTIFICATE") || out.contains("Server certificate"),
            "{what}: openssl s_client saw no certificate:\n{out}"
        );
        assert!(
            out.contains("Verify return code: 0 (ok)"),
            "{what}: openssl did not verify the certificate:\n{out}"
        );
        let reply = plain_get(port).await;
        assert!(
            reply.starts_with("HTTP/1.1 400") && reply.contains("this port speaks TLS"),
            "{what}: a plaintext GET got {reply:?}"
        );
    }
    // A plaintext gRPC client against the TLS gRPC ports is told (GOAWAY's debug
    // data) to use TLS.
    for port in [s.planner_port, s.applier_port] {
        let e = health(port, None, "")
            .await
            .expect_err("plaintext gRPC served on a TLS port");
        assert!(e.contains("this port speaks TLS"), "{e}");
    }

    // The CLI: `--addr https://` with `--ca-file`; without the CA it refuses the
    // planner's certificate.
    let addr = format!("https://127.0.0.1:{}", s.planner_port);
    let out = std::process::Command::new(binary("dnsplane"))
        .args(["status", "--addr", &addr, "--ca-file"])
        .arg(&s.ca_file)
        .output()
        .expect("dnsplane status");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("example.com"),
        "dnsplane status over TLS: {text}"
    );
    let out = std::process::Command::new(binary("dnsplane"))
        .args(["status", "--addr", &addr])
        .env_remove("DNSPLANE_CA_FILE")
        .output()
        .expect("dnsplane status");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("TLS handshake") && err.contains("certificate"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applier_refuses_clients_without_the_right_certificate() {
    let mut s = TlsStack::new();
    s.start_mtls_applier().await;

    // No client certificate, and one of another CA (named as allowed): refused at
    // the handshake. TLS 1.3 tells the client on its first read, which hyper reports
    // as a closed connection or a broken pipe; the applier logs why.
    let e = applier_refusal(&s, None, "served without a certificate").await;
    assert!(
        !e.contains("PermissionDenied"),
        "refused after the handshake: {e}"
    );
    let other = Ca::new("another CA")
        .leaf(&["planner"])
        .write(s.dir.path(), "other");
    let e = applier_refusal(&s, Some(&other), "served a certificate of another CA").await;
    assert!(
        !e.contains("PermissionDenied"),
        "refused after the handshake: {e}"
    );
    // The applier logs each refusal as its handshake ends (maybe after the client
    // saw it).
    let logged = wait_for(Duration::from_secs(10), || {
        let log = s.applier.as_ref().expect("applier").log_text();
        let refusals: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("TLS handshake failed"))
            .collect();
        (refusals.iter().any(|l| l.contains("no certificates"))
            && refusals.iter().any(|l| l.contains("UnknownIssuer")))
        .then_some(())
    });
    assert!(logged.is_some(), "refusals not logged:\n{}", s.logs());

    // The right CA, a name not in allowed_names: PERMISSION_DENIED naming it.
    let intruder = s.ca.leaf(&["intruder"]).write(s.dir.path(), "intruder");
    let e = applier_refusal(&s, Some(&intruder), "served a name not allowed").await;
    let denied_by_name = e.contains("PermissionDenied") && e.contains("intruder");
    assert!(denied_by_name, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_address_to_a_plaintext_applier_says_so() {
    let mut s = TlsStack::new();
    s.start_applier("");
    wait_serving(s.applier_port, None, "dnsplane.v1.Applier", &s).await;
    s.start_planner(
        "https",
        "[applier_tls]\nca = \"ca.pem\"\ncert = \"planner.crt\"\nkey = \"planner.key\"\n",
    );
    let status = wait_for(Duration::from_secs(30), || {
        let text = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(plain_get_path(s.planner_admin, "/status"))
        });
        text.contains("does not speak TLS").then_some(text)
    });
    assert!(
        status.is_some(),
        "the planner's status never said the applier does not speak TLS; logs:\n{}",
        s.logs()
    );
    let log = s.planner.as_ref().expect("planner").log_text();
    assert!(
        log.contains("TLS handshake with 127.0.0.1:") && log.contains("does not speak TLS"),
        "{log}"
    );
}

async fn plain_get_path(port: u16, path: &str) -> String {
    let Ok(tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return String::new();
    };
    get_over(tcp, path).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_certificate_is_served_without_a_restart() {
    let mut s = TlsStack::new();
    s.start_mtls_applier().await;
    let before = server_cert(s.applier_port, &s.ca.pem).await.expect("tls");
    let admin_before = server_cert(s.applier_admin, &s.ca.pem).await.expect("tls");
    assert_eq!(before, admin_before);

    // What cert-manager does: new files in place (here: write, then rename).
    let next: Leaf = s.ca.leaf(&["applier-next", "localhost", "127.0.0.1"]);
    let staged = next.write(s.dir.path(), "staged");
    std::fs::rename(&staged.key, &s.applier_cert.key).expect("key");
    std::fs::rename(&staged.cert, &s.applier_cert.cert).expect("cert");
    let want = CertificateDer::from_pem_slice(next.cert.as_bytes()).expect("pem");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut seen = before.clone();
    while tokio::time::Instant::now() < deadline && seen != want {
        tokio::time::sleep(Duration::from_millis(250)).await;
        seen = server_cert(s.applier_port, &s.ca.pem).await.expect("tls");
    }
    assert_eq!(
        seen,
        want,
        "the new certificate was not served within 15 s; logs:\n{}",
        s.logs()
    );
    assert_eq!(
        server_cert(s.applier_admin, &s.ca.pem).await.expect("tls"),
        want
    );
    // Still serving the planner's certificate after the rotation.
    assert_eq!(
        health(s.applier_port, Some(s.planner_client()), "").await,
        Ok(1)
    );

    // A broken file: the rotated certificate stays, and the log names the file.
    std::fs::write(&s.applier_cert.key, "not a key").expect("write");
    let logged = wait_for(Duration::from_secs(15), || {
        s.applier
            .as_ref()
            .expect("applier")
            .log_text()
            .contains("applier.key")
            .then_some(())
    });
    assert!(
        logged.is_some(),
        "no error naming the file; logs:\n{}",
        s.logs()
    );
    assert_eq!(
        server_cert(s.applier_port, &s.ca.pem).await.expect("tls"),
        want
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appliers_found_by_applier_dns_speak_mtls_to_the_dns_name() {
    let Some(dig_path) = tool("DNSPLANE_DIG", "dig") else {
        return;
    };
    let mut s = TlsStack::new();
    // No IP address in the applier's certificate: a member found by DNS is verified
    // against the name it was found by, not its address.
    let named = s.ca.leaf(&["localhost"]);
    named.write(s.dir.path(), "applier");
    s.start_applier(APPLIER_MTLS);
    let by_name = s.planner_client().connector(Some("localhost".into()));
    let endpoint =
        tonic::transport::Endpoint::from_shared(format!("https://127.0.0.1:{}", s.applier_port))
            .expect("endpoint");
    let serving = wait_for(Duration::from_secs(30), || {
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async {
                let channel = endpoint
                    .connect_with_connector(by_name.clone())
                    .await
                    .ok()?;
                HealthClient::new(channel)
                    .check(HealthCheckRequest::default())
                    .await
                    .ok()
            })
        })
    });
    assert!(
        serving.is_some(),
        "applier not serving; logs:\n{}",
        s.logs()
    );
    // The address alone does not match the certificate.
    let e = health(s.applier_port, Some(s.planner_client()), "")
        .await
        .expect_err("an IP address the certificate does not name");
    assert!(
        e.contains("TLS handshake") && e.contains("not valid for name"),
        "{e}"
    );

    let applier_dns = format!("applier_dns = \"localhost:{}\"", s.applier_port);
    s.start_planner_to(&applier_dns, PLANNER_TLS);
    let converged = wait_for(Duration::from_secs(30), || {
        (dig(&dig_path, s.dns_port, "www.example.com", "A", false) == ["192.0.2.10"]).then_some(())
    });
    assert!(converged.is_some(), "not converged; logs:\n{}", s.logs());
    let status = https_get(s.planner_admin, &s.ca.pem, "/status").await;
    assert!(
        status.starts_with("HTTP/1.1 200")
            && status.contains(&format!("https://127.0.0.1:{}", s.applier_port)),
        "{status}"
    );
}

/// The planner's `/status` once `pred` holds for its JSON (over HTTPS, polled).
async fn planner_status_until(
    s: &TlsStack,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut last = serde_json::Value::Null;
    while tokio::time::Instant::now() < deadline {
        let reply = https_get(s.planner_admin, &s.ca.pem, "/status").await;
        if let Some((_, body)) = reply.split_once("\r\n\r\n")
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(body.trim())
        {
            if pred(&v) {
                return v;
            }
            last = v;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("status never matched; last {last}; logs:\n{}", s.logs());
}

/// TLS files that cannot be reloaded (a key overwritten with garbage) keep the ones
/// in use, and status says so: degraded under `tls_files`, naming the file, until
/// the files are good again. Before, status said `healthy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_files_that_cannot_be_loaded_degrade_status() {
    let mut s = TlsStack::new();
    s.start_applier(APPLIER_MTLS);
    s.start_planner("https", PLANNER_TLS);
    let tls_reason = |v: &serde_json::Value| {
        v["reasons"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["rule"] == "tls_files")
            .cloned()
    };
    planner_status_until(&s, |v| v["level"] == "healthy").await;

    let good_key = std::fs::read(&s.planner_cert.key).expect("key");
    std::fs::write(&s.planner_cert.key, "not a key").expect("write");
    let st = planner_status_until(&s, |v| tls_reason(v).is_some()).await;
    assert_eq!(st["level"], "degraded", "{st}");
    let r = tls_reason(&st).expect("reason");
    assert_eq!(r["level"], "degraded", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("planner.key"),
        "{r}"
    );
    // The files in use still serve.
    assert!(
        https_get(s.planner_admin, &s.ca.pem, "/healthz")
            .await
            .starts_with("HTTP/1.1 200"),
        "{}",
        s.logs()
    );

    std::fs::write(&s.planner_cert.key, good_key).expect("restore");
    planner_status_until(&s, |v| tls_reason(v).is_none()).await;
}
