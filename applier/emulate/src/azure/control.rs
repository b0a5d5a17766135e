//! The unsigned control API under `/_emulator/`, for tests that run the emulator as a
//! separate process (JSON in and out), as the other emulators':
//!
//! - `POST /_emulator/faults`: one fault rule or a list → `{"added": n}`; an invalid
//!   rule → 400 `{"error": "…"}`; `GET` lists them with counters; `DELETE` clears;
//! - `GET /_emulator/stats`: [`Stats`](super::Stats);
//! - `GET /_emulator/zones`: the zones ([`ZoneView`](super::ZoneView));
//!   `POST /_emulator/zones` `{"name": …, "private": false, "subscription": …,
//!   "resource_group": …}` makes one → 201 `{"id": "…"}`;
//! - `GET /_emulator/zones/{zone}/recordsets` (`zone`: name or URL-encoded ARM id): the
//!   record sets ([`RecordSetView`](super::RecordSetView)), 404 for an unknown zone;
//! - `POST /_emulator/zones/{zone}/recordsets` (seeds): `[{"type": "A", "name":
//!   "www", "properties": {…}}, …]` written as PUTs would be, without token, quota or
//!   faults → `{"written": n}`;
//! - `POST /_emulator/tokens` `{"lifetime": "1h"}` → `{"access_token": …}`; `DELETE
//!   /_emulator/tokens` forgets every issued token (clients must fetch anew).
use super::Inner;
use crate::fault::FaultRule;
use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn router() -> Router<Arc<Inner>> {
    Router::new()
        .route(
            "/faults",
            get(list_faults).post(add_faults).delete(clear_faults),
        )
        .route("/stats", get(stats))
        .route("/zones", get(zones).post(create_zone))
        .route("/zones/{zone}/recordsets", get(record_sets).post(seed))
        .route("/tokens", post(issue_token).delete(revoke_tokens))
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    Many(Vec<FaultRule>),
    One(Box<FaultRule>),
}

async fn add_faults(State(inner): State<Arc<Inner>>, body: axum::body::Bytes) -> Response {
    let rules = match serde_json::from_slice::<OneOrMany>(&body) {
        Ok(OneOrMany::Many(v)) => v,
        Ok(OneOrMany::One(r)) => vec![*r],
        Err(_) => {
            return match serde_json::from_slice::<FaultRule>(&body) {
                Err(e) => bad_request(format!("fault rule: {e}")),
                Ok(_) => bad_request("fault rule: expected a rule or a list of rules".into()),
            };
        }
    };
    for (i, r) in rules.iter().enumerate() {
        if let Err(e) = super::validate_fault(r) {
            return bad_request(format!("fault rule {i}: {e}"));
        }
    }
    let n = rules.len();
    for r in rules {
        inner.faults.add(r);
    }
    (StatusCode::OK, Json(json!({ "added": n }))).into_response()
}

async fn list_faults(State(inner): State<Arc<Inner>>) -> Response {
    Json(inner.faults.status()).into_response()
}

async fn clear_faults(State(inner): State<Arc<Inner>>) -> StatusCode {
    inner.faults.clear();
    StatusCode::NO_CONTENT
}

async fn stats(State(inner): State<Arc<Inner>>) -> Response {
    Json(inner.stats().clone()).into_response()
}

async fn zones(State(inner): State<Arc<Inner>>) -> Response {
    Json(inner.zones()).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewZone {
    name: String,
    #[serde(default)]
    private: bool,
    #[serde(default)]
    subscription: Option<String>,
    #[serde(default)]
    resource_group: Option<String>,
}

async fn create_zone(State(inner): State<Arc<Inner>>, body: axum::body::Bytes) -> Response {
    let z: NewZone = match serde_json::from_slice(&body) {
        Ok(z) => z,
        Err(e) => return bad_request(format!("zone: {e}")),
    };
    match inner.create_zone(
        &z.name,
        z.private,
        z.subscription.as_deref(),
        z.resource_group.as_deref(),
    ) {
        Ok(id) => (StatusCode::CREATED, Json(json!({ "id": id }))).into_response(),
        Err(e) => bad_request(format!("zone: {e}")),
    }
}

fn no_zone(zone: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({ "error": format!("no zone {zone}") })),
    )
        .into_response()
}

async fn record_sets(State(inner): State<Arc<Inner>>, Path(zone): Path<String>) -> Response {
    match inner.record_sets(&zone) {
        Some(v) => Json(v).into_response(),
        None => no_zone(&zone),
    }
}

#[derive(Deserialize)]
struct SeedSet {
    #[serde(rename = "type")]
    rtype: String,
    name: String,
    #[serde(default)]
    properties: Value,
}

async fn seed(
    State(inner): State<Arc<Inner>>,
    Path(zone): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let sets: Vec<SeedSet> = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(format!("record sets: {e}")),
    };
    if inner.record_sets(&zone).is_none() {
        return no_zone(&zone);
    }
    for (i, s) in sets.iter().enumerate() {
        let body = json!({ "properties": s.properties }).to_string();
        if let Err(e) = inner.seed(&zone, &s.rtype, &s.name, body.as_bytes()) {
            return bad_request(format!(
                "record set {i} ({} {}): {}",
                s.name, s.rtype, e.message
            ));
        }
    }
    Json(json!({ "written": sets.len() })).into_response()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NewToken {
    #[serde(default, with = "humantime_serde::option")]
    lifetime: Option<Duration>,
}

async fn issue_token(State(inner): State<Arc<Inner>>, body: axum::body::Bytes) -> Response {
    let t: NewToken = if body.is_empty() {
        NewToken::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(t) => t,
            Err(e) => return bad_request(format!("token: {e}")),
        }
    };
    let lifetime = t.lifetime.unwrap_or(inner.opts.token_lifetime);
    let token = inner.issuer.issue(lifetime);
    Json(json!({ "access_token": token, "expires_in": lifetime.as_secs() })).into_response()
}

async fn revoke_tokens(State(inner): State<Arc<Inner>>) -> Response {
    Json(json!({ "revoked": inner.issuer.revoke_all() })).into_response()
}
