//! Each DNSEndpoint's result, written back to its `status`: one `Ready` condition
//! (`True`/`False`, reason `Ready`, `Invalid`, `Conflict` or `Pending`, a message with
//! the detail of each endpoint that is not converged) and `observedGeneration`.
//!
//! The condition has the shape of a `metav1.Condition`, which dnsplane's DNSEndpoint
//! CRD (`deploy/k8s/05-crd-dnsendpoint.yaml`) declares in the status schema: an API
//! server prunes what its CRD does not declare (external-dns's CRD declares only
//! `observedGeneration`), and refuses a message over [`MAX_MESSAGE_CHARS`].
//!
//! The condition is derived ([`condition`], pure) from the object's own errors (what
//! the parser refused) and the planner's per-record states, which the caller reads
//! from the engine's read model and hands in as [`RecordOutcome`]s (the source does not
//! import the engine). Writes are server-side apply (`fieldManager=dnsplane`, forced)
//! of the status subresource, only when the condition or generation changed, and at
//! most one per object per `interval`: a thousand objects flapping do not become a
//! thousand writes a second.
use super::dnsendpoint_resource;
use super::objects::{ObjectName, ObjectState, Objects, resource_of};
pub use crate::source::outcomes::{Phase, RecordName, RecordOutcome};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The field manager of every status write.
pub const FIELD_MANAGER: &str = "dnsplane";

/// Most endpoint lines in one condition message; the rest are counted.
const MAX_LINES: usize = 10;

/// The longest message a condition may hold (`metav1.Condition`'s `maxLength`, in
/// characters): the API server refuses a longer one, and the status would never be
/// written. Ten lines of provider errors can exceed it.
pub const MAX_MESSAGE_CHARS: usize = 32768;

/// Outcomes by the object that asked for them: sorted references, a few bytes per
/// record, where a map would hold a node per object (this is built each second).
#[derive(Debug)]
pub struct ByResource<'a>(Vec<&'a RecordOutcome>);

impl<'a> ByResource<'a> {
    pub fn new(outcomes: &'a [RecordOutcome]) -> ByResource<'a> {
        let mut sorted: Vec<&RecordOutcome> = outcomes.iter().collect();
        sorted.sort_by(|a, b| a.resource.cmp(&b.resource));
        ByResource(sorted)
    }

    /// The outcomes of the records `resource` asked for.
    pub fn get(&self, resource: &str) -> &[&'a RecordOutcome] {
        let start = self.0.partition_point(|o| &*o.resource < resource);
        let len = self.0[start..].partition_point(|o| &*o.resource == resource);
        &self.0[start..start + len]
    }
}

/// The `Ready` condition of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub ready: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The condition of `object` given its records' outcomes. Its own errors come first
/// (`Invalid`: what the object says cannot be used), then the records: any invalid,
/// any in conflict, any not converged (or not in force yet: a change still on its way
/// to the planner), else `Ready`.
pub fn condition(object: &ObjectState, name: &str, records: &[&RecordOutcome]) -> Condition {
    let mut lines: Vec<String> = object
        .errors
        .iter()
        .map(|e| {
            let mut line = e.to_string();
            if let Some(rest) = line.strip_prefix(name) {
                line = rest.trim_start_matches([' ', ':']).to_string();
            }
            line
        })
        .collect();
    let of = |phase: Phase| records.iter().filter(move |r| r.phase == phase);
    let describe = |r: &&&RecordOutcome, what: &str| {
        if r.detail.is_empty() {
            format!("{}: {what}", r.record)
        } else {
            format!("{}: {what}: {}", r.record, r.detail)
        }
    };
    let converged = of(Phase::Converged).count();
    let expected = object.accepted.len().max(records.len());
    let reason = if !object.errors.is_empty() || of(Phase::Invalid).next().is_some() {
        lines.extend(of(Phase::Invalid).map(|r| describe(&r, "refused by the provider")));
        "Invalid"
    } else if of(Phase::Conflict).next().is_some() {
        lines.extend(of(Phase::Conflict).map(|r| describe(&r, "conflict")));
        "Conflict"
    } else if converged < expected {
        lines.push(format!("{converged} of {expected} record(s) converged"));
        lines.extend(of(Phase::Failed).map(|r| describe(&r, "failing")));
        lines.extend(of(Phase::Pending).map(|r| describe(&r, "pending")));
        lines.extend(of(Phase::Held).map(|r| describe(&r, "held for approval")));
        "Pending"
    } else {
        return Condition {
            ready: true,
            reason: "Ready",
            message: format!("{converged} record(s) converged"),
        };
    };
    if reason != "Pending" {
        lines.push(format!("{converged} of {expected} record(s) converged"));
    }
    let more = lines.len().saturating_sub(MAX_LINES + 1);
    if more > 0 {
        lines.truncate(MAX_LINES);
        lines.push(format!("and {more} more"));
    }
    Condition {
        ready: false,
        reason,
        message: bounded(lines.join("; ")),
    }
}

/// `message`, cut to [`MAX_MESSAGE_CHARS`] (its end marked by `…`).
fn bounded(mut message: String) -> String {
    if let Some((at, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        let keep = message[..at]
            .char_indices()
            .nth_back(0)
            .map_or(0, |(i, _)| i);
        message.truncate(keep);
        message.push('…');
    }
    message
}

/// What was last written to an object.
#[derive(Debug, Clone)]
struct Written {
    condition: Condition,
    generation: Option<i64>,
    at: Instant,
    /// `lastTransitionTime`: when `ready` last changed.
    since: SystemTime,
}

/// Writes the objects' statuses, remembering what it wrote.
pub struct StatusWriter {
    client: kube::Client,
    interval: Duration,
    written: HashMap<ObjectName, Written>,
}

impl std::fmt::Debug for StatusWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusWriter")
            .field("interval", &self.interval)
            .field("written", &self.written.len())
            .finish_non_exhaustive()
    }
}

impl StatusWriter {
    pub fn new(client: kube::Client, interval: Duration) -> StatusWriter {
        StatusWriter {
            client,
            interval,
            written: HashMap::new(),
        }
    }

    /// Writes the status of every object whose condition or generation changed since
    /// its last write, unless that write is less than `interval` old (then a later
    /// round writes it). Returns how many were written; a failed write is retried by
    /// the next round.
    pub async fn round(&mut self, objects: &Mutex<Objects>, outcomes: &[RecordOutcome]) -> usize {
        let by_resource = ByResource::new(outcomes);
        let due: Vec<(ObjectName, Option<i64>, Condition)> = {
            let objects = objects
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.written.retain(|name, _| objects.get(name).is_some());
            objects
                .iter()
                .filter_map(|(name, state)| {
                    let records = by_resource.get(&resource_of(name));
                    let c = condition(state, name, records);
                    let last = self.written.get(name);
                    let changed =
                        last.is_none_or(|w| w.condition != c || w.generation != state.generation);
                    let allowed = last.is_none_or(|w| w.at.elapsed() >= self.interval);
                    (changed && allowed).then(|| (name.clone(), state.generation, c))
                })
                .collect()
        };
        let mut writes = 0;
        for (name, generation, condition) in due {
            let since = match self.written.get(&name) {
                Some(w) if w.condition.ready == condition.ready => w.since,
                _ => SystemTime::now(),
            };
            match self.write(&name, generation, &condition, since).await {
                Ok(()) => {
                    writes += 1;
                    self.written.insert(
                        name,
                        Written {
                            condition,
                            generation,
                            at: Instant::now(),
                            since,
                        },
                    );
                }
                Err(e) => {
                    tracing::debug!(object = %name, error = %e, "DNSEndpoint status not written; trying again next round.");
                }
            }
        }
        writes
    }

    async fn write(
        &self,
        name: &str,
        generation: Option<i64>,
        c: &Condition,
        since: SystemTime,
    ) -> Result<(), kube::Error> {
        let (namespace, object) = name.split_once('/').unwrap_or(("default", name));
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &dnsendpoint_resource());
        let patch = status_patch(namespace, object, generation, c, since);
        api.patch_status(
            object,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map(|_| ())
    }
}

/// The server-side apply body of one object's status.
pub fn status_patch(
    namespace: &str,
    name: &str,
    generation: Option<i64>,
    c: &Condition,
    since: SystemTime,
) -> serde_json::Value {
    let mut condition = serde_json::json!({
        "type": "Ready",
        "status": if c.ready { "True" } else { "False" },
        "reason": c.reason,
        "message": c.message,
        "lastTransitionTime": humantime::format_rfc3339_seconds(since).to_string(),
    });
    let mut status = serde_json::json!({ "conditions": [] });
    if let Some(g) = generation {
        condition["observedGeneration"] = g.into();
        status["observedGeneration"] = g.into();
    }
    status["conditions"] = serde_json::json!([condition]);
    serde_json::json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1",
        "kind": "DNSEndpoint",
        "metadata": {"name": name, "namespace": namespace},
        "status": status,
    })
}

/// Runs a status round every second until `cancel`: `outcomes` reads the records'
/// states (the planner passes a read of its engine), or `None` when this planner must
/// not write (a standby: its records only look pending).
pub fn run_status<F>(
    mut writer: StatusWriter,
    objects: Arc<Mutex<Objects>>,
    outcomes: F,
    cancel: CancellationToken,
) -> JoinHandle<()>
where
    F: Fn() -> Option<Vec<RecordOutcome>> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            // No DNSEndpoint held (a source of other kinds): no record to read.
            let none = objects
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_empty();
            if none {
                continue;
            }
            if let Some(outcomes) = outcomes() {
                writer.round(&objects, &outcomes).await;
            }
        }
    })
}
