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
use kinds::Kind;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use objects::{ObjectName, Objects};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use translated::{Dependency, Translated};
use watch::{Feed, Progress, Seen, Watch};

use super::Snapshot;

pub mod kinds;
pub mod metrics;
pub mod notify;
pub mod objects;
pub mod settings;
pub mod status;
pub mod token;
pub mod translated;
pub mod uid;
pub mod watch;

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
    #[error("kubernetes source: token_file {path}: {problem}")]
    TokenFile { path: String, problem: String },
}

/// The DNSEndpoint resource, without generated types.
pub fn dnsendpoint_resource() -> ApiResource {
    Feed::Kind(Kind::DnsEndpoint).resource()
}

/// A client for the API as `config` says: `api_server` (+ `token_file`, `ca_file`),
/// else `kubeconfig`, else the in-cluster service account.
pub async fn client(config: &KubernetesSourceConfig) -> Result<kube::Client, KubeSourceError> {
    let mut bearer = None;
    let kube_config = if let Some(url) = &config.api_server {
        let uri: http::Uri = url.parse().map_err(|_| KubeSourceError::Url(url.clone()))?;
        let mut c = kube::Config::new(uri);
        c.root_cert_file = config.ca_file.clone();
        // Read here, trimmed ([`token`]), not by kube.
        if let Some(path) = &config.token_file {
            bearer = Some(Arc::new(token::bearer_file(path)?));
        }
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
    let builder = kube::client::ClientBuilder::try_from(kube_config)?;
    Ok(match bearer {
        Some(file) => builder.with_layer(&token::layer(file)).build(),
        None => builder.build(),
    })
}

/// Desired state from objects in the Kubernetes API: DNSEndpoints, and the kinds
/// translated to endpoints ([`kinds`]).
#[derive(Debug)]
pub struct KubernetesSource {
    config: KubernetesSourceConfig,
    /// The DNSEndpoints in force, shared with the status writer.
    objects: Arc<Mutex<Objects>>,
    /// The translated kinds in force, shared with the events writer.
    translated: Arc<Mutex<Translated>>,
    /// Every watch's progress, shared with status.
    parts: crate::source::SourceParts,
    /// How long one watch request lasts before it is renewed; its idle timeout (a
    /// connection that died silently) is this plus 5 s.
    watch_timeout: u32,
}

impl KubernetesSource {
    pub fn new(config: KubernetesSourceConfig) -> KubernetesSource {
        let translated = Translated::new(settings::options(&config), config.target_loss_grace);
        KubernetesSource {
            config,
            objects: Arc::default(),
            translated: Arc::new(Mutex::new(translated)),
            parts: Arc::default(),
            watch_timeout: 290,
        }
    }

    /// Checks every endpoint against `zones` ([`crate::source::zones`]).
    pub fn with_zones(self, zones: crate::source::zones::ZoneCheck) -> KubernetesSource {
        lock(&self.translated).set_zones(zones.clone());
        lock(&self.objects).set_zones(zones);
        self
    }

    /// Renews watches (and detects dead ones) after `secs` instead of 290 s: for tests.
    pub fn with_watch_timeout(mut self, secs: u32) -> KubernetesSource {
        self.watch_timeout = secs.max(1);
        self
    }

    /// The name this source's state goes under in the planner: its scope (and its kinds
    /// when they are not the default DNSEndpoint alone, so that an existing planner's
    /// state keeps its name).
    pub fn store_key(&self) -> String {
        store_key(&self.config)
    }

    /// The DNSEndpoints in force, for the status writer.
    pub fn objects(&self) -> Arc<Mutex<Objects>> {
        Arc::clone(&self.objects)
    }

    /// The translated objects in force, for the events writer.
    pub fn translated(&self) -> Arc<Mutex<Translated>> {
        Arc::clone(&self.translated)
    }

    /// Each watch (kind or dependency, scope): listed, and its error: for status.
    pub fn parts(&self) -> crate::source::SourceParts {
        Arc::clone(&self.parts)
    }

    /// The namespaces watched: every namespace (`None`), or each configured one.
    fn scopes(&self) -> Vec<Option<String>> {
        if self.config.namespaces.is_empty() {
            vec![None]
        } else {
            self.config.namespaces.iter().cloned().map(Some).collect()
        }
    }

    /// Every watch: each kind in each scope, then what their records depend on (Nodes,
    /// Namespaces and Gateways cluster-wide: a route may attach to a Gateway of another
    /// namespace, and the gateway filters apply in the translation, where a Gateway
    /// filtered out is told apart from one that is missing).
    pub fn watches(&self) -> Vec<Watch> {
        let kinds = settings::kinds(&self.config);
        let mut watches = Vec::new();
        for kind in &kinds {
            for scope in self.scopes() {
                watches.push(Watch {
                    feed: Feed::Kind(*kind),
                    scope,
                });
            }
        }
        for dep in Dependency::needed_by(&kinds) {
            let scopes = match dep {
                Dependency::Node | Dependency::Namespace | Dependency::Gateway => vec![None],
                Dependency::EndpointSlice | Dependency::Pod => self.scopes(),
            };
            for scope in scopes {
                watches.push(Watch {
                    feed: Feed::Dependency(dep),
                    scope,
                });
            }
        }
        watches
    }

    /// The snapshot before anything is listed: nothing, not ready.
    pub fn initial(&self) -> Snapshot {
        let progress = Progress::new(&self.watches());
        *lock(&self.parts) = progress.parts();
        Snapshot {
            unready: progress.unready(0),
            ..Snapshot::default()
        }
    }

    /// Lists and watches every feed in every scope with `client`, sending a snapshot on
    /// `tx` after each change (changes that arrive together make one snapshot), and
    /// when a load balancer's grace ends, until `cancel` or the receiver is dropped.
    ///
    /// A snapshot holds every record of the source: one is built only once `tx` has
    /// room for it (what arrives meanwhile goes into it), so that no more than the
    /// channel's capacity wait; and until the first complete list of every watch,
    /// when nothing is planned yet, snapshots carry no records.
    pub fn watch(
        self,
        client: kube::Client,
        tx: mpsc::Sender<Snapshot>,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        let (seen_tx, mut seen_rx) = mpsc::channel::<Seen>(256);
        let watches = self.watches();
        let options = settings::options(&self.config);
        let reduce: watch::Reduce = Arc::new(move |feed, object| reduce(feed, object, &options));
        let base = watcher::Config::default().timeout(self.watch_timeout);
        for watch in &watches {
            let mut wc = base.clone();
            // The label selector chooses the objects that ask for records, not the
            // cluster objects they are computed from.
            if let (Feed::Kind(_), Some(s)) = (watch.feed, &self.config.label_selector) {
                wc = wc.labels(s);
            }
            tokio::spawn(watch::watch_scope(
                client.clone(),
                watch.clone(),
                wc,
                reduce.clone(),
                seen_tx.clone(),
                cancel.clone(),
            ));
        }
        drop(seen_tx);
        tokio::spawn(async move {
            let mut progress = Progress::new(&watches);
            let mut was_ready = false;
            loop {
                let deadline = lock(&self.translated).next_deadline();
                let first = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    s = seen_rx.recv() => match s { Some(s) => Some(s), None => return },
                    () = sleep_until(deadline) => None,
                };
                let mut batch: Vec<Seen> = first.into_iter().collect();
                let permit = loop {
                    self.take_all(&mut progress, std::mem::take(&mut batch));
                    // Room for a snapshot; what arrives until then goes into it.
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => return,
                        permit = tx.reserve() => match permit {
                            Ok(p) => break p,
                            Err(_) => return,
                        },
                        s = seen_rx.recv() => match s { Some(s) => batch.push(s), None => return },
                    }
                };
                // Whatever else has arrived goes into the same snapshot.
                while let Ok(more) = seen_rx.try_recv() {
                    batch.push(more);
                }
                self.take_all(&mut progress, batch);
                let snapshot = blocking(|| {
                    let objects = lock(&self.objects);
                    let translated = lock(&self.translated);
                    let unready = progress.unready(objects.len() + translated.len());
                    was_ready |= unready.is_empty();
                    if !was_ready {
                        return Snapshot {
                            unready,
                            ..Snapshot::default()
                        };
                    }
                    let mut snapshot = objects.snapshot(unready);
                    translated.extend_snapshot(&mut snapshot);
                    snapshot
                });
                tracing::debug!(
                    records = snapshot.entries.len(),
                    errors = snapshot.errors.len(),
                    unready = ?snapshot.unready,
                    "kubernetes source changed"
                );
                permit.send(snapshot);
            }
        })
    }

    /// `batch` into what is held, and the graces that ended by now.
    fn take_all(&self, progress: &mut Progress, batch: Vec<Seen>) {
        blocking(|| {
            let now = std::time::Instant::now();
            let mut objects = lock(&self.objects);
            let mut translated = lock(&self.translated);
            for seen in batch {
                take(progress, &mut objects, &mut translated, seen, now);
            }
            translated.expire(now);
            *lock(&self.parts) = progress.parts();
        });
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Until `deadline`, or for ever.
async fn sleep_until(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
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

/// What is kept of an object of `feed` as the watcher takes it, as JSON text (a tree
/// of maps costs several times its text): a DNSEndpoint as the manifest parser reads
/// it (its identity, generation and spec), what a kind's translation reads
/// ([`kinds::kept`]), what of a Pod a headless Service reads, any other dependency
/// without managed fields and the last-applied copy.
fn reduce(feed: Feed, object: DynamicObject, options: &kinds::Options) -> Box<str> {
    // The object's own fields moved, not copied: only its metadata is converted.
    let mut value = match object.data {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    if let Some(types) = object.types {
        value.insert("apiVersion".into(), types.api_version.into());
        value.insert("kind".into(), types.kind.into());
    }
    value.insert(
        "metadata".into(),
        serde_json::to_value(object.metadata).unwrap_or_default(),
    );
    let value = serde_json::Value::Object(value);
    let kept = match feed {
        Feed::Kind(Kind::DnsEndpoint) => {
            let meta = &value["metadata"];
            let mut doc = serde_json::json!({
                "apiVersion": "externaldns.k8s.io/v1alpha1",
                "kind": "DNSEndpoint",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"].as_str().unwrap_or("default"),
                    "generation": meta["generation"],
                },
            });
            if !value["spec"].is_null() {
                doc["spec"] = value["spec"].clone();
            }
            doc
        }
        Feed::Kind(kind) => kinds::kept::keep_read(kind, value, options),
        Feed::Dependency(Dependency::Pod) => kinds::kept::keep_pod(value),
        Feed::Dependency(_) => kinds::kept::trim(value),
    };
    kept.to_string().into_boxed_str()
}

/// An object as [`reduce`] wrote it.
fn parse(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_default()
}

/// One thing a watcher saw, into what is held.
fn take(
    progress: &mut Progress,
    objects: &mut Objects,
    translated: &mut Translated,
    seen: Seen,
    now: std::time::Instant,
) {
    match seen {
        Seen::Listed(w, items) => {
            let scope = w.scope.as_deref();
            match w.feed {
                Feed::Kind(Kind::DnsEndpoint) => {
                    let listed = items.into_iter().filter_map(endpoint).collect();
                    objects.replace_scope(scope, listed);
                }
                // One object parsed at a time, as it is taken.
                Feed::Kind(k) => {
                    translated.replace_scope(k, scope, items.iter().map(|t| parse(t)), now)
                }
                Feed::Dependency(d) => translated.replace_dependency_scope(
                    d,
                    scope,
                    items.iter().map(|t| parse(t)).collect(),
                    now,
                ),
            }
            progress.listed(&w);
        }
        Seen::Applied(w, text) => match w.feed {
            Feed::Kind(Kind::DnsEndpoint) => {
                if let Some((name, generation, text)) = endpoint(text) {
                    objects.apply(&name, generation, &text);
                }
            }
            Feed::Kind(k) => translated.apply(k, parse(&text), now),
            Feed::Dependency(d) => {
                let obj = parse(&text);
                let name = dependency_name(d, &obj);
                translated.dependency(d, &name, Some(obj), now);
            }
        },
        Seen::Deleted(w, text) => match (w.feed, parse(&text)) {
            (Feed::Kind(Kind::DnsEndpoint), obj) => {
                objects.delete(&kinds::object_key(&obj));
            }
            (Feed::Kind(k), obj) => {
                translated.delete(k, &kinds::object_key(&obj));
            }
            (Feed::Dependency(d), obj) => {
                let name = dependency_name(d, &obj);
                translated.dependency(d, &name, None, now);
            }
        },
        Seen::Failed(w, error) => progress.failed(&w, error),
    }
}

/// How a dependency is named: `namespace/name`, a Node by its name.
fn dependency_name(dep: Dependency, obj: &serde_json::Value) -> String {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    match dep {
        Dependency::Node | Dependency::Namespace => name.to_string(),
        _ => format!(
            "{}/{name}",
            obj["metadata"]["namespace"].as_str().unwrap_or("default")
        ),
    }
}

/// `(namespace/name, generation, the text the parser reads)` of a DNSEndpoint as
/// [`reduce`] wrote it (`None`: an object without a name).
fn endpoint(text: Box<str>) -> Option<(ObjectName, Option<i64>, Box<str>)> {
    let obj = parse(&text);
    obj["metadata"]["name"].as_str()?;
    Some((
        kinds::object_key(&obj),
        obj["metadata"]["generation"].as_i64(),
        text,
    ))
}

/// The name a Kubernetes source's state goes under: its cluster's `name` (when given),
/// its scope, and its kinds when they are not the default DNSEndpoint alone (so that
/// an existing planner's state keeps its name).
pub fn store_key(config: &KubernetesSourceConfig) -> String {
    let mut key = match &config.name {
        Some(name) => format!("kubernetes@{name}:{}", config.namespaces.join(",")),
        None => format!("kubernetes:{}", config.namespaces.join(",")),
    };
    if let Some(s) = &config.label_selector {
        key.push('?');
        key.push_str(s);
    }
    let kinds = settings::kinds(config);
    if kinds != [Kind::DnsEndpoint] {
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        key.push('#');
        key.push_str(&names.join(","));
    }
    key
}

#[cfg(test)]
mod tests;
