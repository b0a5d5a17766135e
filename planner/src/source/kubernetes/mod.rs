//! The Kubernetes source: external-dns `DNSEndpoint` objects
//! (`externaldns.k8s.io/v1alpha1`) read from the API (kube-rs: list, then watch from
//! the list's resourceVersion; an expired watch, 410 Gone, lists again), each object
//! parsed by the shared manifest parser ([`super::dnsendpoint`]) and kept
//! last-good per object ([`objects`]); each object's result is written back to its
//! status ([`status`]).
//!
//! **Never delete on doubt.** Until every watched scope (all namespaces, or each
//! configured one) has completed its first list, the source is not ready
//! (`Snapshot::unready`) and the planner plans nothing
//! (`Engine::await_first_load`): an API it cannot reach only looks empty. A watch
//! error, an outage or a timeout keeps every accepted object and makes the source not
//! ready until a complete list succeeds again; records go only with their object: a
//! `DELETED` event, or an object absent from a complete list of its scope.
//!
//! - [`objects`]: what is in force per object (pure);
//! - [`status`]: `status.conditions` and `observedGeneration` from the records' states,
//!   written by server-side apply, rate-limited per object.
use crate::config::KubernetesSourceConfig;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use objects::{ObjectName, Objects};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Snapshot;

pub mod kinds;
pub mod objects;
pub mod status;

pub use objects::SOURCE_KIND;

/// Why the API cannot be used at all (before any request).
#[derive(Debug, thiserror::Error)]
pub enum KubeSourceError {
    #[error("kubernetes source: in-cluster configuration: {0}")]
    InCluster(#[from] kube::config::InClusterError),
    #[error("kubernetes source: kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("kubernetes source: api_server {0:?} is not a URL")]
    Url(String),
    #[error("kubernetes source: cannot build the API client: {0}")]
    Client(#[from] kube::Error),
}

/// The DNSEndpoint resource, without generated types.
pub fn dnsendpoint_resource() -> ApiResource {
    ApiResource {
        group: "externaldns.k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "externaldns.k8s.io/v1alpha1".into(),
        kind: "DNSEndpoint".into(),
        plural: "dnsendpoints".into(),
    }
}

/// A client for the API as `config` says: `api_server` (+ `token_file`, `ca_file`),
/// else `kubeconfig`, else the in-cluster service account.
pub async fn client(config: &KubernetesSourceConfig) -> Result<kube::Client, KubeSourceError> {
    let kube_config = if let Some(url) = &config.api_server {
        let uri: http::Uri = url.parse().map_err(|_| KubeSourceError::Url(url.clone()))?;
        let mut c = kube::Config::new(uri);
        c.root_cert_file = config.ca_file.clone();
        c.auth_info.token_file = config.token_file.as_ref().map(|p| p.display().to_string());
        c
    } else if let Some(path) = &config.kubeconfig {
        let err = |source| KubeSourceError::Kubeconfig {
            path: path.display().to_string(),
            source,
        };
        let kc = kube::config::Kubeconfig::read_from(path).map_err(err)?;
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(err)?
    } else {
        kube::Config::incluster()?
    };
    let mut kube_config = kube_config;
    // A list that hangs must end (and the source say so), not wait forever; a watch
    // has the watcher's own idle timeout.
    kube_config.connect_timeout = Some(Duration::from_secs(10));
    Ok(kube::Client::try_from(kube_config)?)
}

/// What one scope's watcher saw.
#[derive(Debug)]
enum Seen {
    /// A complete list of the scope.
    Listed(Option<String>, Vec<DynamicObject>),
    Applied(DynamicObject),
    Deleted(DynamicObject),
    /// The scope's watch broke; it lists again after a pause.
    Failed(Option<String>, String),
}

/// Desired state from DNSEndpoint objects in the Kubernetes API.
#[derive(Debug)]
pub struct KubernetesSource {
    config: KubernetesSourceConfig,
    /// What is in force, shared with the status writer.
    objects: Arc<Mutex<Objects>>,
    /// How long one watch request lasts before it is renewed; its idle timeout (a
    /// connection that died silently) is this plus 5 s.
    watch_timeout: u32,
}

impl KubernetesSource {
    pub fn new(config: KubernetesSourceConfig) -> KubernetesSource {
        KubernetesSource {
            config,
            objects: Arc::default(),
            watch_timeout: 290,
        }
    }

    /// Checks every endpoint against `zones` ([`crate::source::zones`]).
    pub fn with_zones(self, zones: crate::source::zones::ZoneCheck) -> KubernetesSource {
        self.objects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .set_zones(zones);
        self
    }

    /// Renews watches (and detects dead ones) after `secs` instead of 290 s: for tests.
    pub fn with_watch_timeout(mut self, secs: u32) -> KubernetesSource {
        self.watch_timeout = secs.max(1);
        self
    }

    /// The name this source's state goes under in the planner: its scope.
    pub fn store_key(&self) -> String {
        let mut key = format!("kubernetes:{}", self.config.namespaces.join(","));
        if let Some(s) = &self.config.label_selector {
            key.push('?');
            key.push_str(s);
        }
        key
    }

    /// The objects in force, for the status writer.
    pub fn objects(&self) -> Arc<Mutex<Objects>> {
        Arc::clone(&self.objects)
    }

    /// The scopes watched: every namespace (`None`), or each configured one.
    fn scopes(&self) -> Vec<Option<String>> {
        if self.config.namespaces.is_empty() {
            vec![None]
        } else {
            self.config.namespaces.iter().cloned().map(Some).collect()
        }
    }

    /// The snapshot before anything is listed: nothing, not ready.
    pub fn initial(&self) -> Snapshot {
        Snapshot {
            unready: self
                .scopes()
                .iter()
                .map(|s| format!("{}: waiting for the first complete list", scope_name(s)))
                .collect(),
            ..Snapshot::default()
        }
    }

    /// Lists and watches every scope with `client`, sending a snapshot on `tx` after
    /// each change (changes that arrive together make one snapshot), until `cancel`
    /// or the receiver is dropped.
    pub fn watch(
        self,
        client: kube::Client,
        tx: mpsc::Sender<Snapshot>,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        let (seen_tx, mut seen_rx) = mpsc::channel::<Seen>(256);
        let scopes = self.scopes();
        let mut wc = watcher::Config::default().timeout(self.watch_timeout);
        if let Some(s) = &self.config.label_selector {
            wc = wc.labels(s);
        }
        for scope in &scopes {
            let ar = dnsendpoint_resource();
            let api: Api<DynamicObject> = match scope {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
                None => Api::all_with(client.clone(), &ar),
            };
            tokio::spawn(watch_scope(
                api,
                scope.clone(),
                wc.clone(),
                seen_tx.clone(),
                cancel.clone(),
            ));
        }
        drop(seen_tx);
        tokio::spawn(async move {
            let mut progress = Progress::new(&scopes);
            loop {
                let first = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    s = seen_rx.recv() => match s { Some(s) => s, None => return },
                };
                // Whatever else has arrived goes into the same snapshot.
                let mut batch = vec![first];
                while let Ok(more) = seen_rx.try_recv() {
                    batch.push(more);
                }
                let snapshot = blocking(|| {
                    let mut objects = self
                        .objects
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    for seen in batch {
                        progress.take(&mut objects, seen);
                    }
                    objects.snapshot(progress.unready(objects.len()))
                });
                tracing::debug!(
                    records = snapshot.entries.len(),
                    errors = snapshot.errors.len(),
                    unready = ?snapshot.unready,
                    "kubernetes source changed"
                );
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    sent = tx.send(snapshot) => if sent.is_err() { return },
                }
            }
        })
    }
}

/// `f` off the runtime's workers where it has several (parsing a large list takes a
/// while); plain otherwise.
fn blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

fn scope_name(scope: &Option<String>) -> String {
    match scope {
        Some(ns) => format!("namespace {ns}"),
        None => "all namespaces".into(),
    }
}

/// Per scope: listed yet, and the error since the last complete list.
#[derive(Debug)]
struct Progress {
    scopes: Vec<(Option<String>, ScopeState)>,
}

#[derive(Debug, Clone, PartialEq)]
enum ScopeState {
    NeverListed(Option<String>),
    Listed,
    Failing(String),
}

impl Progress {
    fn new(scopes: &[Option<String>]) -> Progress {
        Progress {
            scopes: scopes
                .iter()
                .map(|s| (s.clone(), ScopeState::NeverListed(None)))
                .collect(),
        }
    }

    fn state(&mut self, scope: &Option<String>) -> Option<&mut ScopeState> {
        self.scopes
            .iter_mut()
            .find(|(s, _)| s == scope)
            .map(|(_, st)| st)
    }

    fn take(&mut self, objects: &mut Objects, seen: Seen) {
        match seen {
            Seen::Listed(scope, items) => {
                let listed = items.iter().filter_map(object_text).collect();
                objects.replace_scope(scope.as_deref(), listed);
                if let Some(st) = self.state(&scope) {
                    *st = ScopeState::Listed;
                }
            }
            Seen::Applied(obj) => {
                if let Some((name, generation, text)) = object_text(&obj) {
                    objects.apply(&name, generation, &text);
                }
            }
            Seen::Deleted(obj) => {
                if let Some((name, _, _)) = object_text(&obj) {
                    objects.delete(&name);
                }
            }
            Seen::Failed(scope, error) => {
                if let Some(st) = self.state(&scope) {
                    *st = match st {
                        ScopeState::NeverListed(_) => ScopeState::NeverListed(Some(error)),
                        _ => ScopeState::Failing(error),
                    };
                }
            }
        }
    }

    /// Why the source is not ready, one line per scope that is not.
    fn unready(&self, objects: usize) -> Vec<String> {
        self.scopes
            .iter()
            .filter_map(|(scope, st)| match st {
                ScopeState::Listed => None,
                ScopeState::NeverListed(None) => Some(format!(
                    "{}: waiting for the first complete list",
                    scope_name(scope)
                )),
                ScopeState::NeverListed(Some(e)) => Some(format!(
                    "{}: not listed yet: {e}",
                    scope_name(scope)
                )),
                ScopeState::Failing(e) => Some(format!(
                    "{}: {e}; keeping the last accepted records of {objects} object(s) until a complete list succeeds",
                    scope_name(scope)
                )),
            })
            .collect()
    }
}

/// `(namespace/name, generation, the text the parser reads)` of an object: its
/// identity and spec as JSON (valid YAML), without the metadata the parser does not
/// need (managed fields would only cost time).
fn object_text(obj: &DynamicObject) -> Option<(ObjectName, Option<i64>, String)> {
    let name = obj.metadata.name.as_deref()?;
    let namespace = obj.metadata.namespace.as_deref().unwrap_or("default");
    let mut doc = serde_json::json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1",
        "kind": "DNSEndpoint",
        "metadata": {"name": name, "namespace": namespace},
    });
    if let Some(spec) = obj.data.get("spec") {
        doc["spec"] = spec.clone();
    }
    Some((
        format!("{namespace}/{name}"),
        obj.metadata.generation,
        doc.to_string(),
    ))
}

/// Lists and watches one scope for ever: a complete list is sent whole; a broken
/// watch (an error event, 410 Gone, a dropped connection, a failed list) is reported
/// and the scope is listed again after a pause (1 s, doubling to 30 s), so that only a
/// complete list ever says which objects are gone.
async fn watch_scope(
    api: Api<DynamicObject>,
    scope: Option<String>,
    wc: watcher::Config,
    tx: mpsc::Sender<Seen>,
    cancel: CancellationToken,
) {
    let mut pause = Duration::from_secs(1);
    loop {
        let mut stream = watcher(api.clone(), wc.clone()).boxed();
        let mut buffer = Vec::new();
        let failure = loop {
            let event = tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                e = stream.next() => e,
            };
            let seen = match event {
                None => break "the watch stream ended".to_string(),
                Some(Ok(watcher::Event::Init)) => {
                    buffer.clear();
                    continue;
                }
                Some(Ok(watcher::Event::InitApply(obj))) => {
                    buffer.push(obj);
                    continue;
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    pause = Duration::from_secs(1);
                    Seen::Listed(scope.clone(), std::mem::take(&mut buffer))
                }
                Some(Ok(watcher::Event::Apply(obj))) => Seen::Applied(obj),
                Some(Ok(watcher::Event::Delete(obj))) => Seen::Deleted(obj),
                Some(Err(e)) => break describe(&e),
            };
            if tx.send(seen).await.is_err() {
                return;
            }
        };
        tracing::warn!(scope = %scope_name(&scope), error = %failure, retry_in = ?pause, "Kubernetes watch failed; keeping the accepted DNSEndpoints and listing again.");
        if tx.send(Seen::Failed(scope.clone(), failure)).await.is_err() {
            return;
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

/// A watcher error in words, its cause included (kube's own message stops at "failed
/// to perform initial object list").
fn describe(e: &watcher::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests;
