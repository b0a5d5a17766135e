//! The unsigned control API under `/_emulator/`, for tests that run the emulator as a
//! separate process (JSON in and out), as the Route 53 emulator's:
//!
//! - `POST /_emulator/faults`: one fault rule, or a list of them → `{"added": n}`; an
//!   invalid rule → 400 `{"error": "…"}`;
//! - `GET /_emulator/faults`: the rules with how often each matched and fired;
//! - `DELETE /_emulator/faults`: removes every rule → 204;
//! - `GET /_emulator/stats`: [`Stats`](super::Stats);
//! - `GET /_emulator/zones`: the zones; `POST /_emulator/zones` `{"name": …}` creates
//!   one → `{"id": "…"}`;
//! - `GET /_emulator/zones/{id}/records`: the zone's records
//!   ([`RecordView`](super::RecordView)), 404 for an unknown zone.
use super::Inner;
use crate::fault::FaultRule;
use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

pub(crate) fn router() -> Router<Arc<Inner>> {
    Router::new()
        .route(
            "/faults",
            get(list_faults).post(add_faults).delete(clear_faults),
        )
        .route("/stats", get(stats))
        .route("/zones", get(zones).post(create_zone))
        .route("/zones/{id}/records", get(records))
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
}

async fn create_zone(State(inner): State<Arc<Inner>>, body: axum::body::Bytes) -> Response {
    let z: NewZone = match serde_json::from_slice(&body) {
        Ok(z) => z,
        Err(e) => return bad_request(format!("zone: {e}")),
    };
    match inner.create_zone(&z.name, None, None) {
        Ok(id) => (StatusCode::CREATED, Json(json!({ "id": id }))).into_response(),
        Err(e) => bad_request(format!("zone: {}", e.message)),
    }
}

async fn records(State(inner): State<Arc<Inner>>, Path(id): Path<String>) -> Response {
    match inner.records(&id) {
        Some(v) => Json(v).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": format!("no zone {id}") })),
        )
            .into_response(),
    }
}
