//! Answers in Cloudflare's form (JSON, `cf-ray`, the rate-limit and `Retry-After`
//! headers), the errors fault rules give, and the query-string decoding the calls
//! share: the HTTP edge of the emulator, apart from its routing ([`super::handle`]).
use super::errors::ApiError;
use super::model;
use super::ratelimit::RateLimiter;
use crate::fault::{FaultAction, FaultRule};
use axum::body::Body;
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// The rate-limit headers to put on an answer.
pub(super) type RlHeaders = Option<(String, String)>;

pub(super) fn json_response(
    status: u16,
    body: &Value,
    rl: &RlHeaders,
    retry_after: Option<Duration>,
) -> Response {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    let ray = model::new_id();
    if let Ok(v) = http::HeaderValue::from_str(&format!("{}-EMU", &ray[..16])) {
        h.insert("cf-ray", v);
    }
    if let Some((r, p)) = rl {
        if let Ok(v) = http::HeaderValue::from_str(r) {
            h.insert("ratelimit", v);
        }
        if let Ok(v) = http::HeaderValue::from_str(p) {
            h.insert("ratelimit-policy", v);
        }
    }
    if let Some(after) = retry_after {
        let secs = after.as_secs_f64().ceil().max(1.0) as u64;
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_str(&secs.to_string()).expect("digits"),
        );
    }
    resp
}

pub(super) fn error_response(e: &ApiError, rl: &RlHeaders) -> Response {
    json_response(e.status, &e.body(), rl, e.retry_after)
}

/// The answer a terminal fault rule gives, in Cloudflare's words.
pub(super) fn fault_error(rule: &FaultRule, limiter: &RateLimiter) -> ApiError {
    let mut e = match rule.action {
        FaultAction::Throttle => {
            let o = limiter.opts();
            ApiError::rate_limited(o.requests, o.window, Duration::from_secs(1))
        }
        FaultAction::AmbiguousAfterCommit => ApiError::server(rule.status.unwrap_or(502)),
        _ => ApiError::server(rule.status.unwrap_or(500)),
    };
    if let Some(s) = rule.status {
        e.status = s;
    }
    if let Some(c) = rule.code.as_ref().and_then(|c| c.parse().ok()) {
        e.code = c;
    }
    if let Some(m) = &rule.message {
        e.message = m.clone();
    }
    if rule.retry_after.is_some() {
        e.retry_after = rule.retry_after;
    }
    e
}

pub(super) fn parse_query(raw: &str) -> HashMap<String, String> {
    url_pairs(raw).collect()
}

/// `application/x-www-form-urlencoded` pairs.
fn url_pairs(raw: &str) -> impl Iterator<Item = (String, String)> + '_ {
    raw.split('&').filter(|p| !p.is_empty()).map(|p| {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        (decode(k), decode(v))
    })
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
