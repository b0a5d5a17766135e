//! A minimal, independent external-dns webhook *server*, written from the protocol text
//! (`/work/shared/design/INTEROP.md` §1) and nothing of dnsplane's driver: an in-memory
//! store behind `GET /` (negotiation), `GET /records` and `POST /records`, strict
//! where the protocol is exact (the media type byte for byte, lower-camel `Changes`
//! keys, `updateOld`/`updateNew` paired, `dnsName` without a trailing dot, 204 on
//! success), idempotent where the protocol asks servers to be (a create of what exists
//! and a delete of what is absent succeed), and with switches for the faults a
//! client must survive ([`Faults`]). It judges the `webhook` driver, so it must not
//! share its types.
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The protocol's media type, as the text gives it.
pub const MEDIA: &str = "application/external.dns.webhook+json;version=1";

/// Switches for the faults a client must survive; each stays on until cleared.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Negotiation answers with this Content-Type instead of the media type.
    pub negotiate_content_type: Option<String>,
    /// `GET /records` answers this status (e.g. 500) with a short body.
    pub records_status: Option<u16>,
    /// `GET /records` answers 200 with this body instead of the records.
    pub records_body: Option<String>,
    /// `POST /records` answers this status (and this body) without applying anything.
    pub apply_status: Option<(u16, String)>,
    /// `POST /records` applies the changes, then answers 200 instead of 204.
    pub answer_200: bool,
    /// `POST /records` applies the changes, then answers 502.
    pub commit_then_502: bool,
    /// `POST /records` sleeps this long before doing anything.
    pub sleep: Option<Duration>,
    /// `POST /records` answers 204 and applies nothing (a server that logs and skips
    /// what its own API refused).
    pub drop_writes: bool,
}

/// Requests served, by call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub negotiations: u64,
    pub reads: u64,
    pub applies: u64,
}

/// An Endpoint as the protocol text describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefEndpoint {
    pub dns_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    pub record_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub set_identifier: String,
    #[serde(rename = "recordTTL", default, skip_serializing_if = "is_zero")]
    pub record_ttl: i64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_specific: Vec<RefProperty>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefProperty {
    pub name: String,
    pub value: String,
}

/// `Changes`, with exactly the lower-camel keys external-dns sends since v0.17.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RefChanges {
    #[serde(default)]
    create: Vec<RefEndpoint>,
    #[serde(default, rename = "updateOld")]
    update_old: Vec<RefEndpoint>,
    #[serde(default, rename = "updateNew")]
    update_new: Vec<RefEndpoint>,
    #[serde(default)]
    delete: Vec<RefEndpoint>,
}

type Key = (String, String, String);

fn key(e: &RefEndpoint) -> Key {
    (
        e.dns_name.to_ascii_lowercase(),
        e.record_type.to_ascii_uppercase(),
        e.set_identifier.clone(),
    )
}

#[derive(Default)]
struct Inner {
    filter: Value,
    records: BTreeMap<Key, RefEndpoint>,
    faults: Faults,
    counts: Counts,
    last_changes: Option<Value>,
}

/// The server, on 127.0.0.1; stops when dropped.
pub struct WebhookReference {
    addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for WebhookReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookReference")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for WebhookReference {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn reply(status: u16, content_type: Option<&str>, body: impl Into<Body>) -> Response {
    let mut b = Response::builder().status(StatusCode::from_u16(status).expect("a status"));
    if let Some(ct) = content_type {
        b = b.header(header::CONTENT_TYPE, ct);
    }
    b.body(body.into()).expect("a response")
}

impl WebhookReference {
    /// Starts a server whose domain filter is `filter` (the negotiation body, e.g.
    /// `{"include":["example.test"]}`).
    pub async fn start(filter: Value) -> WebhookReference {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("address");
        let inner = Arc::new(Mutex::new(Inner {
            filter,
            ..Inner::default()
        }));
        let app = Router::new().fallback(serve).with_state(inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        WebhookReference { addr, inner, task }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The base URL, as `--webhook-provider-url` takes it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Changes the fault switches.
    pub fn faults(&self, f: impl FnOnce(&mut Faults)) {
        f(&mut self.lock().faults);
    }

    pub fn counts(&self) -> Counts {
        self.lock().counts
    }

    /// Stores `e` as another writer would.
    pub fn insert(&self, e: RefEndpoint) {
        self.lock().records.insert(key(&e), e);
    }

    /// Everything stored, in key order.
    pub fn records(&self) -> Vec<RefEndpoint> {
        self.lock().records.values().cloned().collect()
    }

    /// The body of the last `POST /records`, as JSON.
    pub fn last_changes(&self) -> Option<Value> {
        self.lock().last_changes.clone()
    }
}

async fn serve(State(inner): State<Arc<Mutex<Inner>>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let header_is = |name: header::HeaderName| {
        parts.headers.get(name).and_then(|v| v.to_str().ok()) == Some(MEDIA)
    };
    let lock = || {
        inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    match (parts.method.clone(), parts.uri.path()) {
        (Method::GET, "/") => {
            let mut s = lock();
            s.counts.negotiations += 1;
            if !header_is(header::ACCEPT) {
                return reply(406, None, "Accept must be the webhook media type");
            }
            let ct = s
                .faults
                .negotiate_content_type
                .clone()
                .unwrap_or_else(|| MEDIA.to_string());
            reply(200, Some(&ct), s.filter.to_string())
        }
        (Method::GET, "/records") => {
            let mut s = lock();
            s.counts.reads += 1;
            if !header_is(header::ACCEPT) {
                return reply(406, None, "Accept must be the webhook media type");
            }
            if let Some(status) = s.faults.records_status {
                return reply(status, None, "records unavailable");
            }
            if let Some(body) = s.faults.records_body.clone() {
                return reply(200, Some(MEDIA), body);
            }
            let all: Vec<&RefEndpoint> = s.records.values().collect();
            reply(
                200,
                Some(MEDIA),
                serde_json::to_string(&all).expect("records as JSON"),
            )
        }
        (Method::POST, "/records") => {
            let sleep = lock().faults.sleep;
            if let Some(d) = sleep {
                tokio::time::sleep(d).await;
            }
            let bytes = match axum::body::to_bytes(body, 64 << 20).await {
                Ok(b) => b,
                Err(e) => return reply(400, None, format!("cannot read the body: {e}")),
            };
            let mut s = lock();
            s.counts.applies += 1;
            s.last_changes = serde_json::from_slice(&bytes).ok();
            if !header_is(header::CONTENT_TYPE) {
                return reply(415, None, "Content-Type must be the webhook media type");
            }
            let changes: RefChanges = match serde_json::from_slice(&bytes) {
                Ok(c) => c,
                Err(e) => return reply(400, None, format!("malformed changes: {e}")),
            };
            if changes.update_old.len() != changes.update_new.len() {
                return reply(400, None, "updateOld and updateNew differ in length");
            }
            let all = changes
                .create
                .iter()
                .chain(&changes.update_old)
                .chain(&changes.update_new)
                .chain(&changes.delete);
            for e in all {
                if e.dns_name.is_empty() || e.dns_name.ends_with('.') {
                    return reply(400, None, format!("bad dnsName {:?}", e.dns_name));
                }
            }
            if let Some((status, body)) = s.faults.apply_status.clone() {
                return reply(status, None, body);
            }
            if !s.faults.drop_writes {
                for e in changes.create {
                    s.records.insert(key(&e), e);
                }
                for (old, new) in changes.update_old.iter().zip(changes.update_new) {
                    s.records.remove(&key(old));
                    s.records.insert(key(&new), new);
                }
                for e in &changes.delete {
                    s.records.remove(&key(e));
                }
            }
            if s.faults.commit_then_502 {
                return reply(502, None, "bad gateway");
            }
            if s.faults.answer_200 {
                return reply(200, None, "");
            }
            reply(204, None, Body::empty())
        }
        (_, "/records") => reply(400, None, "method not allowed"),
        _ => reply(404, None, "not found"),
    }
}
