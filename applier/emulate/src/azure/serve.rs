//! The request pipeline and ARM's answers: body limit → route → token → api-version →
//! subscription quota → fault rules → the call; every answer JSON with
//! `x-ms-request-id`, `x-ms-correlation-request-id` and the quota header of its kind.
use super::errors::{ArmError, retry_secs};
use super::ops::{self, Ctx};
use super::route::Op;
use super::throttle::Class;
use super::{Inner, MAX_BODY_BYTES, model};
use crate::control::ControlPlane;
use crate::fault::{FaultAction, FaultRule};
use crate::running::{Terminal, decide_faults, terminal_fault};
use crate::server::ConnKill;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State as AxState};
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The quota header to put on an answer: (header name, requests left).
type Quota = Option<(Class, u64)>;

fn response(status: u16, body: Option<&Value>, quota: Quota) -> Response {
    let mut resp = match body {
        Some(b) => Response::new(Body::from(b.to_string())),
        None => Response::new(Body::empty()),
    };
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    let h = resp.headers_mut();
    if body.is_some() {
        h.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json; charset=utf-8"),
        );
    }
    for name in ["x-ms-request-id", "x-ms-correlation-request-id"] {
        if let Ok(v) = http::HeaderValue::from_str(&model::new_etag()) {
            h.insert(name, v);
        }
    }
    if let Some((class, left)) = quota
        && let Ok(v) = http::HeaderValue::from_str(&left.to_string())
    {
        h.insert(class.header(), v);
    }
    resp
}

pub(super) fn error_response(e: &ArmError, quota: Quota) -> Response {
    let mut r = response(e.status, Some(&e.body()), quota);
    let h = r.headers_mut();
    if let Some(after) = e.retry_after {
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_str(&retry_secs(after).to_string()).expect("digits"),
        );
    }
    if e.www_authenticate {
        h.insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static(
                "Bearer authorization_uri=\"https://login.windows.net/\", error=\"invalid_token\", error_description=\"The authentication failed because of missing 'Authorization' header or an invalid token.\"",
            ),
        );
    }
    r
}

/// The answer a terminal fault rule gives, in ARM's words.
fn fault_error(rule: &FaultRule) -> ArmError {
    let mut e = match rule.action {
        FaultAction::Throttle => ArmError::throttled("write", Duration::from_secs(1)),
        FaultAction::AmbiguousAfterCommit => ArmError::server(rule.status.unwrap_or(502)),
        _ => ArmError::server(rule.status.unwrap_or(500)),
    };
    if let Some(s) = rule.status {
        e.status = s;
    }
    if let Some(c) = &rule.code {
        e.code = c.clone();
    }
    if let Some(m) = &rule.message {
        e.message = m.clone();
    }
    if rule.retry_after.is_some() {
        e.retry_after = rule.retry_after;
    }
    e
}

/// `application/x-www-form-urlencoded` pairs (query strings and the token form).
pub(super) fn form_pairs(raw: &str) -> HashMap<String, String> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let d = |s: &str| super::route::percent_decode(&s.replace('+', " "));
            (d(k), d(v))
        })
        .collect()
}

/// How a call ended: ARM's answer, ARM's error, or the token endpoint's (AAD's) error.
enum Outcome {
    Done(u16, Option<Value>),
    Arm(ArmError),
    Aad(u16, Value),
}

/// Every request outside `/_emulator/`.
pub(super) async fn handle(
    AxState(inner): AxState<Arc<Inner>>,
    ConnectInfo(kill): ConnectInfo<ConnKill>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        let e = ArmError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "The request body is larger than the {MAX_BODY_BYTES} bytes the emulator accepts."
            ),
        );
        return error_response(&e, None);
    };
    let path = parts.uri.path().to_string();
    let op = match Op::route(&parts.method, &path) {
        Ok(op) => op,
        Err(e) => return error_response(&e, None),
    };
    *inner
        .stats()
        .requests
        .entry(op.name().to_string())
        .or_default() += 1;
    let query = form_pairs(parts.uri.query().unwrap_or(""));

    if !matches!(op, Op::Token { .. }) {
        if let Err(e) =
            inner
                .issuer
                .check(&parts.headers, &inner.opts.tokens, inner.opts.verify_tokens)
        {
            inner.stats().auth_failures += 1;
            return error_response(&e, None);
        }
        let kind = op.kind().expect("an ARM call has a resource kind");
        match query.get("api-version") {
            None => return error_response(&ArmError::missing_api_version(), None),
            Some(v) if !kind.api_versions().contains(&v.as_str()) => {
                return error_response(
                    &ArmError::unsupported_api_version(v, kind.segment(), kind.api_versions()),
                    None,
                );
            }
            Some(_) => {}
        }
    }

    // The subscription quota (the token endpoint is AAD's, not ARM's).
    let mut quota: Quota = None;
    if let Some(sub) = op.subscription() {
        match inner.throttle.take(sub, op.class()) {
            Ok(left) => quota = Some((op.class(), left)),
            Err((left, wait)) => {
                inner.stats().throttled += 1;
                return error_response(
                    &ArmError::throttled(op.class().word(), wait),
                    Some((op.class(), left)),
                );
            }
        }
    }

    // Faults.
    let zone_keys: Vec<String> = op
        .zone()
        .map(|z| {
            let id = format!(
                "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/{}/{}",
                z.sub,
                z.rg,
                z.kind.segment(),
                z.zone
            );
            vec![z.zone.clone(), id]
        })
        .unwrap_or_default();
    let keys: Vec<&str> = zone_keys.iter().map(String::as_str).collect();
    let decision = decide_faults(&*inner, op.fault_op(), op.name(), &keys);
    if !inner.stopping().sleep(decision.delay_before).await {
        return error_response(&ArmError::server(503), quota);
    }

    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let run = |inner: &Inner| -> Outcome {
        if let Op::Token { tenant } = &op {
            let form = form_pairs(std::str::from_utf8(&body).unwrap_or(""));
            return match inner.issuer.token_endpoint(
                tenant,
                &form,
                &inner.opts.clients,
                inner.opts.token_lifetime,
            ) {
                Ok(v) => {
                    inner.stats().tokens_issued += 1;
                    Outcome::Done(200, Some(v))
                }
                Err(e) => {
                    inner.stats().auth_failures += 1;
                    Outcome::Aad(e.status, e.body)
                }
            };
        }
        let cx = Ctx {
            query: &query,
            headers: &parts.headers,
            body: &body,
            base: format!("http://{host}"),
            path: &path,
            opts: &inner.opts,
        };
        let r = ops::run(&mut inner.lock(), &op, &cx);
        match r {
            Ok(reply) => {
                if reply.committed {
                    inner.stats().changes_committed += 1;
                }
                Outcome::Done(reply.status, reply.body)
            }
            Err(e) => {
                if e.status == 412 {
                    inner.stats().preconditions_failed += 1;
                }
                Outcome::Arm(e)
            }
        }
    };

    let commit = || {
        let _ = run(&inner);
    };
    if let Some(t) = terminal_fault(&*inner, &decision, &kill, commit).await {
        return match t {
            Terminal::Timeout => error_response(&ArmError::server(504), quota),
            Terminal::Fault(rule) => error_response(&fault_error(rule), quota),
        };
    }

    let result = run(&inner);
    inner.stopping().sleep(decision.delay_after).await;
    match result {
        Outcome::Done(status, body) => response(status, body.as_ref(), quota),
        Outcome::Aad(status, body) => response(status, Some(&body), None),
        Outcome::Arm(e) => {
            tracing::debug!(code = %e.code, op = op.name(), "Request answered with an error.");
            error_response(&e, quota)
        }
    }
}
