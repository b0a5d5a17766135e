//! A replay server: answers the driver's HTTP requests with responses recorded from
//! (or rendered after) a real provider API, over real HTTP on 127.0.0.1. Each route
//! matches a method, a path and the query pairs it names; a request no route matches
//! answers 501 and is kept, so a test can fail naming the request the recording does
//! not cover.
use dnsplane_testing::kube_api::percent_decode;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One recorded answer.
#[derive(Clone)]
pub struct Route {
    pub method: &'static str,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Route {
    pub fn get(path: impl Into<String>, content_type: &'static str, body: String) -> Route {
        Route {
            method: "GET",
            path: path.into(),
            query: Vec::new(),
            status: 200,
            content_type,
            body,
        }
    }

    /// Matches only when the request's query holds `key=value`.
    pub fn with_query(mut self, key: &str, value: &str) -> Route {
        self.query.push((key.to_string(), value.to_string()));
        self
    }
}

/// The requests a replay server saw, and those it had no recording for.
#[derive(Default)]
pub struct Seen {
    pub requests: Vec<String>,
    pub unmatched: Vec<String>,
}

pub struct Replay {
    pub url: String,
    pub seen: Arc<Mutex<Seen>>,
}

impl Replay {
    pub async fn start(routes: Vec<Route>) -> Replay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let routes = Arc::new(routes);
        let s = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let routes = routes.clone();
                let seen = s.clone();
                tokio::spawn(async move {
                    // One request per connection (`Connection: close`); drivers send
                    // GETs without bodies, so the head is the whole request.
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let line = head.lines().next().unwrap_or_default().to_string();
                    let mut parts = line.split(' ');
                    let method = parts.next().unwrap_or_default();
                    let target = parts.next().unwrap_or_default();
                    let (path, query) = target.split_once('?').unwrap_or((target, ""));
                    let path = percent_decode(path);
                    let pairs: Vec<(String, String)> = query
                        .split('&')
                        .filter(|p| !p.is_empty())
                        .map(|p| {
                            let (k, v) = p.split_once('=').unwrap_or((p, ""));
                            (percent_decode(k), percent_decode(v))
                        })
                        .collect();
                    let request = format!("{method} {target}");
                    let route = routes.iter().find(|r| {
                        r.method == method
                            && r.path == path
                            && r.query.iter().all(|q| pairs.contains(q))
                    });
                    let (status, ctype, body) = match route {
                        Some(r) => (r.status, r.content_type, r.body.clone()),
                        None => {
                            seen.lock().unwrap().unmatched.push(request.clone());
                            (501, "text/plain", format!("no recording for {request}"))
                        }
                    };
                    seen.lock().unwrap().requests.push(request);
                    let reason = if status == 200 { "OK" } else { "Other" };
                    let answer = format!(
                        "HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(answer.as_bytes()).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        Replay { url, seen }
    }

    /// Fails naming every request the recording did not cover.
    pub fn assert_all_recorded(&self) {
        let seen = self.seen.lock().unwrap();
        assert!(
            seen.unmatched.is_empty(),
            "requests with no recording: {:?} (all requests: {:?})",
            seen.unmatched,
            seen.requests
        );
    }
}

/// A recorded fixture, read from `applier/tests/fixtures/octodns/<path>`.
pub fn fixture(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/octodns")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// A file holding a made-up API key or token (the replay server checks none).
pub fn secret_file() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "recorded\n").unwrap();
    f
}
