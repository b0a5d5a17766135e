//! The status page on the admin port: `GET /` is a shell without data (inline CSS and
//! script, nothing fetched from elsewhere); its script fetches `GET /ui/live` (the
//! fragment of [`super::view`]) every two seconds and posts `POST /ui/approve`. Under
//! `[auth]` both need a bearer token, which the script asks for once and keeps in the
//! tab's `sessionStorage`: `/ui/live` a `read` token, the approval goes through the
//! gRPC `Approve` itself (role, scope, rate, metrics and log as for `dnsplane approve`).
use super::changes::{Recent, RecentChanges};
use super::view::{Live, render};
use crate::auth::{AuthError, Authenticator, Call};
use crate::engine::{Engine, RecordStatesQuery};
use crate::service::{PlannerService, status_to_pb};
use crate::state::RecordStateKind;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dnsplane_common::pb;
use dnsplane_common::pb::planner_server::Planner;
use std::sync::{Arc, LazyLock};
use std::time::SystemTime;

/// Conflicts listed on the page; the CLI lists them all.
const CONFLICTS_SHOWN: usize = 100;
/// Rows of "Recent changes".
const RECENT_SHOWN: usize = 25;

/// What the page's handlers read.
pub struct Page {
    pub engine: Arc<Engine>,
    pub auth: Arc<Authenticator>,
    /// Approvals go through its `Approve`.
    pub service: PlannerService,
    pub changes: Arc<dyn RecentChanges>,
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page").field("auth", &self.auth).finish()
    }
}

/// `/`, `/ui/live`, `/ui/approve`.
pub fn routes(page: Page) -> axum::Router {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/", get(shell))
        .route("/ui/live", get(live))
        .route("/ui/approve", post(approve))
        .with_state(Arc::new(page))
}

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// The script's hash for the Content-Security-Policy: only this script runs, so a
/// value that escaped the escaping could still not execute.
static SCRIPT_HASH: LazyLock<String> = LazyLock::new(|| {
    use base64::Engine as _;
    use sha2::Digest;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(SCRIPT.as_bytes()))
});

fn csp() -> HeaderValue {
    HeaderValue::from_str(&format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        *SCRIPT_HASH
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"))
}

async fn shell(State(page): State<Arc<Page>>) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>dnsplane planner</title><style>{STYLE}</style></head>\n<body data-auth=\"{auth}\"><header><h1>dnsplane planner</h1><span id=\"conn\" class=\"muted\"></span></header>\n<form id=\"login\" hidden><label>Bearer token <input id=\"token\" type=\"password\" autocomplete=\"off\" size=\"40\"></label> <button id=\"save\" type=\"submit\">Use token</button> <span class=\"muted\">kept in this tab only (sessionStorage)</span></form>\n<p id=\"message\" role=\"status\"></p>\n<main id=\"live\"><p class=\"muted\">Loading…</p></main>\n<script>{SCRIPT}</script></body></html>\n",
        auth = if page.auth.is_open() { "open" } else { "token" },
    );
    html(StatusCode::OK, body)
}

fn html(code: StatusCode, body: String) -> Response {
    (
        code,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (header::CONTENT_SECURITY_POLICY, csp()),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
        .into_response()
}

fn text(code: StatusCode, body: String) -> Response {
    (
        code,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body + "\n",
    )
        .into_response()
}

/// The HTTP status of a refused token.
fn refused(e: &AuthError) -> Response {
    let code = match e {
        AuthError::Missing
        | AuthError::Malformed
        | AuthError::Unknown
        | AuthError::Revoked { .. } => StatusCode::UNAUTHORIZED,
        AuthError::Limited { .. } => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::FORBIDDEN,
    };
    text(code, e.to_string())
}

async fn live(State(page): State<Arc<Page>>, headers: HeaderMap) -> Response {
    let authorization = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let caller = match page.auth.admit(authorization, Call::GetStatus) {
        Ok(c) => c,
        Err(e) => return refused(&e),
    };
    let status = status_to_pb(&page.engine.snapshot());
    let found = page.engine.record_states(&RecordStatesQuery {
        targets: Vec::new(),
        states: vec![RecordStateKind::Conflict],
        include_converged: false,
        after: None,
        name: None,
        page_size: CONFLICTS_SHOWN,
    });
    let recent: Recent = page.changes.recent(RECENT_SHOWN);
    let body = render(&Live {
        status: &status,
        conflicts: &found.records,
        conflicts_more: found.next.is_some(),
        recent: &recent,
        caller: &caller,
        now: SystemTime::now(),
    });
    html(StatusCode::OK, body)
}

/// The approve form's body.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveForm {
    zone: String,
    /// The target's account, where the zone has several targets.
    #[serde(default)]
    account: String,
    digest: String,
}

/// Approves through the gRPC `Approve`. Only a JSON body is taken: a cross-site form
/// cannot send one without the browser asking first (CORS), which this port refuses.
async fn approve(State(page): State<Arc<Page>>, headers: HeaderMap, body: String) -> Response {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the approval as application/json: {\"zone\": …, \"digest\": …}".into(),
        );
    }
    let form: ApproveForm = match serde_json::from_str(&body) {
        Ok(f) => f,
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("the approval body is not {{\"zone\": …, \"digest\": …}}: {e}"),
            );
        }
    };
    let mut req = tonic::Request::new(pb::ApproveRequest {
        zone: form.zone.clone(),
        account: form.account.clone(),
        digest: form.digest.clone(),
    });
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
    {
        req.metadata_mut().insert("authorization", v);
    }
    match page.service.approve(req).await {
        Ok(r) => {
            let digest = r
                .into_inner()
                .approved
                .map(|p| p.digest)
                .unwrap_or(form.digest);
            text(
                StatusCode::OK,
                format!(
                    "Approved plan {digest} of zone {}: it is applied now.",
                    form.zone
                ),
            )
        }
        Err(s) => text(http_code(s.code()), s.message().to_string()),
    }
}

/// The HTTP status for a gRPC one.
fn http_code(code: tonic::Code) -> StatusCode {
    use tonic::Code;
    match code {
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::InvalidArgument => StatusCode::BAD_REQUEST,
        Code::FailedPrecondition | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
