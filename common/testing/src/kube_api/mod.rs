//! A fake Kubernetes API server on 127.0.0.1: there is no kube-apiserver on the test
//! machines, and what the Kubernetes sources must survive (an expired watch, an
//! outage, a hang, a dropped connection, a 403) is easiest to cause in a fake.
//!
//! **Resources** ([`Resource`], [`resource`]): DNSEndpoint
//! (`externaldns.k8s.io/v1alpha1`), Service, Pod, Node (cluster-scoped) and Event in
//! the core group (`/api/v1/…`), EndpointSlice (`discovery.k8s.io/v1`), Ingress
//! (`networking.k8s.io/v1`), the Gateway API's Gateway, HTTPRoute, GRPCRoute,
//! TLSRoute, TCPRoute and UDPRoute (`gateway.networking.k8s.io/v1`, all standard
//! channel in the vendored release, see `crds/gateway-api/README.md`) and Event again
//! as `events.k8s.io/v1` (one storage, two shapes). Each at the paths a real API
//! server uses: `{prefix}/{plural}` (all namespaces, or cluster-scoped) and
//! `{prefix}/namespaces/{ns}/{plural}`.
//!
//! **Reading** (every resource):
//! - `GET` a list with `metadata.resourceVersion`, filtered by `labelSelector`
//!   (`k=v`, `k!=v`, `k in (…)`, `k notin (…)`, `k`, `!k`) and `fieldSelector` (the
//!   fields the real server supports for that resource, others refused with 400),
//!   paged by `limit` and `continue` as kube's watcher pages (a continue token older
//!   than the last [`FakeKubeApi::expire`] gets 410; later pages show the objects as
//!   they are then, and the watch from the list's resourceVersion replays what changed
//!   meanwhile, so a client converges as with a real server);
//! - the same with `watch=1|true`: a chunked stream of JSON lines (`ADDED`,
//!   `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`); from `resourceVersion=R` every change
//!   after `R` then live ones; without one (or `0`) the current objects as `ADDED`
//!   first; `sendInitialEvents=true` ends those with the `k8s.io/initial-events-end`
//!   bookmark; `R` older than the last [`FakeKubeApi::expire`] gets an `ERROR` event
//!   with code 410 (Gone); `timeoutSeconds` ends the stream. One resourceVersion
//!   counter serves every resource, as etcd's does;
//! - `GET` one object (`…/{plural}/{name}`); discovery (`/version`, `/api`,
//!   `/api/v1`, `/apis`, `/apis/{group}/{version}`) so that the real `kubectl` works
//!   against the fake ([`crate::kubectl`]).
//!
//! **Writing**: `PATCH …/{plural}/{name}/status` (server-side apply of the status,
//! recorded in [`FakeKubeApi::status_writes`]); `POST` of any resource (events
//! validated as the API server validates them, see [`events`]); `PATCH` of an Event
//! (merge or strategic merge: `count`, `lastTimestamp`, `message`, or a
//! `events.k8s.io/v1` `series`). What is stored is read with [`FakeKubeApi::events`]
//! and [`FakeKubeApi::get_object`].
//!
//! **Schemas.** With a CRD a resource's objects are pruned, defaulted and validated
//! as a real API server does ([`crate::crd`]): 422 Invalid with the field paths.
//! DNSEndpoint has one when started with [`FakeKubeApi::start_with_crd`] (dnsplane's,
//! from `deploy/k8s`, is [`crd::DNSPLANE_CRD`](crate::crd::DNSPLANE_CRD)); without it
//! everything is kept. Built-in kinds (Service, Ingress, …) are kept as given.
//!
//! **Printing.** Events are answered as a `Table` when kubectl asks for one
//! ([`table`]), so `kubectl get events` prints the columns it prints against a
//! cluster; `kubectl describe service|ingress|httproute NAME` works from discovery,
//! the object and the Events' field selector.
//!
//! **Fixtures** ([`fixtures`]): Services of every type, EndpointSlices, Pods, Nodes,
//! Ingresses, Gateways and routes as a cluster holds them once controllers wrote
//! their statuses.
//!
//! **Scale**: objects are shared (`Arc`) between the store, the history and the
//! lists; a list page is a range of an ordered map and is written without building a
//! JSON tree; a watch resumes by a binary search of its resource's history; so 25,000
//! objects are seeded ([`FakeKubeApi::apply_objects`]) and listed in pages of 500 in
//! linear time.
//!
//! **Tests** change objects with [`FakeKubeApi::apply_object`] (create or replace),
//! [`FakeKubeApi::apply_objects`] (many at once, for benchmarks),
//! [`FakeKubeApi::delete_object`], and for DNSEndpoints [`FakeKubeApi::apply`] and
//! [`FakeKubeApi::delete`]; they break the server with [`FakeKubeApi::set_failing`]
//! (500s; [`FakeKubeApi::set_failing_for`] for one resource), [`FakeKubeApi::set_hanging`] (no answer), [`FakeKubeApi::drop_watches`]
//! (connections cut mid-stream), [`FakeKubeApi::forbid`] (403 for one resource, with
//! the Status RBAC answers) and [`FakeKubeApi::uninstall`] (a CRD not installed: 404).
use crate::crd::Crd;
use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

pub mod discovery;
pub mod events;
pub mod fixtures;
mod http;
pub mod refusal;
pub mod resource;
pub mod selector;
mod store;
pub mod table;

pub use refusal::Refusal;
pub use resource::{Resource, ResourceInfo};
pub use selector::percent_decode;
pub use store::StatusWrite;
use store::{State, event_line};

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
    /// stores DNSEndpoints and statuses as they are written.
    pub async fn start() -> FakeKubeApi {
        Self::serve(None).await
    }

    /// [`start`](Self::start), pruning every DNSEndpoint and status written by `crd`'s
    /// schema, as an API server with that CRD installed does. `crd` must be the
    /// DNSEndpoint CRD (`externaldns.k8s.io/v1alpha1`, `dnsendpoints`).
    pub async fn start_with_crd(crd: Crd) -> FakeKubeApi {
        let i = Resource::DnsEndpoint.info();
        assert_eq!(
            (
                crd.group.as_str(),
                crd.version.as_str(),
                crd.plural.as_str()
            ),
            (i.group, i.version, i.plural),
            "start_with_crd takes the DNSEndpoint CRD"
        );
        Self::serve(Some(crd)).await
    }

    async fn serve(crd: Option<Crd>) -> FakeKubeApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake API server");
        let addr = listener.local_addr().expect("local addr");
        let mut state = State {
            rv: 1,
            ..State::default()
        };
        state.table(Resource::DnsEndpoint).crd = crd.map(Arc::new);
        for crd in crate::crd::gateway_api() {
            let r = Resource::find(&crd.group, &crd.version, &crd.plural)
                .expect("the fake serves every vendored Gateway API CRD");
            state.table(r).crd = Some(Arc::clone(crd));
        }
        let state = Arc::new(Mutex::new(state));
        let st = Arc::clone(&state);
        let app = axum::Router::new().fallback(move |req: Request<Body>| {
            let st = Arc::clone(&st);
            async move { http::handle(st, req).await }
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
        http::lock(&self.state)
    }

    /// Creates or replaces an object of `resource` (its whole JSON, status included;
    /// `metadata.namespace` defaults to `default`), filling in what the API server
    /// fills in (apiVersion, kind, uid, creationTimestamp, generation moved when the
    /// spec changes, resourceVersion), pruned, defaulted and validated by the
    /// resource's CRD if it has one. Emits ADDED or MODIFIED; returns the object as
    /// stored. Panics with the API server's message when it would refuse it (see
    /// [`try_apply_object`](Self::try_apply_object)).
    pub fn apply_object(&self, resource: Resource, object: Value) -> Value {
        self.try_apply_object(resource, object)
            .unwrap_or_else(|e| panic!("the fake API server refuses the {resource}: {e}"))
    }

    /// [`apply_object`](Self::apply_object), the refusal (422 Invalid and its causes)
    /// returned.
    pub fn try_apply_object(&self, resource: Resource, object: Value) -> Result<Value, Refusal> {
        let stored = self.lock().put(resource, object)?;
        Ok((*store::shape(resource, &stored)).clone())
    }

    /// Many [`apply_object`](Self::apply_object)s under one lock: for seeding
    /// benchmarks with tens of thousands of objects.
    pub fn apply_objects(&self, resource: Resource, objects: impl IntoIterator<Item = Value>) {
        let mut st = self.lock();
        for o in objects {
            if let Err(e) = st.put(resource, o) {
                panic!("the fake API server refuses the {resource}: {e}");
            }
        }
    }

    /// Deletes `namespace/name` (`namespace` is `""` for a cluster-scoped one) with a
    /// DELETED event; false if it did not exist.
    pub fn delete_object(&self, resource: Resource, namespace: &str, name: &str) -> bool {
        self.lock()
            .delete(resource, &(namespace.into(), name.into()), false)
            .is_some()
    }

    /// The object as stored, in `resource`'s shape.
    pub fn get_object(&self, resource: Resource, namespace: &str, name: &str) -> Option<Value> {
        let st = self.lock();
        let o = st.get(resource, &(namespace.into(), name.into()))?;
        Some((*store::shape(resource, o)).clone())
    }

    /// Every object of `resource`, in the order lists give them.
    pub fn objects(&self, resource: Resource) -> Vec<Value> {
        let st = self.lock();
        let all = selector::LabelSelector::default();
        let fields = selector::FieldSelector::default();
        let (items, _) = st.page(resource, None, &all, &fields, None, 0);
        items.into_iter().map(|o| (*o).clone()).collect()
    }

    /// Every Event stored, in their core `v1` shape (`involvedObject`, `message`,
    /// `count`…; an Event written as `events.k8s.io/v1` converted), in list order.
    pub fn events(&self) -> Vec<Value> {
        self.objects(Resource::Event)
    }

    /// Answers 403 Forbidden (the Status RBAC gives a service account without the
    /// verb) to every request for `resource` (get, list, watch, create, patch); open
    /// watches stay open, as they do when a role is removed.
    pub fn forbid(&self, resource: Resource) {
        self.lock().forbidden.insert(resource, Vec::new());
    }

    /// [`forbid`](Self::forbid) for these verbs only (`"watch"`: a role that lists
    /// but does not watch; `"patch"` of Events: one that creates but cannot update).
    pub fn forbid_verbs(&self, resource: Resource, verbs: &[&str]) {
        let verbs = verbs.iter().map(|v| v.to_string()).collect();
        self.lock().forbidden.insert(resource, verbs);
    }

    /// Undoes [`forbid`](Self::forbid).
    pub fn allow(&self, resource: Resource) {
        self.lock().forbidden.remove(&resource);
    }

    /// Makes `resource` absent, as a CRD that is not installed: 404 for its paths,
    /// missing from discovery. Open watches of it are cut.
    pub fn uninstall(&self, resource: Resource) {
        let mut st = self.lock();
        st.absent.insert(resource);
        st.watchers.retain(|w| w.resource != resource);
    }

    /// Undoes [`uninstall`](Self::uninstall): the CRD installed (again).
    pub fn install(&self, resource: Resource) {
        self.lock().absent.remove(&resource);
    }

    /// (lists, watches) of `resource` served so far (403s included).
    pub fn requests_of(&self, resource: Resource) -> (usize, usize) {
        self.lock()
            .counts
            .get(&resource)
            .copied()
            .unwrap_or_default()
    }

    /// (lists, watches) served so far, all resources together.
    pub fn requests(&self) -> (usize, usize) {
        self.lock()
            .counts
            .values()
            .fold((0, 0), |(l, w), (a, b)| (l + a, w + b))
    }

    /// Creates or updates the DNSEndpoint `namespace/name` with `labels` and
    /// `endpoints` (the `spec.endpoints` list); a changed spec moves its generation,
    /// as the API server's does. Emits ADDED or MODIFIED.
    pub fn apply(&self, namespace: &str, name: &str, labels: &[(&str, &str)], endpoints: Value) {
        self.apply_spec(namespace, name, labels, json!({ "endpoints": endpoints }));
    }

    /// [`apply`](Self::apply) with a whole `spec` (even a broken one).
    pub fn apply_spec(&self, namespace: &str, name: &str, labels: &[(&str, &str)], spec: Value) {
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect();
        let mut st = self.lock();
        let key = (namespace.to_string(), name.to_string());
        let mut object = match st.get(Resource::DnsEndpoint, &key) {
            Some(old) => (**old).clone(),
            None => json!({"metadata": {"name": name, "namespace": namespace}}),
        };
        object["spec"] = spec;
        object["metadata"]["labels"] = Value::Object(labels);
        if let Err(e) = st.put(Resource::DnsEndpoint, object) {
            panic!("the fake API server refuses the DNSEndpoint: {e}");
        }
    }

    /// Deletes the DNSEndpoint `namespace/name` (a DELETED event); false if it did
    /// not exist.
    pub fn delete(&self, namespace: &str, name: &str) -> bool {
        self.delete_object(Resource::DnsEndpoint, namespace, name)
    }

    /// Deletes the DNSEndpoint `namespace/name` without telling any watch: only a
    /// relist can show it (the case of an object deleted while a client was away).
    pub fn delete_quietly(&self, namespace: &str, name: &str) {
        self.lock().delete(
            Resource::DnsEndpoint,
            &(namespace.into(), name.into()),
            true,
        );
    }

    /// Compacts history: every open watch gets `ERROR` 410 Gone and ends, and a watch
    /// (or a list's continue token) from any resourceVersion seen so far gets the same.
    pub fn expire(&self) {
        self.lock().expire();
    }

    /// Sends a BOOKMARK at the current resourceVersion to every open watch.
    pub fn bookmark(&self) {
        let mut st = self.lock();
        let rv = st.rv.to_string();
        st.watchers.retain(|w| {
            let mark = json!({"kind": w.resource.info().kind, "apiVersion": w.resource.api_version(),
                              "metadata": {"resourceVersion": rv}});
            w.tx.send(Ok(event_line("BOOKMARK", &mark))).is_ok()
        });
    }

    /// While on, every request is answered 500 and open watches are cut.
    pub fn set_failing(&self, on: bool) {
        let mut st = self.lock();
        st.failing = on;
        if on {
            st.cut();
        }
    }

    /// While on, requests get no answer (until it is turned off) and open watches are
    /// cut.
    pub fn set_hanging(&self, on: bool) {
        let mut st = self.lock();
        st.hanging = on;
        if on {
            st.cut();
        }
    }

    /// [`set_failing`](Self::set_failing) for one resource (its requests answered
    /// 500, its open watches cut): one kind's outage while the others are served.
    pub fn set_failing_for(&self, resource: Resource, on: bool) {
        let mut st = self.lock();
        if on {
            st.failing_resources.insert(resource);
            st.cut_where(|w| w.resource == resource);
        } else {
            st.failing_resources.remove(&resource);
        }
    }

    /// Deletes `namespace/name` of `resource` without telling any watch (see
    /// [`delete_quietly`](Self::delete_quietly)); false if it did not exist.
    pub fn delete_object_quietly(&self, resource: Resource, namespace: &str, name: &str) -> bool {
        self.lock()
            .delete(resource, &(namespace.into(), name.into()), true)
            .is_some()
    }

    /// Cuts every open watch's connection mid-stream.
    pub fn drop_watches(&self) {
        self.lock().cut();
    }

    /// Every status write received, in order.
    pub fn status_writes(&self) -> Vec<StatusWrite> {
        self.lock().status_writes.clone()
    }

    /// The DNSEndpoint as stored (its status included).
    pub fn object(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get_object(Resource::DnsEndpoint, namespace, name)
    }

    /// Open watch streams (all resources).
    pub fn open_watches(&self) -> usize {
        let mut st = self.lock();
        st.watchers.retain(|w| !w.tx.is_closed());
        st.watchers.len()
    }
}

#[cfg(test)]
mod tests;
