//! The chain against loopback stubs of Google's token endpoints and metadata server
//! (no Google service can be reached from here): what each source sends, that a
//! service account's JWT verifies with its public key, that tokens are kept while
//! they last, and that refusals are permanent with the endpoint's words.
use super::*;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::{KeyPair, RSA_PKCS1_2048_8192_SHA256, RsaKeyPair, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One request a stub saw.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Seen {
    fn form(&self) -> HashMap<String, String> {
        reqwest::Url::parse(&format!("http://x/?{}", self.body))
            .unwrap()
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

type Responder = Arc<dyn Fn(&Seen) -> (u16, String) + Send + Sync>;

/// A one-answer-per-connection HTTP/1.1 server on 127.0.0.1.
async fn stub(respond: Responder) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (respond, log) = (respond.clone(), log.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.lines();
                let mut first = lines.next().unwrap_or("").split_whitespace();
                let (method, path) = (
                    first.next().unwrap_or("").to_string(),
                    first.next().unwrap_or("").to_string(),
                );
                let headers: HashMap<String, String> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let seen = Seen {
                    method,
                    path,
                    headers,
                    body: String::from_utf8_lossy(&buf[head_end..]).to_string(),
                };
                let (status, body) = respond(&seen);
                log.lock().unwrap().push(seen);
                let resp = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

fn env(pairs: &[(&str, &str)]) -> EnvReader {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |k| map.get(k).cloned())
}

fn source(e: EnvReader, file: Option<PathBuf>) -> TokenSource {
    TokenSource::new(e, file, reqwest::Client::new())
}

fn token_answer(token: &str) -> (u16, String) {
    (
        200,
        format!(r#"{{"access_token":"{token}","expires_in":3599,"token_type":"Bearer"}}"#),
    )
}

#[tokio::test]
async fn a_token_in_the_environment_comes_first_and_is_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("missing.json");
    let s = source(
        env(&[
            ("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.s3cret"),
            ("GOOGLE_APPLICATION_CREDENTIALS", bogus.to_str().unwrap()),
        ]),
        None,
    );
    let t = s.get().await.unwrap();
    assert_eq!(
        (t.secret.as_str(), t.origin.as_str()),
        ("ya29.s3cret", "GOOGLE_OAUTH_ACCESS_TOKEN")
    );
    assert!(!format!("{t:?}").contains("s3cret"));
    // Without it, the named file is read (and its absence is permanent).
    let e = source(
        env(&[("GOOGLE_APPLICATION_CREDENTIALS", bogus.to_str().unwrap())]),
        None,
    )
    .get()
    .await
    .unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
    assert!(e.message.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
}

#[tokio::test]
async fn a_service_account_signs_a_jwt_that_verifies_and_exchanges_it_once() {
    let key = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&key).unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der.as_ref())
    );
    let public = key.public_key().as_ref().to_vec();
    let (url, seen) = stub(Arc::new(|_| token_answer("ya29.from-jwt"))).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sa.json");
    std::fs::write(
        &file,
        serde_json::json!({
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "kid-1",
            "private_key": pem,
            "client_email": "dnsplane@p.iam.gserviceaccount.com",
            "token_uri": format!("{url}/token"),
        })
        .to_string(),
    )
    .unwrap();
    // The account's credentials_file wins over GOOGLE_APPLICATION_CREDENTIALS.
    let s = source(
        env(&[("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent")]),
        Some(file),
    );
    let t = s.get().await.unwrap();
    assert_eq!(t.secret, "ya29.from-jwt");
    assert!(t.expires.is_some());
    assert_eq!(s.get().await.unwrap().secret, "ya29.from-jwt");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "one exchange while the token lasts");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/token")
    );
    let form = seen[0].form();
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    let jwt = &form["assertion"];
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(
        (header["alg"].as_str(), header["kid"].as_str()),
        (Some("RS256"), Some("kid-1"))
    );
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["iss"], "dnsplane@p.iam.gserviceaccount.com");
    assert_eq!(claims["scope"], SCOPE);
    assert_eq!(claims["aud"], format!("{url}/token"));
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );
    let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, &public)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .expect("the JWT verifies with the service account's public key");
    // A refused token is read again.
    s.forget().await;
    s.get().await.unwrap();
}

#[tokio::test]
async fn a_refusal_at_the_token_endpoint_is_permanent_with_its_words() {
    let (url, _) = stub(Arc::new(|_| {
        (
            400,
            r#"{"error":"invalid_grant","error_description":"Bad Request"}"#.into(),
        )
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("user.json");
    std::fs::write(
        &file,
        serde_json::json!({"type": "authorized_user", "client_id": "cid", "client_secret": "cs",
                           "refresh_token": "rt", "token_uri": format!("{url}/token")})
        .to_string(),
    )
    .unwrap();
    let e = source(env(&[]), Some(file)).get().await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
    assert!(e.message.contains("invalid_grant: Bad Request"), "{e}");
    let dir2 = tempfile::tempdir().unwrap();
    let bad = dir2.path().join("x.json");
    std::fs::write(&bad, r#"{"type":"impersonated_service_account"}"#).unwrap();
    let e = source(env(&[]), Some(bad)).get().await.unwrap_err();
    assert!(e.message.contains("impersonated_service_account"), "{e}");
}

#[tokio::test]
async fn gcloud_user_credentials_exchange_their_refresh_token() {
    let (url, seen) = stub(Arc::new(|_| token_answer("ya29.user"))).await;
    let home = tempfile::tempdir().unwrap();
    let gcloud = home.path().join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    std::fs::write(
        gcloud.join("application_default_credentials.json"),
        serde_json::json!({"type": "authorized_user", "client_id": "cid", "client_secret": "cs",
                           "refresh_token": "rt-1", "token_uri": format!("{url}/token")})
        .to_string(),
    )
    .unwrap();
    let t = source(env(&[("HOME", home.path().to_str().unwrap())]), None)
        .get()
        .await
        .unwrap();
    assert_eq!(t.secret, "ya29.user");
    let form = seen.lock().unwrap()[0].form();
    assert_eq!(
        (
            form["grant_type"].as_str(),
            form["refresh_token"].as_str(),
            form["client_id"].as_str()
        ),
        ("refresh_token", "rt-1", "cid")
    );
}

#[tokio::test]
async fn workload_identity_exchanges_the_subject_token_then_impersonates() {
    let (url, seen) = stub(Arc::new(|s: &Seen| match s.path.as_str() {
        "/sts" => token_answer("sts-token"),
        _ => (
            200,
            r#"{"accessToken":"ya29.impersonated","expireTime":"2099-01-01T00:00:00Z"}"#.into(),
        ),
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let subject = dir.path().join("oidc");
    std::fs::write(&subject, "eyJ.oidc.token\n").unwrap();
    let file = dir.path().join("wif.json");
    std::fs::write(
        &file,
        serde_json::json!({
            "type": "external_account",
            "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/k",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{url}/sts"),
            "service_account_impersonation_url": format!("{url}/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken"),
            "credential_source": {"file": subject.to_str().unwrap()},
        })
        .to_string(),
    )
    .unwrap();
    let t = source(env(&[]), Some(file)).get().await.unwrap();
    assert_eq!(t.secret, "ya29.impersonated");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let form = seen[0].form();
    assert_eq!(form["subject_token"], "eyJ.oidc.token");
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(seen[1].headers["authorization"], "Bearer sts-token");
    assert!(seen[1].body.contains(SCOPE), "{}", seen[1].body);
}

#[tokio::test]
async fn the_metadata_server_comes_last() {
    let (url, seen) = stub(Arc::new(|s: &Seen| {
        if s.headers.get("metadata-flavor").map(String::as_str) == Some("Google") {
            token_answer("ya29.metadata")
        } else {
            (403, "missing Metadata-Flavor".into())
        }
    }))
    .await;
    let host = url.trim_start_matches("http://").to_string();
    let t = source(env(&[("GCE_METADATA_HOST", &host)]), None)
        .get()
        .await
        .unwrap();
    assert_eq!(
        (t.secret.as_str(), t.origin.as_str()),
        ("ya29.metadata", format!("metadata server {host}").as_str())
    );
    assert_eq!(
        seen.lock().unwrap()[0].path,
        "/computeMetadata/v1/instance/service-accounts/default/token"
    );
    // A named metadata server that does not answer: worth retrying, and said so.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let e = source(env(&[("GCE_METADATA_HOST", &closed)]), None)
        .get()
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Transient);
    assert!(e.message.starts_with("no Google credentials"), "{e}");
}
