//! What the fake stores: every resource's objects, one resourceVersion counter for
//! all of them (as etcd has), each resource's history of changes for watches that
//! resume, and the open watches. Objects are shared (`Arc`) between the store, the
//! history and the lists, so that 25,000 objects cost one copy each.
use super::events;
use super::refusal::Refusal;
use super::resource::Resource;
use super::selector::{FieldSelector, LabelSelector};
use crate::crd::Crd;
use axum::body::Bytes;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;
use tokio::sync::mpsc;

/// `(namespace, name)`; the namespace is `""` for a cluster-scoped object. The order
/// is etcd's keys' order, which lists follow.
pub type Key = (String, String);

/// The key of `name` in `namespace` (none for a cluster-scoped resource).
pub fn key(r: Resource, namespace: Option<&str>, name: &str) -> Key {
    let ns = if r.info().namespaced {
        namespace.unwrap_or("")
    } else {
        ""
    };
    (ns.to_string(), name.to_string())
}

/// One status write the server received.
#[derive(Debug, Clone)]
pub struct StatusWrite {
    /// The resource written (DNSEndpoint for dnsplane's status writer).
    pub resource: Resource,
    pub namespace: String,
    pub name: String,
    pub content_type: String,
    /// The query string (`fieldManager=dnsplane&force=true`).
    pub query: String,
    pub body: Value,
}

/// One change, as watches replay it.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub kind: &'static str,
    pub object: Arc<Value>,
}

#[derive(Debug, Default)]
pub struct Table {
    pub objects: BTreeMap<Key, Arc<Value>>,
    /// Changes in resourceVersion order (appended only; cut by `expire`).
    pub history: Vec<Change>,
    /// The CRD that prunes and validates what is stored, if any.
    pub crd: Option<Arc<Crd>>,
}

pub type Tx = mpsc::UnboundedSender<Result<Bytes, std::io::Error>>;

#[derive(Debug)]
pub struct Watcher {
    pub id: u64,
    /// As requested (its objects' shape): Event or EventV1 for events.
    pub resource: Resource,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub tx: Tx,
}

impl Watcher {
    fn wants(&self, shaped: &Value) -> bool {
        matches_scope(shaped, self.namespace.as_deref())
            && self.labels.matches(shaped)
            && self.fields.matches(shaped)
    }
}

#[derive(Debug, Default)]
pub struct State {
    /// By storage resource ([`Resource::storage`]).
    pub tables: HashMap<Resource, Table>,
    pub rv: u64,
    /// Watches and continue tokens from a resourceVersion at or below this get 410.
    pub compacted: u64,
    pub watchers: Vec<Watcher>,
    pub status_writes: Vec<StatusWrite>,
    pub failing: bool,
    /// Resources answered 500 (one kind's outage: its storage, a webhook, a broken CRD).
    pub failing_resources: BTreeSet<Resource>,
    pub hanging: bool,
    /// (lists, watches) served, by resource as requested.
    pub counts: HashMap<Resource, (usize, usize)>,
    /// Resources answered 403, with the verbs refused (empty: every verb).
    pub forbidden: BTreeMap<Resource, Vec<String>>,
    /// Resources not installed (their CRD absent): 404 and absent from discovery.
    pub absent: BTreeSet<Resource>,
    /// For uids and watch ids.
    pub serial: u64,
}

/// Whether `object` is in `namespace` (none: any).
pub fn matches_scope(object: &Value, namespace: Option<&str>) -> bool {
    namespace.is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns))
}

/// An object in the shape `resource` serves it (events.k8s.io/v1 Events converted).
pub fn shape(resource: Resource, object: &Arc<Value>) -> Arc<Value> {
    if resource == Resource::EventV1 {
        Arc::new(events::core_to_v1(object))
    } else {
        Arc::clone(object)
    }
}

pub fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl State {
    pub fn table(&mut self, resource: Resource) -> &mut Table {
        self.tables.entry(resource.storage()).or_default()
    }

    pub fn get(&self, resource: Resource, key: &Key) -> Option<&Arc<Value>> {
        self.tables.get(&resource.storage())?.objects.get(key)
    }

    fn uid(&mut self) -> String {
        self.serial += 1;
        let n = self.serial;
        format!("{:08x}-d15b-4a1e-8000-{:012x}", n as u32, n)
    }

    /// Stores `object` (create or replace) as `resource` (its shape); what the API
    /// server fills in is filled in: apiVersion, kind, the namespace (`default` if
    /// none), uid, creationTimestamp, generation (moved when the spec changes) and
    /// resourceVersion. Pruned, defaulted and validated by the resource's CRD, if any.
    /// Emits ADDED or MODIFIED.
    pub fn put(&mut self, resource: Resource, object: Value) -> Result<Arc<Value>, Refusal> {
        let mut object = if resource == Resource::EventV1 {
            events::v1_to_core(&object)
        } else {
            object
        };
        let storage = resource.storage();
        let info = storage.info();
        let Some(meta) = object.get("metadata").and_then(Value::as_object) else {
            return Err(name_required(resource));
        };
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty()
            && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
        {
            let ns = meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("default");
            name = self.generated_name(storage, Some(ns), prefix);
            object["metadata"]["name"] = name.clone().into();
        }
        if name.is_empty() {
            return Err(name_required(resource));
        }
        let ns = if info.namespaced {
            object["metadata"]
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        let key = (ns.clone(), name.clone());
        let old = self.get(storage, &key).cloned();
        object["apiVersion"] = storage.api_version().into();
        object["kind"] = info.kind.into();
        let generation = match &old {
            Some(o) => {
                let g = o["metadata"]["generation"].as_i64().unwrap_or(1);
                if o.get("spec") == object.get("spec") {
                    g
                } else {
                    g + 1
                }
            }
            None => 1,
        };
        let uid = match &old {
            Some(o) => o["metadata"]["uid"].clone(),
            None => self.uid().into(),
        };
        let created = old
            .as_ref()
            .map(|o| o["metadata"]["creationTimestamp"].clone())
            .unwrap_or_else(|| now_rfc3339().into());
        let m = &mut object["metadata"];
        if info.namespaced {
            m["namespace"] = ns.into();
        } else if let Some(m) = m.as_object_mut() {
            m.remove("namespace");
        }
        m["uid"] = uid;
        m["creationTimestamp"] = created;
        if storage != Resource::Event {
            m["generation"] = generation.into();
        }
        if let Some(crd) = self.table(storage).crd.clone() {
            crd.admit(&mut object)
                .map_err(|causes| Refusal::invalid(resource, &name, causes))?;
        }
        self.rv += 1;
        let rv = self.rv;
        object["metadata"]["resourceVersion"] = rv.to_string().into();
        let object = Arc::new(object);
        self.table(storage).objects.insert(key, Arc::clone(&object));
        let kind = if old.is_some() { "MODIFIED" } else { "ADDED" };
        self.publish(storage, rv, kind, Arc::clone(&object));
        Ok(object)
    }

    /// Replaces a stored object after a status write or a patch (already admitted).
    pub fn replace(&mut self, resource: Resource, key: Key, mut object: Value) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        object["metadata"]["resourceVersion"] = rv.to_string().into();
        let object = Arc::new(object);
        let storage = resource.storage();
        self.table(storage).objects.insert(key, Arc::clone(&object));
        self.publish(storage, rv, "MODIFIED", Arc::clone(&object));
        object
    }

    /// Deletes an object: a DELETED event unless `quietly` (then only a relist shows
    /// it, the case of an object deleted while a client was away).
    pub fn delete(&mut self, resource: Resource, key: &Key, quietly: bool) -> Option<Value> {
        let storage = resource.storage();
        let object = self.table(storage).objects.remove(key)?;
        self.rv += 1;
        let rv = self.rv;
        let mut object = Arc::unwrap_or_clone(object);
        if !quietly {
            object["metadata"]["resourceVersion"] = rv.to_string().into();
            self.publish(storage, rv, "DELETED", Arc::new(object.clone()));
        }
        Some(object)
    }

    fn publish(&mut self, storage: Resource, rv: u64, kind: &'static str, object: Arc<Value>) {
        let mut lines: HashMap<Resource, (Arc<Value>, Bytes)> = HashMap::new();
        self.watchers.retain(|w| {
            if w.resource.storage() != storage {
                return true;
            }
            let (shaped, line) = lines.entry(w.resource).or_insert_with(|| {
                let shaped = shape(w.resource, &object);
                let line = event_line(kind, &shaped);
                (shaped, line)
            });
            !w.wants(shaped) || w.tx.send(Ok(line.clone())).is_ok()
        });
        self.table(storage)
            .history
            .push(Change { rv, kind, object });
    }

    /// Forgets history up to the current resourceVersion; open watches end with 410.
    pub fn expire(&mut self) {
        self.compacted = self.rv;
        for t in self.tables.values_mut() {
            t.history.clear();
        }
        let gone = event_line("ERROR", &gone_status("too old resource version"));
        for w in std::mem::take(&mut self.watchers) {
            let _ = w.tx.send(Ok(gone.clone()));
        }
    }

    /// Cuts every open watch's connection mid-stream.
    pub fn cut(&mut self) {
        self.cut_where(|_| true);
    }

    /// Cuts the open watches `which` selects.
    pub fn cut_where(&mut self, which: impl Fn(&Watcher) -> bool) {
        let (cut, kept) = std::mem::take(&mut self.watchers)
            .into_iter()
            .partition(|w| which(w));
        self.watchers = kept;
        let cut: Vec<Watcher> = cut;
        for w in cut {
            let _ = w.tx.send(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cut by the test",
            )));
        }
    }

    /// One page of a list: the objects after `after` (in key order) in `namespace`
    /// matching the selectors, at most `limit` of them (0: all), and the key of the
    /// last one if more may follow.
    pub fn page(
        &self,
        resource: Resource,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        after: Option<&Key>,
        limit: usize,
    ) -> (Vec<Arc<Value>>, Option<Key>) {
        let Some(table) = self.tables.get(&resource.storage()) else {
            return (Vec::new(), None);
        };
        let start = match (after, namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut items = Vec::new();
        let mut last = None;
        for (key, object) in table.objects.range((start, Bound::Unbounded)) {
            if namespace.is_some_and(|ns| key.0 != ns) {
                break;
            }
            let shaped = shape(resource, object);
            if !labels.matches(&shaped) || !fields.matches(&shaped) {
                continue;
            }
            if limit > 0 && items.len() == limit {
                return (items, last);
            }
            last = Some(key.clone());
            items.push(shaped);
        }
        (items, None)
    }

    /// The changes of `resource` after `from`, for a watch that resumes.
    pub fn since(&self, resource: Resource, from: u64) -> &[Change] {
        match self.tables.get(&resource.storage()) {
            Some(t) => {
                let i = t.history.partition_point(|c| c.rv <= from);
                &t.history[i..]
            }
            None => &[],
        }
    }

    /// A name for `metadata.generateName`, as the API server makes one: the prefix (cut
    /// to 58 characters) and 5 characters of its alphabet, not taken yet in `ns`.
    pub fn generated_name(&self, r: Resource, ns: Option<&str>, prefix: &str) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let prefix: String = prefix.chars().take(58).collect();
        let mut n = self.rv.wrapping_mul(2_654_435_761);
        loop {
            let mut suffix = String::new();
            let mut m = n;
            for _ in 0..5 {
                suffix.push(ALPHABET[(m % ALPHABET.len() as u64) as usize] as char);
                m /= ALPHABET.len() as u64;
            }
            let name = format!("{prefix}{suffix}");
            if self.get(r, &key(r, ns, &name)).is_none() {
                return name;
            }
            n = n.wrapping_add(1);
        }
    }

    pub fn next_id(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }
}

/// The Status of a watch or continue token that is too old (410 Gone).
/// What the API server answers an object without a name or a `generateName`.
fn name_required(resource: Resource) -> Refusal {
    let problem = "Required value: name or generateName is required";
    Refusal::invalid(resource, "", vec![("metadata.name".into(), problem.into())])
}

pub fn gone_status(message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": "Expired", "code": 410})
}
