//! What the Azure emulator plugs into the shared control API ([`crate::control`]),
//! and the routes only it has:
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
use super::{Inner, model};
use crate::control::{ControlPlane, to_json};
use crate::fault::FaultRule;
use crate::running::Shared;
use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The shared control API, with the seeds and tokens only this emulator has.
pub(crate) fn router() -> Router<Arc<Inner>> {
    crate::control::router::<Inner>()
        .route("/zones/{id}/recordsets", post(seed))
        .route("/tokens", post(issue_token).delete(revoke_tokens))
}

/// The body of `POST /_emulator/zones`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewZone {
    name: String,
    #[serde(default)]
    private: bool,
    #[serde(default)]
    subscription: Option<String>,
    #[serde(default)]
    resource_group: Option<String>,
}

impl ControlPlane for Inner {
    const CONTENT: &'static str = "recordsets";
    type NewZone = NewZone;
    type Model = model::State;

    fn shared(&self) -> &Shared<model::State> {
        &self.shared
    }

    fn check_fault(&self, rule: &FaultRule) -> Result<(), String> {
        super::validate_fault(rule)
    }

    fn zones_json(&self) -> Value {
        to_json(&self.zones())
    }

    fn create_zone_json(&self, z: NewZone) -> Result<Value, String> {
        self.create_zone(
            &z.name,
            z.private,
            z.subscription.as_deref(),
            z.resource_group.as_deref(),
        )
        .map(|id| json!({ "id": id }))
    }

    fn content_json(&self, zone: &str) -> Option<Value> {
        self.record_sets(zone).map(|v| to_json(&v))
    }
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

fn no_zone(zone: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({ "error": format!("no zone {zone}") })),
    )
        .into_response()
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
