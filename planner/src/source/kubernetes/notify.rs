//! Each Service, Ingress and route told what happened to its records, as Kubernetes
//! Events (core/v1, what `kubectl describe` shows): `Published`, `Conflict`, `Invalid`,
//! `Rejected` or `Held`, with the record and the provider's answer in the message.
//! (DNSEndpoints have their status conditions: [`super::status`].)
//!
//! Like client-go's event recorder:
//! - **de-duplicated**: an event is written when an object's verdict changes; the same
//!   verdict seen again later (a flap back) patches the earlier Event's `count` and
//!   `lastTimestamp` instead of creating another;
//! - **rate-limited** per object: a burst of 25, then one per 5 minutes (client-go's
//!   spam filter), so a flapping object cannot flood the API; an event held back is
//!   written when the object's bucket allows, if its verdict still stands;
//! - written only by the lease holder (the caller passes no outcomes on standby).
//!
//! The verdict is pure ([`verdict`]); the writer ([`EventWriter`]) keeps what it wrote.
use super::kinds::Kind;
use super::objects::ObjectName;
use super::status::{Phase, RecordOutcome};
use super::translated::Translated;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The component every event names as its source.
pub const COMPONENT: &str = "dnsplane";

/// The longest message written (events.k8s.io's `note` limit, 1 kB).
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// Most record lines in one message.
const MAX_LINES: usize = 5;

/// client-go's spam filter: a burst of 25 events per object, then one per 5 minutes.
const BURST: f64 = 25.0;
const REFILL: Duration = Duration::from_secs(300);

/// What one object is told.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Verdict {
    /// `Normal` or `Warning`.
    pub kind: &'static str,
    /// `Published`, `Conflict`, `Invalid`, `Rejected`, `Held`.
    pub reason: &'static str,
    pub message: String,
}

/// The verdict of an object from its problems, its hold and its records' outcomes;
/// `None` while nothing is settled (records still on their way) or it has no records.
pub fn verdict(
    problems: &[String],
    held: Option<&str>,
    records: &[&RecordOutcome],
    expected: usize,
) -> Option<Verdict> {
    let warn = |reason, lines: Vec<String>| {
        Some(Verdict {
            kind: "Warning",
            reason,
            message: bounded(lines),
        })
    };
    if !problems.is_empty() {
        return warn("Invalid", problems.to_vec());
    }
    if let Some(h) = held {
        return warn("Held", vec![h.to_string()]);
    }
    let of = |p: Phase| records.iter().filter(move |r| r.phase == p);
    let line = |r: &&&RecordOutcome, what: &str| {
        if r.detail.is_empty() {
            format!("{}: {what}", r.record)
        } else {
            format!("{}: {what}: {}", r.record, r.detail)
        }
    };
    if of(Phase::Invalid).next().is_some() {
        return warn(
            "Invalid",
            of(Phase::Invalid)
                .map(|r| line(&r, "refused by the provider"))
                .collect(),
        );
    }
    if of(Phase::Conflict).next().is_some() {
        return warn(
            "Conflict",
            of(Phase::Conflict).map(|r| line(&r, "conflict")).collect(),
        );
    }
    if of(Phase::Failed).next().is_some() {
        return warn(
            "Rejected",
            of(Phase::Failed)
                .map(|r| line(&r, "the provider refuses it; retrying"))
                .collect(),
        );
    }
    if of(Phase::Held).next().is_some() {
        return warn(
            "Held",
            of(Phase::Held)
                .map(|r| line(&r, "held for approval"))
                .collect(),
        );
    }
    let converged = of(Phase::Converged).count();
    if expected == 0 || converged < expected {
        return None;
    }
    let mut lines: Vec<String> = of(Phase::Converged)
        .map(|r| format!("{}: published", r.record))
        .collect();
    lines.sort();
    Some(Verdict {
        kind: "Normal",
        reason: "Published",
        message: bounded(lines),
    })
}

/// The lines joined, at most [`MAX_LINES`] (the rest counted) and
/// [`MAX_MESSAGE_BYTES`].
fn bounded(mut lines: Vec<String>) -> String {
    let more = lines.len().saturating_sub(MAX_LINES);
    if more > 0 {
        lines.truncate(MAX_LINES);
        lines.push(format!("and {more} more"));
    }
    let mut message = lines.join("; ");
    if message.len() > MAX_MESSAGE_BYTES {
        let mut cut = MAX_MESSAGE_BYTES - '…'.len_utf8();
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// An object's token bucket.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() / REFILL.as_secs_f64();
        self.tokens = (self.tokens + refill).min(BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// An event written: its name (to patch) and count.
#[derive(Debug, Clone)]
struct Written {
    name: Box<str>,
    count: i64,
    first: SystemTime,
}

/// What the writer knows of one object (held for every object: kept small).
#[derive(Debug, Clone)]
struct Told {
    /// The verdicts written to it, with their Events, the last written last: a verdict
    /// seen again bumps its Event's count. At most [`VERDICTS_KEPT`] (an object's
    /// verdicts are few; past that the oldest is forgotten, and written anew if it
    /// comes back).
    /// Each verdict by its [`fingerprint`] (its message is long and held for every
    /// object).
    events: Vec<(u64, Written)>,
    bucket: Bucket,
}

/// What tells verdicts apart, in 8 bytes.
fn fingerprint(verdict: &Verdict) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    verdict.hash(&mut h);
    h.finish()
}

/// How many of an object's verdicts [`Told`] remembers.
const VERDICTS_KEPT: usize = 4;

impl Told {
    /// Whether `verdict` is the last one written.
    fn is_last(&self, verdict: &Verdict) -> bool {
        self.events
            .last()
            .is_some_and(|(v, _)| *v == fingerprint(verdict))
    }

    fn event(&self, verdict: &Verdict) -> Option<&Written> {
        let verdict = fingerprint(verdict);
        self.events
            .iter()
            .find(|(v, _)| *v == verdict)
            .map(|(_, w)| w)
    }

    /// `verdict` written as `written`: now the last.
    fn wrote(&mut self, verdict: &Verdict, written: Written) {
        let verdict = fingerprint(verdict);
        self.events.retain(|(v, _)| *v != verdict);
        if self.events.len() >= VERDICTS_KEPT {
            self.events.remove(0);
        }
        self.events.reserve_exact(1);
        self.events.push((verdict, written));
    }
}

pub use super::metrics::Tally;

/// Writes the objects' events, remembering what it wrote.
pub struct EventWriter {
    client: kube::Client,
    metrics: Option<super::metrics::KubeMetrics>,
    /// `reportingInstance`: this planner.
    instance: String,
    told: HashMap<(Kind, ObjectName), Told>,
}

impl std::fmt::Debug for EventWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWriter")
            .field("told", &self.told.len())
            .finish_non_exhaustive()
    }
}

/// One event to write.
#[derive(Debug, Clone)]
struct Due {
    kind: Kind,
    name: ObjectName,
    uid: Option<super::uid::Uid>,
    verdict: Verdict,
}

impl EventWriter {
    pub fn new(client: kube::Client, instance: String) -> EventWriter {
        EventWriter {
            client,
            metrics: None,
            instance,
            told: HashMap::new(),
        }
    }

    /// Counts the events written in `metrics`.
    pub fn with_metrics(mut self, metrics: super::metrics::KubeMetrics) -> EventWriter {
        self.metrics = Some(metrics);
        self
    }

    /// Writes an event for every object whose verdict changed, within its bucket.
    /// Returns how many were written and the objects per (kind, reason) (`Pending`:
    /// no verdict yet).
    pub async fn round(
        &mut self,
        translated: &Mutex<Translated>,
        outcomes: &[RecordOutcome],
    ) -> (usize, Tally) {
        let by_resource = super::status::ByResource::new(outcomes);
        let now = Instant::now();
        let mut tally = Tally::new();
        let due: Vec<Due> = {
            let t = translated
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut due = Vec::new();
            for (kind, name, standing) in t.iter() {
                if standing.skipped.is_some() {
                    continue;
                }
                let records = by_resource.get(&format!("{kind} {name}"));
                let expected = t
                    .accepted(kind)
                    .and_then(|o| o.get(name))
                    .map_or(0, |s| s.records());
                let problems: Vec<String> = standing
                    .problems
                    .iter()
                    .map(|p| format!("{}: {}", p.field, p.message))
                    .collect();
                let held = standing.lost_load_balancer.map(|_| {
                    t.accepted(kind)
                        .and_then(|o| o.get(name))
                        .and_then(|s| s.errors.first())
                        .map_or_else(
                            || {
                                "its load balancer has no address; keeping its last records"
                                    .to_string()
                            },
                            |e| e.message.clone(),
                        )
                });
                let v = verdict(
                    &problems,
                    held.as_deref(),
                    records,
                    expected.max(records.len()),
                );
                *tally
                    .entry((kind, v.as_ref().map_or("Pending", |v| v.reason)))
                    .or_default() += 1;
                let Some(v) = v else { continue };
                let told = self
                    .told
                    .entry((kind, name.clone()))
                    .or_insert_with(|| Told {
                        events: Vec::new(),
                        bucket: Bucket {
                            tokens: BURST,
                            at: now,
                        },
                    });
                if told.is_last(&v) {
                    continue;
                }
                if !told.bucket.take(now) {
                    continue;
                }
                due.push(Due {
                    kind,
                    name: name.clone(),
                    uid: standing.uid.clone(),
                    verdict: v,
                });
            }
            // Forgotten: the objects gone, and those now skipped.
            self.told
                .retain(|(k, n), _| t.standing(*k, n).is_some_and(|s| s.skipped.is_none()));
            due
        };
        let mut writes = 0;
        for d in due {
            let key = (d.kind, d.name.clone());
            let previous = self
                .told
                .get(&key)
                .and_then(|t| t.event(&d.verdict))
                .cloned();
            let result = match &previous {
                Some(w) => self.bump(&d, w).await.map(|()| Written {
                    count: w.count + 1,
                    ..w.clone()
                }),
                None => self.create(&d).await,
            };
            match result {
                Ok(w) => {
                    writes += 1;
                    if let Some(m) = &self.metrics {
                        m.event(d.kind, d.verdict.reason);
                    }
                    if let Some(t) = self.told.get_mut(&key) {
                        t.wrote(&d.verdict, w);
                    }
                }
                Err(e) => {
                    // Given back: the next round tries again.
                    if let Some(t) = self.told.get_mut(&key) {
                        t.bucket.tokens = (t.bucket.tokens + 1.0).min(BURST);
                    }
                    tracing::warn!(object = %format!("{} {}", d.kind, d.name), error = %e, "Kubernetes event not written; trying again next round.");
                }
            }
        }
        (writes, tally)
    }

    fn api(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &event_resource())
    }

    async fn create(&self, d: &Due) -> Result<Written, kube::Error> {
        let (namespace, object) = d.name.split_once('/').unwrap_or(("default", &d.name));
        let now = SystemTime::now();
        let body = event_body(
            d.kind,
            namespace,
            object,
            d.uid.as_ref().map(ToString::to_string).as_deref(),
            &d.verdict,
            now,
            &self.instance,
        );
        let obj: DynamicObject = serde_json::from_value(body).map_err(kube::Error::SerdeError)?;
        let created = self
            .api(namespace)
            .create(&PostParams::default(), &obj)
            .await?;
        Ok(Written {
            name: created.metadata.name.unwrap_or_default().into(),
            count: 1,
            first: now,
        })
    }

    async fn bump(&self, d: &Due, w: &Written) -> Result<(), kube::Error> {
        let (namespace, _) = d.name.split_once('/').unwrap_or(("default", &d.name));
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let patch = serde_json::json!({
            "count": w.count + 1,
            "lastTimestamp": now,
            "firstTimestamp": humantime::format_rfc3339_seconds(w.first).to_string(),
        });
        self.api(namespace)
            .patch(&w.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
    }
}

/// core/v1 Events.
pub fn event_resource() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Event".into(),
        plural: "events".into(),
    }
}

/// The `apiVersion` of each translated kind, as an event's `involvedObject` names it.
fn api_version(kind: Kind) -> &'static str {
    match kind {
        Kind::Service => "v1",
        Kind::Ingress => "networking.k8s.io/v1",
        Kind::DnsEndpoint => "externaldns.k8s.io/v1alpha1",
        _ => "gateway.networking.k8s.io/v1",
    }
}

/// The body of a new Event about `object` (generated name: the object's, a dot, and
/// a suffix the API server adds, as client-go names them).
pub fn event_body(
    kind: Kind,
    namespace: &str,
    object: &str,
    uid: Option<&str>,
    v: &Verdict,
    at: SystemTime,
    instance: &str,
) -> serde_json::Value {
    let at = humantime::format_rfc3339_seconds(at).to_string();
    let mut involved = serde_json::json!({
        "apiVersion": api_version(kind),
        "kind": kind.as_str(),
        "name": object,
        "namespace": namespace,
    });
    if let Some(uid) = uid {
        involved["uid"] = uid.into();
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": format!("{object}."), "namespace": namespace},
        "involvedObject": involved,
        "type": v.kind,
        "reason": v.reason,
        "message": v.message,
        "count": 1,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
    })
}

/// Runs an events round every second until `cancel`: `outcomes` reads the records'
/// states, or `None` when this planner must not write (a standby); `tally` gets the
/// objects per kind and verdict after each round.
pub fn run_events<F, T>(
    mut writer: EventWriter,
    translated: Arc<Mutex<Translated>>,
    outcomes: F,
    tally: T,
    cancel: CancellationToken,
) -> JoinHandle<()>
where
    F: Fn() -> Option<Vec<RecordOutcome>> + Send + 'static,
    T: Fn(&Tally) + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            if let Some(outcomes) = outcomes() {
                let (_, t) = writer.round(&translated, &outcomes).await;
                tally(&t);
            }
        }
    })
}

#[cfg(test)]
mod tests;
