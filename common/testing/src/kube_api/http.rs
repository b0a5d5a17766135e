//! The HTTP side: paths as a real API server lays them out, to the store.
use super::discovery;
use super::events;
use super::refusal::{Refusal, reply};
use super::resource::Resource;
use super::selector::{FieldSelector, LabelSelector, query_map};
use super::store::{Key, State, StatusWrite, event_line, gone_status, key, shape};
use axum::body::{Body, Bytes};
use axum::http::{Method, Request, Response, StatusCode};
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;

pub type Shared = Arc<Mutex<State>>;

pub fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a request's path names.
struct Target<'a> {
    resource: Resource,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    subresource: Option<&'a str>,
}

/// Splits `/api/v1/…` or `/apis/{group}/{version}/…` into the resource and the rest.
fn target<'a>(parts: &[&'a str]) -> Option<Result<Target<'a>, Refusal>> {
    let (group, version, rest) = match parts {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(*n), None),
        [p, n, s] => (*p, Some(*n), Some(*s)),
        _ => return None,
    };
    let resource = Resource::find(group, version, plural)?;
    if namespace.is_some() && !resource.info().namespaced {
        return Some(Err(Refusal::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )));
    }
    Some(Ok(Target {
        resource,
        namespace,
        name,
        subresource,
    }))
}

pub async fn handle(state: Shared, req: Request<Body>) -> Response<Body> {
    // Hanging: no answer while it lasts (bounded, so a forgotten switch cannot keep a
    // test alive for ever).
    for _ in 0..600 {
        if !lock(&state).hanging {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if lock(&state).failing {
        return Refusal::new(500, "InternalError", "the fake API server is failing").response();
    }
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or("").to_string();
    let query = query_map(&raw_query);
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let method = req.method().clone();
    if method == Method::GET
        && let Some(doc) = discovery::document(&lock(&state), &parts)
    {
        return reply(StatusCode::OK, &doc);
    }
    let t = match target(&parts) {
        Some(Ok(t)) => t,
        Some(Err(r)) => return r.response(),
        None => {
            return Refusal::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
            .response();
        }
    };
    if lock(&state).failing_resources.contains(&t.resource) {
        return Refusal::new(
            500,
            "InternalError",
            &format!("the fake API server is failing for {}", t.resource),
        )
        .response();
    }
    if lock(&state).absent.contains(&t.resource) {
        return Refusal::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .response();
    }
    let table = req
        .headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"));
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = if matches!(method, Method::POST | Method::PATCH | Method::PUT) {
        let Ok(bytes) = axum::body::to_bytes(req.into_body(), 16 << 20).await else {
            return Refusal::new(400, "BadRequest", "unreadable body").response();
        };
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v,
            Err(e) => {
                return Refusal::new(400, "BadRequest", &format!("the body is not JSON: {e}"))
                    .response();
            }
        }
    } else {
        Value::Null
    };
    let r = t.resource;
    let result = match (&method, t.name, t.subresource) {
        (&Method::GET, None, None) => {
            return list_or_watch(&state, r, t.namespace, &query, table);
        }
        (&Method::GET, Some(name), None) => get(&state, r, t.namespace, name),
        (&Method::POST, None, None) => create(&state, r, t.namespace, body),
        (&Method::PATCH, Some(name), None) if r.storage() == Resource::Event => {
            patch_event(&state, r, t.namespace, name, &body)
        }
        (&Method::PATCH, Some(name), Some("status")) => {
            let write = StatusWrite {
                resource: r,
                namespace: t.namespace.unwrap_or("").to_string(),
                name: name.to_string(),
                content_type,
                query: raw_query,
                body,
            };
            patch_status(&state, write)
        }
        _ => Err(Refusal::new(
            405,
            "MethodNotAllowed",
            &format!("{method} {path} is not served by the fake"),
        )),
    };
    match result {
        Ok((code, v)) => reply(code, &v),
        Err(r) => r.response(),
    }
}

fn check_forbidden(st: &State, r: Resource, verb: &str, ns: Option<&str>) -> Result<(), Refusal> {
    if st
        .forbidden
        .get(&r)
        .is_some_and(|verbs| verbs.is_empty() || verbs.iter().any(|v| v == verb))
    {
        return Err(Refusal::forbidden(r, verb, ns));
    }
    Ok(())
}

fn get(
    state: &Shared,
    r: Resource,
    ns: Option<&str>,
    name: &str,
) -> Result<(StatusCode, Value), Refusal> {
    let st = lock(state);
    check_forbidden(&st, r, "get", ns)?;
    let o = st
        .get(r, &key(r, ns, name))
        .ok_or_else(|| Refusal::not_found(r, name))?;
    Ok((StatusCode::OK, (*shape(r, o)).clone()))
}

fn create(
    state: &Shared,
    r: Resource,
    ns: Option<&str>,
    mut body: Value,
) -> Result<(StatusCode, Value), Refusal> {
    let mut st = lock(state);
    check_forbidden(&st, r, "create", ns)?;
    let meta = &mut body["metadata"];
    if let Some(ns) = ns {
        match meta["namespace"].as_str() {
            None | Some("") => meta["namespace"] = ns.into(),
            Some(other) if other != ns => {
                return Err(Refusal::new(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            Some(_) => {}
        }
    }
    let mut name = meta["name"].as_str().unwrap_or("").to_string();
    if name.is_empty()
        && let Some(prefix) = meta["generateName"].as_str().filter(|p| !p.is_empty())
    {
        name = st.generated_name(r, ns, prefix);
        meta["name"] = name.clone().into();
    }
    if !name.is_empty() && st.get(r, &key(r, ns, &name)).is_some() {
        return Err(Refusal::new(
            409,
            "AlreadyExists",
            &format!("{} \"{name}\" already exists", r.group_resource()),
        ));
    }
    if r.storage() == Resource::Event {
        let core = if r == Resource::EventV1 {
            events::v1_to_core(&body)
        } else {
            body.clone()
        };
        let errs = events::validate(&core, None, r == Resource::EventV1);
        if !errs.is_empty() {
            return Err(Refusal::invalid(r, &name, errs));
        }
    }
    let stored = st.put(r, body)?;
    Ok((StatusCode::CREATED, (*shape(r, &stored)).clone()))
}

fn patch_event(
    state: &Shared,
    r: Resource,
    ns: Option<&str>,
    name: &str,
    patch: &Value,
) -> Result<(StatusCode, Value), Refusal> {
    let mut st = lock(state);
    check_forbidden(&st, r, "patch", ns)?;
    let k = key(r, ns, name);
    let old = st
        .get(r, &k)
        .cloned()
        .ok_or_else(|| Refusal::not_found(r, name))?;
    let mut shaped = (*shape(r, &old)).clone();
    events::merge_patch(&mut shaped, patch);
    let mut core = if r == Resource::EventV1 {
        events::v1_to_core(&shaped)
    } else {
        shaped
    };
    // What identifies the object cannot be patched away.
    core["metadata"]["name"] = name.into();
    core["metadata"]["namespace"] = k.0.clone().into();
    core["metadata"]["uid"] = old["metadata"]["uid"].clone();
    core["metadata"]["creationTimestamp"] = old["metadata"]["creationTimestamp"].clone();
    core["apiVersion"] = "v1".into();
    core["kind"] = "Event".into();
    let errs = events::validate(&core, Some(&old), r == Resource::EventV1);
    if !errs.is_empty() {
        return Err(Refusal::invalid(r, name, errs));
    }
    let stored = st.replace(r, k, core);
    Ok((StatusCode::OK, (*shape(r, &stored)).clone()))
}

fn patch_status(state: &Shared, write: StatusWrite) -> Result<(StatusCode, Value), Refusal> {
    let mut st = lock(state);
    let r = write.resource;
    check_forbidden(&st, r, "patch", Some(&write.namespace))?;
    let crd = st.table(r).crd.clone();
    if crd.as_ref().is_some_and(|c| !c.status_subresource) || r.storage() == Resource::Event {
        return Err(Refusal::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let k = key(r, Some(&write.namespace), &write.name);
    let mut object = st
        .get(r, &k)
        .map(|o| (**o).clone())
        .ok_or_else(|| Refusal::not_found(r, &write.name))?;
    // Only the status is taken from a status write; the API server's pruning then
    // drops what its schema does not declare.
    object["status"] = write.body["status"].clone();
    if let Some(crd) = &crd {
        crd.prune(&mut object);
    }
    st.status_writes.push(write);
    let stored = st.replace(r, k, object);
    Ok((StatusCode::OK, (*stored).clone()))
}

/// A continue token as the API server's: base64 of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":"ns/name\u0000"}`.
fn continue_token(rv: u64, last: &Key) -> String {
    let start = format!("{}/{}\u{0}", last.0, last.1);
    let json = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string();
    base64::engine::general_purpose::STANDARD.encode(json)
}

fn read_continue(token: &str) -> Option<(u64, Key)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(token)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    let start = v["start"].as_str()?.strip_suffix('\u{0}')?;
    let (ns, name) = start.split_once('/')?;
    Some((v["rv"].as_u64()?, (ns.to_string(), name.to_string())))
}

fn list_or_watch(
    state: &Shared,
    r: Resource,
    namespace: Option<&str>,
    query: &BTreeMap<String, String>,
    table: bool,
) -> Response<Body> {
    let mut st = lock(state);
    let watch = matches!(query.get("watch").map(String::as_str), Some("1" | "true"));
    let verb = if watch { "watch" } else { "list" };
    let counts = st.counts.entry(r).or_default();
    if watch {
        counts.1 += 1;
    } else {
        counts.0 += 1;
    }
    if let Err(e) = check_forbidden(&st, r, verb, namespace) {
        return e.response();
    }
    let labels = match LabelSelector::parse(query.get("labelSelector").map_or("", |s| s)) {
        Ok(s) => s,
        Err(e) => return Refusal::new(400, "BadRequest", &e).response(),
    };
    let fields = match FieldSelector::parse(r, query.get("fieldSelector").map_or("", |s| s)) {
        Ok(s) => s,
        Err(e) => return Refusal::new(400, "BadRequest", &e).response(),
    };
    if !watch {
        return list(&st, r, namespace, &labels, &fields, query, table);
    }
    let from: u64 = query
        .get("resourceVersion")
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let initial_events = query.get("sendInitialEvents").map(String::as_str) == Some("true");
    let (tx, rx) = mpsc::unbounded_channel();
    if from <= st.compacted && from != 0 && !initial_events {
        let _ = tx.send(Ok(event_line(
            "ERROR",
            &gone_status(&format!(
                "too old resource version: {from} ({})",
                st.compacted
            )),
        )));
        drop(tx);
    } else {
        let scope = |o: &Value| {
            super::store::matches_scope(o, namespace) && labels.matches(o) && fields.matches(o)
        };
        if from == 0 || initial_events {
            // No resourceVersion: the current state as ADDED events first, as the API
            // server's watch cache does.
            let (items, _) = st.page(r, namespace, &labels, &fields, None, 0);
            for o in items {
                let _ = tx.send(Ok(event_line("ADDED", &o)));
            }
            if initial_events {
                let mark = json!({"kind": r.info().kind, "apiVersion": r.api_version(),
                    "metadata": {"resourceVersion": st.rv.to_string(),
                                 "annotations": {"k8s.io/initial-events-end": "true"}}});
                let _ = tx.send(Ok(event_line("BOOKMARK", &mark)));
            }
        } else {
            for c in st.since(r, from) {
                let shaped = shape(r, &c.object);
                if scope(&shaped) {
                    let _ = tx.send(Ok(event_line(c.kind, &shaped)));
                }
            }
        }
        let id = st.next_id();
        if let Some(secs) = query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
        {
            // The stream ends after `timeoutSeconds`, as the API server's does.
            let state = Arc::clone(state);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(secs)).await;
                lock(&state).watchers.retain(|w| w.id != id);
            });
        }
        st.watchers.push(super::store::Watcher {
            id,
            resource: r,
            namespace: namespace.map(str::to_string),
            labels,
            fields,
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

/// A list (one page of it with `limit`), written out without building a whole JSON
/// tree: 25,000 objects are listed in pages of 500 by kube's watcher.
fn list(
    st: &State,
    r: Resource,
    namespace: Option<&str>,
    labels: &LabelSelector,
    fields: &FieldSelector,
    query: &BTreeMap<String, String>,
    table: bool,
) -> Response<Body> {
    let limit: usize = query.get("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
    let (rv, after) = match query.get("continue").filter(|c| !c.is_empty()) {
        None => (st.rv, None),
        Some(token) => match read_continue(token) {
            None => {
                return Refusal::new(400, "BadRequest", "continue key is not valid").response();
            }
            Some((rv, _)) if rv <= st.compacted => {
                return Refusal::new(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                )
                .response();
            }
            Some((rv, key)) => (rv, Some(key)),
        },
    };
    let (items, last) = st.page(r, namespace, labels, fields, after.as_ref(), limit);
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(last) = &last {
        meta["continue"] = continue_token(rv, last).into();
    }
    if table && r == Resource::Event {
        return reply(StatusCode::OK, &super::table::events(meta, &items));
    }
    let head = json!({"apiVersion": r.api_version(), "kind": format!("{}List", r.info().kind),
                      "metadata": meta});
    let mut out = head.to_string().into_bytes();
    out.pop(); // the closing brace
    out.extend_from_slice(b",\"items\":[");
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if r.is_builtin() {
            let _ = serde_json::to_writer(&mut out, &WithoutTypeMeta(o));
        } else {
            let _ = serde_json::to_writer(&mut out, &**o);
        }
    }
    out.extend_from_slice(b"]}");
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from(Bytes::from(out)))
        .unwrap_or_default()
}

/// A built-in kind's list item: its fields without `apiVersion` and `kind` (a real
/// API server's typed lists leave them out; only the list says the kind).
struct WithoutTypeMeta<'a>(&'a Value);

impl serde::Serialize for WithoutTypeMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(m) = self.0 else {
            return self.0.serialize(s);
        };
        let mut map = s.serialize_map(None)?;
        for (k, v) in m {
            if k != "apiVersion" && k != "kind" {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}
