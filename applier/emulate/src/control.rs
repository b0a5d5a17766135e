//! The unsigned control API every emulator serves under `/_emulator/`, for tests that
//! run an emulator as a separate process (JSON in and out). One router for all: an
//! emulator plugs in only what differs — how a zone is created, what a zone's content
//! is called, which fault operations it knows — through [`ControlPlane`].
//!
//! - `POST /_emulator/faults`: one fault rule, or a list of them → `{"added": n}`; an
//!   invalid rule → 400 `{"error": "…"}` naming the rule and the field, and no rule of
//!   the list is added;
//! - `GET /_emulator/faults`: the rules with how often each matched and fired;
//! - `DELETE /_emulator/faults`: removes every rule → 204;
//! - `GET /_emulator/stats`: the emulator's counters;
//! - `GET /_emulator/zones`: the zones; `POST /_emulator/zones` creates one (the body
//!   is the emulator's [`ControlPlane::NewZone`]) → 201 with its id;
//! - `GET /_emulator/zones/{id}/{content}`: the zone's records or record sets
//!   ([`ControlPlane::CONTENT`]), 404 for an unknown zone.
use crate::fault::{FaultRule, FaultSet};
use crate::running::Shared;
use crate::server::Stopping;
use crate::stats::Stats;
use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::{Arc, MutexGuard};

/// What an emulator's state offers its control API, and the state every emulator
/// holds alike ([`Shared`]) for the request pipeline's fault handling.
pub trait ControlPlane: Send + Sync + 'static {
    /// The last path segment of a zone's content (`rrsets`, `records`).
    const CONTENT: &'static str;
    /// The body of `POST /_emulator/zones`.
    type NewZone: DeserializeOwned;
    /// The emulator's model (zones and their content).
    type Model: Send;

    /// The state every emulator holds alike.
    fn shared(&self) -> &Shared<Self::Model>;
    /// Whether `rule` names operations this emulator has (the message names the field).
    fn check_fault(&self, rule: &FaultRule) -> Result<(), String>;
    /// Every zone, as the emulator shows them.
    fn zones_json(&self) -> Value;
    /// Creates a zone: the answer's body (its id), or why not.
    fn create_zone_json(&self, zone: Self::NewZone) -> Result<Value, String>;
    /// A zone's content; `None` for an unknown zone.
    fn content_json(&self, zone: &str) -> Option<Value>;

    /// The emulator's fault rules.
    fn faults(&self) -> &FaultSet {
        &self.shared().faults
    }

    /// The model, locked (a poisoned lock is taken over: a panicked handler leaves
    /// the model as a failed request would).
    fn lock(&self) -> MutexGuard<'_, Self::Model> {
        self.shared()
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The counters, locked.
    fn stats(&self) -> MutexGuard<'_, Stats> {
        self.shared()
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Ends held requests early when the server stops.
    fn stopping(&self) -> &Stopping {
        &self.shared().stopping
    }
}

/// The control API's router, to be nested under `/_emulator`.
/// An emulator's whole app: this control API under `/_emulator`, and every other path
/// to `api`, the emulated API's one handler (which routes by itself, as the provider
/// does: by method and path, or by an action parameter).
pub fn with_api<C: ControlPlane, H, T>(api: H) -> Router<Arc<C>>
where
    H: axum::handler::Handler<T, Arc<C>>,
    T: 'static,
{
    Router::new().nest("/_emulator", router()).fallback(api)
}

pub fn router<C: ControlPlane>() -> Router<Arc<C>> {
    Router::new()
        .route(
            "/faults",
            get(list_faults::<C>)
                .post(add_faults::<C>)
                .delete(clear_faults::<C>),
        )
        .route("/stats", get(stats::<C>))
        .route("/zones", get(zones::<C>).post(create_zone::<C>))
        .route(&format!("/zones/{{id}}/{}", C::CONTENT), get(content::<C>))
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

async fn add_faults<C: ControlPlane>(State(c): State<Arc<C>>, body: axum::body::Bytes) -> Response {
    let rules = match serde_json::from_slice::<OneOrMany>(&body) {
        Ok(OneOrMany::Many(v)) => v,
        Ok(OneOrMany::One(r)) => vec![*r],
        Err(_) => {
            // Parse as one rule again for a message that names the field.
            return match serde_json::from_slice::<FaultRule>(&body) {
                Err(e) => bad_request(format!("fault rule: {e}")),
                Ok(_) => bad_request("fault rule: expected a rule or a list of rules".into()),
            };
        }
    };
    for (i, r) in rules.iter().enumerate() {
        if let Err(e) = c.check_fault(r) {
            return bad_request(format!("fault rule {i}: {e}"));
        }
    }
    let n = rules.len();
    for r in rules {
        c.faults().add(r);
    }
    (StatusCode::OK, Json(json!({ "added": n }))).into_response()
}

async fn list_faults<C: ControlPlane>(State(c): State<Arc<C>>) -> Response {
    Json(c.faults().status()).into_response()
}

async fn clear_faults<C: ControlPlane>(State(c): State<Arc<C>>) -> StatusCode {
    c.faults().clear();
    StatusCode::NO_CONTENT
}

async fn stats<C: ControlPlane>(State(c): State<Arc<C>>) -> Response {
    Json(to_json(&*c.stats())).into_response()
}

async fn zones<C: ControlPlane>(State(c): State<Arc<C>>) -> Response {
    Json(c.zones_json()).into_response()
}

async fn create_zone<C: ControlPlane>(
    State(c): State<Arc<C>>,
    body: axum::body::Bytes,
) -> Response {
    let z: C::NewZone = match serde_json::from_slice(&body) {
        Ok(z) => z,
        Err(e) => return bad_request(format!("zone: {e}")),
    };
    match c.create_zone_json(z) {
        Ok(v) => (StatusCode::CREATED, Json(v)).into_response(),
        Err(e) => bad_request(format!("zone: {e}")),
    }
}

async fn content<C: ControlPlane>(State(c): State<Arc<C>>, Path(id): Path<String>) -> Response {
    match c.content_json(&id) {
        Some(v) => Json(v).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": format!("no zone {id}") })),
        )
            .into_response(),
    }
}

/// A value as JSON, for [`ControlPlane`]'s answers (the emulators' views serialize
/// infallibly: plain structs of strings and numbers).
pub fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}
