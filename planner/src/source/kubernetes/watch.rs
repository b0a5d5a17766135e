//! What the Kubernetes source lists and watches ([`Feed`]s: each configured kind, and
//! the cluster objects their records depend on), one watcher per feed and scope, and
//! how far each has come ([`Progress`]): the source is ready only when every one has
//! completed a list.
use super::kinds::Kind;
use super::translated::Dependency;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One resource the source watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feed {
    /// Objects that ask for records.
    Kind(Kind),
    /// Objects records are computed from.
    Dependency(Dependency),
}

impl Feed {
    /// `Service`, `Node`, …
    pub fn name(self) -> &'static str {
        match self {
            Feed::Kind(k) => k.as_str(),
            Feed::Dependency(d) => d.as_str(),
        }
    }

    /// The API resource (group, version, plural) served for it. Gateway API routes at
    /// `v1`: every route kind is served at v1 from Gateway API v1.5 (the standard
    /// channel of v1.6 serves TCPRoute and UDPRoute at v1 only).
    pub fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            Feed::Kind(Kind::DnsEndpoint) => (
                "externaldns.k8s.io",
                "v1alpha1",
                "DNSEndpoint",
                "dnsendpoints",
            ),
            Feed::Kind(Kind::Service) => ("", "v1", "Service", "services"),
            Feed::Kind(Kind::Ingress) => ("networking.k8s.io", "v1", "Ingress", "ingresses"),
            Feed::Kind(Kind::HttpRoute) => {
                ("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes")
            }
            Feed::Kind(Kind::GrpcRoute) => {
                ("gateway.networking.k8s.io", "v1", "GRPCRoute", "grpcroutes")
            }
            Feed::Kind(Kind::TlsRoute) => {
                ("gateway.networking.k8s.io", "v1", "TLSRoute", "tlsroutes")
            }
            Feed::Kind(Kind::TcpRoute) => {
                ("gateway.networking.k8s.io", "v1", "TCPRoute", "tcproutes")
            }
            Feed::Kind(Kind::UdpRoute) => {
                ("gateway.networking.k8s.io", "v1", "UDPRoute", "udproutes")
            }
            Feed::Dependency(Dependency::Node) => ("", "v1", "Node", "nodes"),
            Feed::Dependency(Dependency::Pod) => ("", "v1", "Pod", "pods"),
            Feed::Dependency(Dependency::EndpointSlice) => {
                ("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
            }
            Feed::Dependency(Dependency::Gateway) => {
                ("gateway.networking.k8s.io", "v1", "Gateway", "gateways")
            }
            Feed::Dependency(Dependency::Namespace) => ("", "v1", "Namespace", "namespaces"),
        };
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() {
                version.into()
            } else {
                format!("{group}/{version}")
            },
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    /// Nodes and Namespaces have no namespace.
    pub fn cluster_scoped(self) -> bool {
        matches!(
            self,
            Feed::Dependency(Dependency::Node | Dependency::Namespace)
        )
    }
}

/// One watcher: a feed in a scope (a namespace; `None`: all, or cluster-scoped).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Watch {
    pub feed: Feed,
    pub scope: Option<String>,
}

impl Watch {
    /// `Service in namespace web`, `Node` …: how status names it.
    pub fn describe(&self) -> String {
        match (&self.scope, self.feed.cluster_scoped()) {
            (_, true) => self.feed.name().to_string(),
            (Some(ns), _) => format!("{} in namespace {ns}", self.feed.name()),
            (None, _) => format!("{} in all namespaces", self.feed.name()),
        }
    }

    fn api(&self, client: kube::Client) -> Api<DynamicObject> {
        let ar = self.feed.resource();
        match &self.scope {
            Some(ns) if !self.feed.cluster_scoped() => Api::namespaced_with(client, ns, &ar),
            _ => Api::all_with(client, &ar),
        }
    }
}

/// What of an object of a feed is kept ([`super::kinds::kept`] for the kinds): applied
/// by the watcher to each object as it arrives, so that a list of tens of thousands of
/// objects is never held whole as the API sent it.
pub type Reduce = std::sync::Arc<dyn Fn(Feed, DynamicObject) -> Box<str> + Send + Sync>;

/// What one watcher saw, each object reduced (JSON text).
#[derive(Debug)]
pub enum Seen {
    /// A complete list of the watch.
    Listed(Watch, Vec<Box<str>>),
    Applied(Watch, Box<str>),
    Deleted(Watch, Box<str>),
    /// The watch broke; it lists again after a pause.
    Failed(Watch, String),
}

/// Lists and watches one feed in one scope for ever: a complete list is sent whole; a
/// broken watch (an error event, 410 Gone, a dropped connection, a failed list, a 403)
/// is reported and the scope is listed again after a pause (1 s, doubling to 30 s),
/// so that only a complete list ever says which objects are gone.
pub async fn watch_scope(
    client: kube::Client,
    watch: Watch,
    wc: watcher::Config,
    reduce: Reduce,
    tx: mpsc::Sender<Seen>,
    cancel: CancellationToken,
) {
    let api = watch.api(client);
    let feed = watch.feed;
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
                    buffer.push(reduce(feed, obj));
                    continue;
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    pause = Duration::from_secs(1);
                    Seen::Listed(watch.clone(), std::mem::take(&mut buffer))
                }
                Some(Ok(watcher::Event::Apply(obj))) => {
                    Seen::Applied(watch.clone(), reduce(feed, obj))
                }
                Some(Ok(watcher::Event::Delete(obj))) => {
                    Seen::Deleted(watch.clone(), reduce(feed, obj))
                }
                Some(Err(e)) => break describe(&watch, &e),
            };
            if tx.send(seen).await.is_err() {
                return;
            }
        };
        tracing::warn!(watch = %watch.describe(), error = %failure, retry_in = ?pause, "Kubernetes watch failed; keeping the accepted objects and listing again.");
        if tx.send(Seen::Failed(watch.clone(), failure)).await.is_err() {
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
/// to perform initial object list"), with the fix when the API refuses the account
/// (403: the verb and resource the RBAC rules lack) or does not serve the resource
/// (404: a CRD not installed).
fn describe(watch: &Watch, e: &watcher::Error) -> String {
    // The API's answer once, in its words (kube's text for it repeats the message
    // and appends its debug form).
    let answered = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(r)) => {
            Some(("failed to perform initial object list", r))
        }
        watcher::Error::WatchStartFailed(kube::Error::Api(r)) => {
            Some(("failed to start watching object", r))
        }
        watcher::Error::WatchFailed(kube::Error::Api(r)) => Some(("watch stream failed", r)),
        watcher::Error::WatchError(r) => Some(("error returned by apiserver during watch", r)),
        _ => None,
    };
    let code = answered.map(|(_, r)| r.code);
    let text = match answered {
        Some((what, r)) => format!("{what}: {} ({} {})", r.message, r.code, r.reason),
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            text
        }
    };
    let ar = watch.feed.resource();
    let group = if ar.group.is_empty() {
        "\"\" (core)".to_string()
    } else {
        format!("{:?}", ar.group)
    };
    match code {
        Some(403) => format!(
            "{text}; the planner's account may not list and watch {} in API group {group}: grant the verbs list and watch on it ({})",
            ar.plural,
            if watch.feed == Feed::Kind(Kind::DnsEndpoint) {
                "deploy/k8s/15-rbac.yaml"
            } else {
                "deploy/k8s/16-rbac-kinds.yaml"
            }
        ),
        Some(404) => format!(
            "{text}; the API does not serve {} {}: install its CRD, or remove {} from kinds",
            ar.api_version,
            ar.plural,
            watch.feed.name()
        ),
        _ => text,
    }
}

/// Per watch: listed yet, and the error since the last complete list.
#[derive(Debug)]
pub struct Progress {
    watches: Vec<(Watch, ScopeState)>,
}

#[derive(Debug, Clone, PartialEq)]
enum ScopeState {
    NeverListed(Option<String>),
    Listed,
    Failing(String),
}

impl Progress {
    pub fn new(watches: &[Watch]) -> Progress {
        Progress {
            watches: watches
                .iter()
                .map(|w| (w.clone(), ScopeState::NeverListed(None)))
                .collect(),
        }
    }

    fn state(&mut self, watch: &Watch) -> Option<&mut ScopeState> {
        self.watches
            .iter_mut()
            .find(|(w, _)| w == watch)
            .map(|(_, st)| st)
    }

    pub fn listed(&mut self, watch: &Watch) {
        if let Some(st) = self.state(watch) {
            *st = ScopeState::Listed;
        }
    }

    pub fn failed(&mut self, watch: &Watch, error: String) {
        if let Some(st) = self.state(watch) {
            *st = match st {
                ScopeState::NeverListed(_) => ScopeState::NeverListed(Some(error)),
                _ => ScopeState::Failing(error),
            };
        }
    }

    /// Why the source is not ready, one line per watch that is not.
    pub fn unready(&self, objects: usize) -> Vec<String> {
        self.watches
            .iter()
            .filter_map(|(w, st)| {
                let name = w.describe();
                match st {
                    ScopeState::Listed => None,
                    ScopeState::NeverListed(None) => {
                        Some(format!("{name}: waiting for the first complete list"))
                    }
                    ScopeState::NeverListed(Some(e)) => Some(format!("{name}: not listed yet: {e}")),
                    ScopeState::Failing(e) => Some(format!(
                        "{name}: {e}; keeping the last accepted records of {objects} object(s) until a complete list succeeds"
                    )),
                }
            })
            .collect()
    }

    /// Every watch with whether it is listed and its error: what status shows per kind.
    pub fn parts(&self) -> Vec<crate::source::SourcePart> {
        self.watches
            .iter()
            .map(|(w, st)| {
                let (ready, reason) = match st {
                    ScopeState::Listed => (true, String::new()),
                    ScopeState::NeverListed(None) => {
                        (false, "waiting for the first complete list".into())
                    }
                    ScopeState::NeverListed(Some(e)) | ScopeState::Failing(e) => (false, e.clone()),
                };
                crate::source::SourcePart {
                    name: w.describe(),
                    ready,
                    reason,
                    detail: String::new(),
                }
            })
            .collect()
    }
}
