//! A fault-injecting HTTP proxy in front of a real server (NetBox): it forwards every
//! request, and fails those it is told to, as a server that is down, overloaded or
//! cut off halfway through a paged read looks to its client.
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::{Arc, Mutex};

/// What the proxy does with the next requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything.
    None,
    /// Forward `n` more requests, then answer every one with `status`.
    After { n: usize, status: u16 },
    /// Answer every paged list (a `GET` with `limit=`) with an empty list, 200: a
    /// server that suddenly says it holds nothing. Everything else is forwarded.
    EmptyLists,
}

#[derive(Debug)]
struct Inner {
    upstream: String,
    fault: Mutex<Fault>,
    requests: Mutex<Vec<String>>,
    http: reqwest::Client,
}

/// The proxy, serving on loopback until dropped.
#[derive(Debug)]
pub struct FaultProxy {
    inner: Arc<Inner>,
    url: String,
    _server: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// A proxy to `upstream` (`http://127.0.0.1:32800`), forwarding everything.
    pub async fn start(upstream: &str) -> FaultProxy {
        let inner = Arc::new(Inner {
            upstream: upstream.trim_end_matches('/').to_string(),
            fault: Mutex::new(Fault::None),
            requests: Mutex::new(Vec::new()),
            http: reqwest::Client::new(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&inner));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FaultProxy {
            inner,
            url,
            _server: server,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn set(&self, fault: Fault) {
        *self.inner.fault.lock().unwrap_or_else(|p| p.into_inner()) = fault;
    }

    /// Every request seen, as `METHOD path?query`, in order.
    pub fn requests(&self) -> Vec<String> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

async fn forward(State(inner): State<Arc<Inner>>, req: Request) -> Response {
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    inner
        .requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(format!("{} {target}", req.method()));
    let list = req.method() == axum::http::Method::GET && target.contains("limit=");
    let failing = {
        let mut fault = inner.fault.lock().unwrap_or_else(|p| p.into_inner());
        match *fault {
            Fault::None => None,
            Fault::EmptyLists if list => {
                return Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/json")
                    .body(Body::from(
                        r#"{"count":0,"next":null,"previous":null,"results":[]}"#,
                    ))
                    .expect("a response");
            }
            Fault::EmptyLists => None,
            Fault::After { n: 0, status } => Some(status),
            Fault::After { n, status } => {
                *fault = Fault::After { n: n - 1, status };
                None
            }
        }
    };
    if let Some(status) = failing {
        return Response::builder()
            .status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY))
            .body(Body::from("injected by the tests' fault proxy\n"))
            .expect("a response");
    }
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    let mut out = inner
        .http
        .request(parts.method, format!("{}{target}", inner.upstream))
        .body(body);
    for (k, v) in &parts.headers {
        if k != "host" {
            out = out.header(k, v);
        }
    }
    match out.send().await {
        Ok(resp) => {
            let mut b = Response::builder().status(resp.status().as_u16());
            for (k, v) in resp.headers() {
                if k != "transfer-encoding" && k != "content-length" {
                    b = b.header(k.as_str(), v.as_bytes());
                }
            }
            let bytes = resp.bytes().await.unwrap_or_default();
            b.body(Body::from(bytes)).expect("a response")
        }
        Err(e) => Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Body::from(format!("upstream: {e}\n")))
            .expect("a response"),
    }
}
