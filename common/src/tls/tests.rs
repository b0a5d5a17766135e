use super::*;
use dnsplane_testing::certs::{Ca, LeafFiles};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_stream::StreamExt;

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("pem")
}

struct Setup {
    dir: tempfile::TempDir,
    ca: Ca,
    ca_file: std::path::PathBuf,
    server: LeafFiles,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new("test CA");
    let ca_file = ca.write(dir.path(), "ca");
    let server = ca
        .leaf(&["localhost", "127.0.0.1"])
        .write(dir.path(), "server");
    Setup {
        dir,
        ca,
        ca_file,
        server,
    }
}

fn server_settings(s: &Setup, auth: ClientAuth) -> ServerTlsSettings {
    ServerTlsSettings {
        cert: s.server.cert.clone(),
        key: s.server.key.clone(),
        client_ca: Some(s.ca_file.clone()),
        client_auth: auth,
    }
}

/// Serves `tls` on a loopback port; every accepted connection's info goes to the
/// channel, and the server writes "ok" to it.
async fn serve(
    tls: &Arc<ServerTls>,
) -> (
    std::net::SocketAddr,
    tokio::sync::mpsc::UnboundedReceiver<ConnInfo>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut incoming =
        Incoming::new(listener, Some(Arc::new(tls.port(ALPN_HTTP1))), "test").expect("incoming");
    let addr = incoming.local_addr();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(mut conn)) = incoming.next().await {
            let _ = tx.send(conn.info().clone());
            let _ = conn.write_all(b"ok").await;
            let _ = conn.shutdown().await;
        }
    });
    (addr, rx)
}

/// A raw rustls client: the server's leaf certificate it saw, or the error.
async fn client(
    addr: std::net::SocketAddr,
    ca_pem: &str,
    identity: Option<(&str, &str)>,
) -> Result<CertificateDer<'static>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(ca_pem)).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![der(cert)],
                rustls_pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut s = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let seen = s.get_ref().1.peer_certificates().unwrap()[0].clone();
    // TLS 1.3: a refused client certificate shows on the first read.
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.map_err(|e| e.to_string())?;
    if buf != b"ok" {
        return Err(format!("read {buf:?}"));
    }
    Ok(seen)
}

#[test]
fn dns_names_of_a_certificate() {
    let leaf = Ca::new("ca").leaf(&["planner", "Planner.Example", "127.0.0.1"]);
    assert_eq!(
        san::dns_names(&der(&leaf.cert)),
        vec!["planner".to_string(), "planner.example".to_string()]
    );
    assert!(san::dns_names(&CertificateDer::from(vec![0x30, 0x03, 1, 2, 3])).is_empty());
}

#[tokio::test]
async fn mtls_names_the_client_and_refuses_others() {
    let s = setup();
    let tls = ServerTls::load_unwatched(&server_settings(&s, ClientAuth::Required)).unwrap();
    let (addr, mut infos) = serve(&tls).await;
    let planner = s.ca.leaf(&["planner"]);
    client(addr, &s.ca.pem, Some((&planner.cert, &planner.key)))
        .await
        .expect("a client of the CA is served");
    let info = infos.recv().await.unwrap();
    assert!(info.tls);
    assert_eq!(info.client.unwrap().dns_names, vec!["planner".to_string()]);

    let none = client(addr, &s.ca.pem, None).await.unwrap_err();
    assert!(none.contains("CertificateRequired"), "{none}");
    let other = Ca::new("other CA").leaf(&["planner"]);
    let err = client(addr, &s.ca.pem, Some((&other.cert, &other.key)))
        .await
        .unwrap_err();
    assert!(err.contains("alert"), "{err}");
    assert!(
        infos.try_recv().is_err(),
        "a refused client reached the service"
    );
}

#[tokio::test]
async fn optional_client_auth_serves_clients_without_a_certificate() {
    let s = setup();
    let tls = ServerTls::load_unwatched(&server_settings(&s, ClientAuth::Optional)).unwrap();
    let (addr, mut infos) = serve(&tls).await;
    client(addr, &s.ca.pem, None).await.expect("served");
    assert!(infos.recv().await.unwrap().client.is_none());
}

#[tokio::test]
async fn reload_takes_a_new_certificate_and_keeps_the_old_one_when_broken() {
    let s = setup();
    let tls = ServerTls::load_unwatched(&server_settings(&s, ClientAuth::Optional)).unwrap();
    let (addr, _infos) = serve(&tls).await;
    let first = client(addr, &s.ca.pem, None).await.unwrap();
    assert!(!tls.reload(), "nothing changed");

    let next = s.ca.leaf(&["localhost", "next.example"]);
    next.write(s.dir.path(), "server");
    assert!(tls.reload());
    let second = client(addr, &s.ca.pem, None).await.unwrap();
    assert_ne!(first, second);
    assert_eq!(second, der(&next.cert));

    // A key of another certificate: refused, the one in use stays.
    let other = s.ca.leaf(&["localhost"]);
    std::fs::write(&s.server.key, &other.key).unwrap();
    assert!(!tls.reload());
    assert_eq!(client(addr, &s.ca.pem, None).await.unwrap(), second);
    std::fs::write(&s.server.key, "garbage").unwrap();
    assert!(!tls.reload());
    assert_eq!(client(addr, &s.ca.pem, None).await.unwrap(), second);
}

/// While the files cannot be used (garbage, missing), `problem` names the file; once
/// they build again it is gone.
#[test]
fn problem_says_why_the_files_cannot_be_loaded_until_they_can() {
    let s = setup();
    let tls = ServerTls::load_unwatched(&server_settings(&s, ClientAuth::Optional)).unwrap();
    assert_eq!(tls.problem(), None);
    let good = std::fs::read(&s.server.key).unwrap();
    std::fs::write(&s.server.key, "garbage").unwrap();
    assert!(!tls.reload());
    let p = tls.problem().expect("a problem");
    assert!(
        p.contains("server certificate") && p.contains("server.key"),
        "{p}"
    );
    std::fs::remove_file(&s.server.key).unwrap();
    assert!(!tls.reload());
    assert!(tls.problem().unwrap().contains("server.key"));
    // Back as it was in use: nothing to rebuild, and nothing wrong any more.
    std::fs::write(&s.server.key, &good).unwrap();
    tls.reload();
    assert_eq!(tls.problem(), None);
}

#[test]
fn bad_files_are_named() {
    let s = setup();
    let mut settings = server_settings(&s, ClientAuth::Required);
    settings.key = s.dir.path().join("missing.key");
    let e = ServerTls::load_unwatched(&settings)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing.key") && e.contains("cannot read"),
        "{e}"
    );
    let other = s.ca.leaf(&["x"]).write(s.dir.path(), "other");
    settings.key = other.key.clone();
    let e = ServerTls::load_unwatched(&settings)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("other.key") && e.contains("does not match"),
        "{e}"
    );
    settings.key = s.server.key.clone();
    settings.client_ca = Some(s.server.key.clone());
    let e = ServerTls::load_unwatched(&settings)
        .unwrap_err()
        .to_string();
    assert!(e.contains("server.key") && e.contains("CERTIFICATE"), "{e}");
}

#[tokio::test]
async fn a_plaintext_http_client_is_told_to_use_tls() {
    let s = setup();
    let tls = ServerTls::load_unwatched(&server_settings(&s, ClientAuth::Optional)).unwrap();
    let (addr, _infos) = serve(&tls).await;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut reply = String::new();
    tcp.read_to_string(&mut reply).await.unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 400") && reply.contains("this port speaks TLS"),
        "{reply}"
    );
}

#[tokio::test]
async fn the_connector_says_when_the_peer_speaks_plaintext() {
    let s = setup();
    // A plaintext HTTP/2 server, as tonic without TLS is.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            let mut buf = [0u8; 64];
            let _ = c.read(&mut buf).await;
            let _ = c.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await;
        }
    });
    let tls = ClientTls::load_unwatched(&ClientTlsSettings {
        ca: Some(s.ca_file.clone()),
        ..Default::default()
    })
    .unwrap();
    let mut connector = tls.connector(None);
    let uri: http::Uri = format!("https://{addr}").parse().unwrap();
    let e = tonic::codegen::Service::call(&mut connector, uri)
        .await
        .unwrap_err();
    assert!(matches!(e, client::ConnectError::NotTls { .. }), "{e}");
    assert!(e.to_string().contains("does not speak TLS"), "{e}");
}

#[tokio::test]
async fn allowed_names_answers_permission_denied_naming_the_certificate() {
    let mut check = allowed_names(vec!["planner".into()]);
    let request = |names: Option<&[&str]>| {
        let mut r = tonic::Request::new(());
        r.extensions_mut().insert(ConnInfo {
            remote_addr: "127.0.0.1:1".parse().unwrap(),
            tls: true,
            client: names.map(|n| {
                Arc::new(ClientIdentity {
                    dns_names: n.iter().map(|s| s.to_string()).collect(),
                    certificate: CertificateDer::from(vec![]),
                })
            }),
        });
        r
    };
    assert!(check(request(Some(&["planner"]))).is_ok());
    let e = check(request(Some(&["intruder"]))).unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(e.message().contains("intruder"), "{}", e.message());
    assert!(check(request(None)).is_err());
    assert!(allowed_names(vec![])(request(None)).is_ok());
}

#[tokio::test]
async fn the_client_takes_a_new_ca_for_new_connections() {
    let s = setup();
    let tls = ServerTls::load_unwatched(&server_settings(&s, ClientAuth::Optional)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut incoming =
        Incoming::new(listener, Some(Arc::new(tls.port(ALPN_GRPC))), "test").unwrap();
    let addr = incoming.local_addr();
    tokio::spawn(async move { while incoming.next().await.is_some() {} });

    // Trusting another CA: the server's certificate is refused, and said so.
    let other = Ca::new("other CA");
    let ca_file = other.write(s.dir.path(), "client-ca");
    let client = ClientTls::load_unwatched(&ClientTlsSettings {
        ca: Some(ca_file.clone()),
        ..Default::default()
    })
    .unwrap();
    let mut connector = client.connector(Some("localhost".into()));
    let uri: http::Uri = format!("https://{addr}").parse().unwrap();
    let e = tonic::codegen::Service::call(&mut connector, uri.clone())
        .await
        .unwrap_err();
    assert!(matches!(e, client::ConnectError::Handshake { .. }), "{e}");
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");

    // The file now holds the server's CA: the next connection is made.
    std::fs::write(&ca_file, &s.ca.pem).unwrap();
    assert!(client.reload());
    tonic::codegen::Service::call(&mut connector, uri)
        .await
        .expect("connects with the new CA");
}
