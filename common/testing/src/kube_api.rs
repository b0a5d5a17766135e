//! A fake Kubernetes API server for the `DNSEndpoint` resource
//! (`externaldns.k8s.io/v1alpha1`), on 127.0.0.1: there is no kube-apiserver on the
//! test machines, and what the Kubernetes source must survive (an expired watch, an
//! outage, a hang, a dropped connection) is easiest to cause in a fake.
//!
//! It serves what a list-and-watch client and a status writer use:
//! - `GET …/dnsendpoints` (all namespaces) and `…/namespaces/{ns}/dnsendpoints`: a
//!   list with `metadata.resourceVersion`, filtered by `labelSelector` (`k=v`, `k!=v`,
//!   `k`, comma-separated);
//! - the same with `watch=1|true&resourceVersion=R`: a chunked stream of JSON lines
//!   (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`), first every event after
//!   `R`, then live ones; `R` older than the last [`FakeKubeApi::expire`] gets an
//!   `ERROR` event with code 410 (Gone), as a real API server answers a compacted
//!   resourceVersion; `timeoutSeconds` ends the stream;
//! - `PATCH …/namespaces/{ns}/dnsendpoints/{name}/status`: server-side apply of the
//!   status, recorded ([`FakeKubeApi::status_writes`]) and stored in the object.
//!
//! Started with a CRD ([`FakeKubeApi::start_with_crd`]: dnsplane's, from `deploy/k8s`,
//! is [`crd::DNSPLANE_CRD`](crate::crd::DNSPLANE_CRD)), it prunes what is stored as a
//! real API server does: every object written, and every status written, loses the
//! fields the CRD's structural schema does not declare ([`crate::crd`]); a CRD without
//! the status subresource gets 404 on `…/status`. Without one, everything is kept.
//!
//! Tests change objects with [`FakeKubeApi::apply`] and [`FakeKubeApi::delete`], and
//! break the server with [`FakeKubeApi::set_failing`] (500s), [`FakeKubeApi::set_hanging`]
//! (no answer) and [`FakeKubeApi::drop_watches`] (connections cut mid-stream).
use crate::crd::Crd;
use axum::body::{Body, Bytes};
use axum::http::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

const API: &str = "/apis/externaldns.k8s.io/v1alpha1";

/// One status write the server received.
#[derive(Debug, Clone)]
pub struct StatusWrite {
    pub namespace: String,
    pub name: String,
    pub content_type: String,
    /// The query string (`fieldManager=dnsplane&force=true`).
    pub query: String,
    pub body: Value,
}

#[derive(Debug, Default)]
struct State {
    objects: BTreeMap<(String, String), Value>,
    rv: u64,
    /// Every event with its resourceVersion, for watches that resume.
    history: Vec<(u64, &'static str, Value)>,
    /// Watches from a resourceVersion at or below this get 410 Gone.
    compacted: u64,
    watchers: Vec<Watcher>,
    status_writes: Vec<StatusWrite>,
    failing: bool,
    hanging: bool,
    lists: usize,
    watches: usize,
    /// The CRD that prunes what is stored, if any.
    crd: Option<Crd>,
}

#[derive(Debug)]
struct Watcher {
    id: usize,
    namespace: Option<String>,
    selector: Option<String>,
    tx: mpsc::UnboundedSender<Result<Bytes, std::io::Error>>,
}

/// The fake server; stops when dropped.
#[derive(Debug)]
pub struct FakeKubeApi {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeKubeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeKubeApi {
    /// Starts a server on 127.0.0.1 (a free port), inside the current runtime; it
    /// stores objects and statuses as they are written.
    pub async fn start() -> FakeKubeApi {
        Self::serve(None).await
    }

    /// [`start`](Self::start), pruning every object and status written by `crd`'s
    /// schema, as an API server with that CRD installed does. `crd` must be the
    /// DNSEndpoint CRD (`externaldns.k8s.io/v1alpha1`, `dnsendpoints`).
    pub async fn start_with_crd(crd: Crd) -> FakeKubeApi {
        assert_eq!(
            (
                format!("/apis/{}/{}", crd.group, crd.version),
                crd.plural.as_str()
            ),
            (API.to_string(), "dnsendpoints"),
            "the fake serves DNSEndpoints only"
        );
        Self::serve(Some(crd)).await
    }

    async fn serve(crd: Option<Crd>) -> FakeKubeApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake API server");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State {
            rv: 1,
            crd,
            ..State::default()
        }));
        let st = Arc::clone(&state);
        let app = axum::Router::new().fallback(move |req: Request<Body>| {
            let st = Arc::clone(&st);
            async move { handle(st, req).await }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeKubeApi { addr, state, task }
    }

    /// `http://127.0.0.1:PORT`: the `api_server` of a source under test.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Creates or updates `namespace/name` with `labels` and `endpoints` (the
    /// `spec.endpoints` list); a changed spec moves its generation, as the API server's
    /// does. Emits ADDED or MODIFIED.
    pub fn apply(&self, namespace: &str, name: &str, labels: &[(&str, &str)], endpoints: Value) {
        self.apply_spec(namespace, name, labels, json!({ "endpoints": endpoints }));
    }

    /// [`apply`](Self::apply) with a whole `spec` (even a broken one).
    pub fn apply_spec(&self, namespace: &str, name: &str, labels: &[(&str, &str)], spec: Value) {
        let mut st = self.lock();
        st.rv += 1;
        let rv = st.rv;
        let key = (namespace.to_string(), name.to_string());
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect();
        let (kind, mut object) = match st.objects.get(&key) {
            Some(old) => {
                let mut o = old.clone();
                let generation = o["metadata"]["generation"].as_i64().unwrap_or(1);
                if o["spec"] != spec {
                    o["metadata"]["generation"] = (generation + 1).into();
                }
                o["spec"] = spec;
                o["metadata"]["labels"] = Value::Object(labels);
                o["metadata"]["resourceVersion"] = rv.to_string().into();
                ("MODIFIED", o)
            }
            None => (
                "ADDED",
                json!({
                    "apiVersion": "externaldns.k8s.io/v1alpha1",
                    "kind": "DNSEndpoint",
                    "metadata": {
                        "name": name, "namespace": namespace, "uid": format!("uid-{name}-{rv}"),
                        "generation": 1, "resourceVersion": rv.to_string(), "labels": labels,
                    },
                    "spec": spec,
                }),
            ),
        };
        if let Some(crd) = &st.crd {
            crd.prune(&mut object);
        }
        st.objects.insert(key, object.clone());
        publish(&mut st, rv, kind, object);
    }

    /// Deletes `namespace/name` (a DELETED event); false if it did not exist.
    pub fn delete(&self, namespace: &str, name: &str) -> bool {
        let mut st = self.lock();
        let Some(mut object) = st
            .objects
            .remove(&(namespace.to_string(), name.to_string()))
        else {
            return false;
        };
        st.rv += 1;
        let rv = st.rv;
        object["metadata"]["resourceVersion"] = rv.to_string().into();
        publish(&mut st, rv, "DELETED", object);
        true
    }

    /// Deletes `namespace/name` without telling any watch: only a relist can show it
    /// (the case of an object deleted while a client was away).
    pub fn delete_quietly(&self, namespace: &str, name: &str) {
        let mut st = self.lock();
        st.objects
            .remove(&(namespace.to_string(), name.to_string()));
        st.rv += 1;
    }

    /// Compacts history: every open watch gets `ERROR` 410 Gone and ends, and a watch
    /// from any resourceVersion seen so far gets the same.
    pub fn expire(&self) {
        let mut st = self.lock();
        st.compacted = st.rv;
        let gone = event_line(
            "ERROR",
            &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "message": "too old resource version", "reason": "Expired", "code": 410}),
        );
        for w in std::mem::take(&mut st.watchers) {
            let _ = w.tx.send(Ok(gone.clone()));
        }
    }

    /// Sends a BOOKMARK at the current resourceVersion to every open watch.
    pub fn bookmark(&self) {
        let mut st = self.lock();
        let rv = st.rv;
        let mark = json!({"kind": "DNSEndpoint", "apiVersion": "externaldns.k8s.io/v1alpha1",
                          "metadata": {"resourceVersion": rv.to_string()}});
        let line = event_line("BOOKMARK", &mark);
        st.watchers.retain(|w| w.tx.send(Ok(line.clone())).is_ok());
    }

    /// While on, every request is answered 500 and open watches are cut.
    pub fn set_failing(&self, on: bool) {
        let mut st = self.lock();
        st.failing = on;
        if on {
            cut(&mut st);
        }
    }

    /// While on, requests get no answer (until it is turned off) and open watches are
    /// cut.
    pub fn set_hanging(&self, on: bool) {
        let mut st = self.lock();
        st.hanging = on;
        if on {
            cut(&mut st);
        }
    }

    /// Cuts every open watch's connection mid-stream.
    pub fn drop_watches(&self) {
        cut(&mut self.lock());
    }

    /// Every status write received, in order.
    pub fn status_writes(&self) -> Vec<StatusWrite> {
        self.lock().status_writes.clone()
    }

    /// The object as stored (its status included).
    pub fn object(&self, namespace: &str, name: &str) -> Option<Value> {
        self.lock()
            .objects
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// (lists, watches) served so far.
    pub fn requests(&self) -> (usize, usize) {
        let st = self.lock();
        (st.lists, st.watches)
    }

    /// Open watch streams.
    pub fn open_watches(&self) -> usize {
        let mut st = self.lock();
        st.watchers.retain(|w| !w.tx.is_closed());
        st.watchers.len()
    }
}

fn cut(st: &mut State) {
    for w in std::mem::take(&mut st.watchers) {
        let _ = w.tx.send(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "cut by the test",
        )));
    }
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

fn publish(st: &mut State, rv: u64, kind: &'static str, object: Value) {
    let line = event_line(kind, &object);
    st.watchers.retain(|w| {
        !matches(&object, w.namespace.as_deref(), w.selector.as_deref())
            || w.tx.send(Ok(line.clone())).is_ok()
    });
    st.history.push((rv, kind, object));
}

/// Whether `object` is in `namespace` (none: any) and matches `selector`.
fn matches(object: &Value, namespace: Option<&str>, selector: Option<&str>) -> bool {
    if let Some(ns) = namespace
        && object["metadata"]["namespace"].as_str() != Some(ns)
    {
        return false;
    }
    let labels = &object["metadata"]["labels"];
    selector
        .unwrap_or("")
        .split(',')
        .filter(|t| !t.is_empty())
        .all(|term| {
            if let Some((k, v)) = term.split_once("!=") {
                labels[k.trim()].as_str() != Some(v.trim())
            } else if let Some((k, v)) = term.split_once('=') {
                labels[k.trim().trim_end_matches('=')].as_str() == Some(v.trim())
            } else {
                !labels[term.trim()].is_null()
            }
        })
}

fn query_map(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

/// Percent-decoding of a query value (`%3D` → `=`, `+` → space).
pub fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reply(code: StatusCode, body: Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

fn status_error(code: u16, reason: &str, message: &str) -> Response<Body> {
    reply(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code}),
    )
}

async fn handle(state: Arc<Mutex<State>>, req: Request<Body>) -> Response<Body> {
    let lock = || {
        state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    // Hanging: no answer while it lasts (bounded, so a forgotten switch cannot keep a
    // test alive for ever).
    for _ in 0..600 {
        if !lock().hanging {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if lock().failing {
        return status_error(500, "InternalError", "the fake API server is failing");
    }
    let path = req.uri().path().to_string();
    let query = query_map(req.uri().query().unwrap_or(""));
    let Some(rest) = path.strip_prefix(API) else {
        return status_error(404, "NotFound", "not served by the fake");
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (req.method().clone(), parts.as_slice()) {
        (Method::GET, ["dnsendpoints"]) => list_or_watch(&state, None, &query),
        (Method::GET, ["namespaces", ns, "dnsendpoints"]) => {
            list_or_watch(&state, Some(ns), &query)
        }
        (Method::PATCH, ["namespaces", ns, "dnsendpoints", name, "status"]) => {
            let (ns, name) = (ns.to_string(), name.to_string());
            let content_type = req
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let raw_query = req.uri().query().unwrap_or("").to_string();
            let Ok(bytes) = axum::body::to_bytes(req.into_body(), 4 << 20).await else {
                return status_error(400, "BadRequest", "unreadable body");
            };
            let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
                return status_error(400, "BadRequest", "the body is not JSON");
            };
            let mut st = lock();
            if st.crd.as_ref().is_some_and(|c| !c.status_subresource) {
                return status_error(404, "NotFound", "the CRD has no status subresource");
            }
            let key = (ns.clone(), name.clone());
            let Some(mut object) = st.objects.get(&key).cloned() else {
                return status_error(404, "NotFound", "no such DNSEndpoint");
            };
            st.status_writes.push(StatusWrite {
                namespace: ns,
                name,
                content_type,
                query: raw_query,
                body: body.clone(),
            });
            st.rv += 1;
            let rv = st.rv;
            // Only the status is taken from a status write; the API server's pruning
            // then drops what its schema does not declare.
            object["status"] = body["status"].clone();
            if let Some(crd) = &st.crd {
                crd.prune(&mut object);
            }
            object["metadata"]["resourceVersion"] = rv.to_string().into();
            st.objects.insert(key, object.clone());
            publish(&mut st, rv, "MODIFIED", object.clone());
            reply(StatusCode::OK, object)
        }
        _ => status_error(405, "MethodNotAllowed", "not served by the fake"),
    }
}

fn list_or_watch(
    state: &Arc<Mutex<State>>,
    namespace: Option<&str>,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let mut st = state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let selector = query.get("labelSelector").cloned();
    let watch = matches!(query.get("watch").map(String::as_str), Some("1" | "true"));
    if !watch {
        st.lists += 1;
        let items: Vec<Value> = st
            .objects
            .values()
            .filter(|o| matches(o, namespace, selector.as_deref()))
            .cloned()
            .collect();
        return reply(
            StatusCode::OK,
            json!({"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpointList",
                   "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
        );
    }
    st.watches += 1;
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let (tx, rx) = mpsc::unbounded_channel();
    if from <= st.compacted && from != 0 {
        let gone = event_line(
            "ERROR",
            &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "message": format!("too old resource version: {from}"), "reason": "Expired", "code": 410}),
        );
        let _ = tx.send(Ok(gone));
        drop(tx);
    } else {
        for (rv, kind, object) in &st.history {
            if *rv > from && matches(object, namespace, selector.as_deref()) {
                let _ = tx.send(Ok(event_line(kind, object)));
            }
        }
        let id = st.watches;
        if let Some(secs) = query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
        {
            // The stream ends after `timeoutSeconds`, as the API server's does.
            let state = Arc::clone(state);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(secs)).await;
                state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .watchers
                    .retain(|w| w.id != id);
            });
        }
        st.watchers.push(Watcher {
            id,
            namespace: namespace.map(str::to_string),
            selector,
            tx,
        });
    }
    let stream = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}
