//! dnsplane as external-dns's webhook provider (`external-dns --provider=webhook`):
//! external-dns keeps its Kubernetes sources and its TXT registry; dnsplane does the
//! applying, with per-record results, conflict isolation, shared quotas and retries.
//!
//! What external-dns sends becomes the desired state of one pushed source
//! (`[webhook] source`, `push:external-dns` by default), persisted before it is
//! acknowledged like any push, and planned and applied by the engine like any source.
//! The protocol (INTEROP.md §1) and the rules a server must keep:
//! - `GET /` negotiates: the exact media type, and the configured zones as the domain
//!   filter;
//! - `GET /records` reports only that source's records, registry TXT records
//!   included, so that external-dns sees its ownership and nothing else (under
//!   `--registry=noop` and `--policy=sync` it deletes whatever it is shown), each with
//!   the labels it was given (kept, persisted, never planned nor sent to providers);
//! - `POST /adjustendpoints` answers each endpoint as `GET /records` will report it
//!   ([`convert`]), so a converged world plans nothing;
//! - `POST /records` is idempotent (a create of what is there, a delete of what is
//!   not, succeed) and answers 204 once the change is stored, whatever its size: an
//!   endpoint dnsplane cannot take is refused alone (in the source errors of
//!   `/status`, `dnsplane status`, the metrics and the log) and the rest applied; a
//!   body external-dns would never send (a name in no configured zone among them:
//!   its domain filter excludes it) is 400 and changes nothing; 5xx only while
//!   something is worth retrying (the store cannot be written).
use crate::config::{WebhookConfig, ZoneConfig};
use crate::engine::{Engine, Patch};
use crate::metrics::PlannerMetrics;
use crate::service::push::{PushOrigin, cross_check};
use crate::source::{EntryKey, SourceError};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use wire::{Changes, DomainFilter, Endpoint, MEDIA_TYPE};

pub(crate) mod convert;
pub(crate) mod posted;
pub mod wire;

/// Largest request body: external-dns caps what it decodes at 32 MiB (about 60,000
/// records); twice that leaves room for its changes, which carry old and new.
const MAX_BODY: usize = 64 << 20;
/// Refusals kept for status: enough to see what is wrong, bounded whatever is sent.
const MAX_REFUSALS: usize = 1000;

/// The webhook server's state.
#[derive(Debug)]
pub struct Webhook {
    engine: Arc<Engine>,
    metrics: PlannerMetrics,
    zones: Vec<ZoneConfig>,
    /// The pushed source's name, `push:<source>`.
    source: String,
    origin: PushOrigin,
    filter: DomainFilter,
    /// Endpoints refused and not since accepted or deleted, by what they are
    /// (`name type [set]`).
    refused: Mutex<BTreeMap<String, SourceError>>,
}

impl Webhook {
    pub fn new(engine: Arc<Engine>, metrics: PlannerMetrics, config: &WebhookConfig) -> Arc<Self> {
        let zones = engine.config().zones.clone();
        let include = zones
            .iter()
            .map(|z| {
                // external-dns matches names in their Unicode form.
                let ascii = z.name.as_str().trim_end_matches('.');
                idna::domain_to_unicode(ascii).0
            })
            .collect();
        Arc::new(Webhook {
            engine,
            metrics,
            zones,
            source: format!("push:{}", config.source),
            origin: PushOrigin::of(&config.source),
            filter: DomainFilter {
                include,
                exclude: Vec::new(),
            },
            refused: Mutex::new(BTreeMap::new()),
        })
    }

    /// Serves until `shutdown` is cancelled; HTTPS with `tls` (`[tls]`).
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        tls: Option<Arc<dnsplane_common::tls::PortTls>>,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let incoming = dnsplane_common::tls::Incoming::new(listener, tls, "webhook")?;
        tracing::info!(addr = %incoming.local_addr(), %scheme, source = %self.source, "Serving external-dns's webhook provider protocol.");
        axum::serve(incoming, self.router())
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    }

    pub fn router(self: Arc<Self>) -> Router {
        Router::new()
            .route("/", get(negotiate))
            .route("/records", get(records).post(apply))
            .route("/adjustendpoints", axum::routing::post(adjust))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self)
    }

    /// Applies external-dns's changes to the source; `Err` only when nothing could be
    /// stored (worth a retry).
    fn apply_changes(&self, changes: &Changes) -> Result<Applied, String> {
        let mut upserts = Vec::new();
        let mut refused: Vec<(String, String)> = Vec::new();
        let named = changes
            .create
            .iter()
            .map(|e| ("create", e))
            .enumerate()
            .chain(
                changes
                    .update_new
                    .iter()
                    .map(|e| ("updateNew", e))
                    .enumerate(),
            );
        for (i, (field, ep)) in named {
            match convert::to_entry(&self.origin, field, i, ep) {
                Ok(entry) => upserts.push(entry),
                Err(why) => refused.push((
                    key_of(ep).map_or_else(|| key_text(ep), |k| entry_text(&k)),
                    why,
                )),
            }
        }
        let upserted: HashSet<EntryKey> = upserts.iter().map(|e| e.entry_key()).collect();
        // An update's old key goes when its new one differs (a renamed endpoint).
        let deletes: Vec<EntryKey> = changes
            .delete
            .iter()
            .chain(&changes.update_old)
            .filter_map(key_of)
            .filter(|k| !upserted.contains(k))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        // The checks across records (zones, duplicates, CNAME clashes) name the upserts
        // they refuse by position: those are refused alone, the rest tried again.
        loop {
            let patch = Patch {
                upserts: upserts.clone(),
                deletes: deletes.clone(),
            };
            let zones = &self.zones;
            let source = &self.source;
            let result =
                self.engine.patch_source(&self.source, patch, |merged| {
                    match cross_check(zones, source.trim_start_matches("push:"), merged) {
                        errors if errors.is_empty() => Ok(()),
                        errors => Err(Failure::Invalid(errors)),
                    }
                });
            match result {
                Ok(done) => {
                    return Ok(Applied {
                        upserted: upserts.iter().map(|e| e.entry_key()).collect(),
                        deleted: deletes,
                        refused,
                        records: done.records,
                    });
                }
                Err(Failure::Store(e)) => return Err(e),
                Err(Failure::Invalid(errors)) => {
                    let at = |field: &str| {
                        upserts
                            .iter()
                            .position(|u| field.starts_with(&*u.origin.location))
                    };
                    let mut drop: Vec<(usize, String)> = errors
                        .iter()
                        .filter_map(|e| at(&e.field).map(|i| (i, e.to_string())))
                        .collect();
                    if drop.is_empty() {
                        // Not attributable to one upsert: refuse them all, keep the deletes.
                        drop = (0..upserts.len()).map(|i| (i, describe(&errors))).collect();
                    }
                    drop.sort_by_key(|d| std::cmp::Reverse(d.0));
                    drop.dedup_by_key(|d| d.0);
                    for (i, why) in drop {
                        let e = upserts.remove(i);
                        refused.push((entry_text(&e.entry_key()), why));
                    }
                }
            }
        }
    }

    /// Keeps the refusals of `applied` and forgets those its accepted and deleted keys
    /// answer; tells the engine, which shows them with the source errors.
    fn remember(&self, applied: &Applied) {
        let mut refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for k in applied.upserted.iter().chain(&applied.deleted) {
            refused.remove(&entry_text(k));
        }
        for (text, why) in &applied.refused {
            if refused.len() >= MAX_REFUSALS && !refused.contains_key(text) {
                break;
            }
            refused.insert(
                text.clone(),
                SourceError {
                    source: self.source.clone(),
                    location: "external-dns webhook".into(),
                    record: text.clone(),
                    message: why.clone(),
                },
            );
        }
        let list = refused.values().cloned().collect();
        drop(refused);
        self.engine.set_source_refusals(&self.source, list);
    }
}

/// What one `POST /records` did.
#[derive(Debug)]
struct Applied {
    upserted: Vec<EntryKey>,
    deleted: Vec<EntryKey>,
    /// (what the endpoint is, why it was refused)
    refused: Vec<(String, String)>,
    records: usize,
}

enum Failure {
    Invalid(Vec<dnsplane_common::convert::FieldError>),
    Store(String),
}

impl From<crate::store::StoreError> for Failure {
    fn from(e: crate::store::StoreError) -> Self {
        Failure::Store(e.to_string())
    }
}

fn describe(errors: &[dnsplane_common::convert::FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// An endpoint's key, when its name, type and set identifier can be read.
/// The first created or updated endpoint whose name falls in no zone, named by its
/// field, with the nearest zone ([`crate::source::zones`]).
fn outside_zones(zones: &[ZoneConfig], changes: &Changes) -> Option<String> {
    let named = [
        ("create", &changes.create),
        ("updateNew", &changes.update_new),
    ];
    named.into_iter().find_map(|(field, eps)| {
        eps.iter().enumerate().find_map(|(i, ep)| {
            let name = dnsplane_common::Name::parse(&ep.dns_name).ok()?;
            // Short: the answer's body is cut at 80 characters; the hint goes first.
            convert::zone_of(zones, &name).is_none().then(|| {
                let hint = crate::source::zones::did_you_mean(zones, &name).unwrap_or_default();
                format!("{field}[{i}].dnsName: in no configured zone, {hint} ({name})")
            })
        })
    })
}

fn key_of(ep: &Endpoint) -> Option<EntryKey> {
    Some(EntryKey {
        name: dnsplane_common::Name::parse(&ep.dns_name).ok()?,
        rtype: dnsplane_common::RecordType::parse(&ep.record_type).ok()?,
        set: dnsplane_common::SetId::new(&ep.set_identifier).ok()?,
    })
}

fn key_text(ep: &Endpoint) -> String {
    let mut text = format!(
        "{} {}",
        dnsplane_common::error::excerpt(&ep.dns_name),
        dnsplane_common::error::excerpt(&ep.record_type)
    );
    if !ep.set_identifier.is_empty() {
        text.push_str(&format!(
            " [set {:?}]",
            dnsplane_common::error::excerpt(&ep.set_identifier)
        ));
    }
    text
}

fn entry_text(k: &EntryKey) -> String {
    match k.set.is_none() {
        true => format!("{} {}", k.name, k.rtype),
        false => format!("{} {} [set {:?}]", k.name, k.rtype, k.set.as_str()),
    }
}

fn typed(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE))],
        body,
    )
        .into_response()
}

fn refuse(w: &Webhook, call: &str, status: StatusCode, why: String) -> Response {
    w.metrics.webhook_request(call, status.as_u16());
    tracing::warn!(call, status = status.as_u16(), error = %why, "Webhook request refused.");
    // Small: external-dns drains at most 1 MiB of an error body.
    (status, dnsplane_common::error::excerpt(&why)).into_response()
}

async fn negotiate(State(w): State<Arc<Webhook>>) -> Response {
    w.metrics.webhook_request("negotiate", 200);
    typed(
        StatusCode::OK,
        serde_json::to_string(&w.filter).unwrap_or_else(|_| "{}".into()),
    )
}

async fn records(State(w): State<Arc<Webhook>>) -> Response {
    let body = Engine::cpu(|| {
        let endpoints: Vec<Endpoint> = w
            .engine
            .source_records(&w.source)
            .iter()
            .map(|(rrset, labels)| convert::report_labelled(rrset, labels))
            .collect();
        serde_json::to_string(&endpoints)
    });
    match body {
        Ok(body) => {
            w.metrics.webhook_request("records", 200);
            typed(StatusCode::OK, body)
        }
        Err(e) => refuse(
            &w,
            "records",
            StatusCode::INTERNAL_SERVER_ERROR,
            e.to_string(),
        ),
    }
}

async fn adjust(State(w): State<Arc<Webhook>>, body: Bytes) -> Response {
    let parsed: Result<Vec<Endpoint>, _> = Engine::cpu(|| serde_json::from_slice(&body));
    let endpoints = match parsed {
        Ok(e) => e,
        Err(e) => {
            return refuse(
                &w,
                "adjust",
                StatusCode::BAD_REQUEST,
                format!("not a JSON list of endpoints: {e}"),
            );
        }
    };
    let adjusted: Vec<Endpoint> = Engine::cpu(|| {
        endpoints
            .iter()
            .map(|ep| convert::adjust(&w.zones, &w.origin, ep))
            .collect()
    });
    match serde_json::to_string(&adjusted) {
        Ok(body) => {
            w.metrics.webhook_request("adjust", 200);
            typed(StatusCode::OK, body)
        }
        Err(e) => refuse(
            &w,
            "adjust",
            StatusCode::INTERNAL_SERVER_ERROR,
            e.to_string(),
        ),
    }
}

async fn apply(State(w): State<Arc<Webhook>>, body: Bytes) -> Response {
    // Only the leader takes changes: a standby names it (external-dns retries).
    if let Err(e) = w.engine.writable().await {
        return refuse(&w, "apply", StatusCode::SERVICE_UNAVAILABLE, e.to_string());
    }
    let parsed: Result<Changes, _> = Engine::cpu(|| serde_json::from_slice(&body));
    let changes = match parsed {
        Ok(c) => c,
        Err(e) => {
            return refuse(
                &w,
                "apply",
                StatusCode::BAD_REQUEST,
                format!("not external-dns's Changes: {e}"),
            );
        }
    };
    if changes.update_old.len() != changes.update_new.len() {
        return refuse(
            &w,
            "apply",
            StatusCode::BAD_REQUEST,
            format!(
                "updateOld has {} endpoints and updateNew {}: they pair by position",
                changes.update_old.len(),
                changes.update_new.len()
            ),
        );
    }
    // A name in no configured zone: external-dns filters by the zones `GET /` gave
    // it, so this is a body it would never send (a typo in a domain, another
    // planner's zone). Refused whole: a delete beside it must not go through alone.
    if let Some(why) = outside_zones(&w.zones, &changes) {
        return refuse(&w, "apply", StatusCode::BAD_REQUEST, why);
    }
    let w2 = w.clone();
    let result = Engine::cpu(move || w2.apply_changes(&changes));
    match result {
        Ok(applied) => {
            w.remember(&applied);
            w.metrics.webhook_refused(applied.refused.len());
            w.metrics.webhook_request("apply", 204);
            for (record, why) in &applied.refused {
                tracing::warn!(record = %record, error = %why, "An endpoint from external-dns was refused; the rest of its changes are applied.");
            }
            tracing::info!(
                upserted = applied.upserted.len(),
                deleted = applied.deleted.len(),
                refused = applied.refused.len(),
                records = applied.records,
                source = %w.source,
                "Changes from external-dns stored."
            );
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => refuse(
            &w,
            "apply",
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "cannot store the changes ({e}); nothing changed, external-dns retries at its next loop"
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
