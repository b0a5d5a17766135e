//! The HTTP request pipeline of the Cloud DNS emulator: body size limit → route →
//! bearer token → quota → faults → the operation, and the JSON answers (Google's
//! error envelope included) it writes.
use super::*;

fn json_response(status: u16, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    resp
}

fn error_response(e: &ApiError) -> Response {
    let mut resp = json_response(e.status, e.body());
    if e.html.is_some() {
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/html; charset=UTF-8"),
        );
    }
    if let Some(after) = e.retry_after {
        let secs = after.as_secs_f64().ceil() as u64;
        resp.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_str(&secs.to_string()).expect("digits"),
        );
    }
    resp
}

/// The answer a terminal fault rule gives, in Google's words.
fn fault_error(rule: &FaultRule, project: &str, op: &Op) -> ApiError {
    let status = rule.status.unwrap_or(match rule.action {
        FaultAction::Throttle => 429,
        FaultAction::AmbiguousAfterCommit => 502,
        _ => 500,
    });
    let mut e = match (rule.action, status) {
        (FaultAction::Throttle, s) | (_, s @ 429) => {
            ApiError::rate_limited(s, project, op.is_write())
        }
        (_, 404) => ApiError::no_such_zone(op.zone().unwrap_or("")),
        (_, s @ 500..=599) => ApiError::server(s),
        (_, 401) => ApiError::invalid_credentials(),
        (_, 403) => ApiError::forbidden(),
        (_, s) => ApiError::new(s, "invalid", "Invalid request."),
    };
    if let Some(c) = &rule.code {
        e.html = None;
        for i in &mut e.items {
            i.reason = c.clone();
        }
    }
    if let Some(m) = &rule.message {
        e.html = None;
        e.message = m.clone();
        for i in &mut e.items {
            i.message = m.clone();
        }
    }
    e.retry_after = rule.retry_after;
    e
}

fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let v = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
        .filter(|t| !t.is_empty())
}

/// Every request outside `/_emulator/`.
pub(super) async fn handle(
    AxState(inner): AxState<Arc<Inner>>,
    ConnectInfo(kill): ConnectInfo<ConnKill>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return error_response(&ApiError::new(
                413,
                "invalid",
                format!(
                    "Request body is larger than the {MAX_BODY_BYTES} bytes the emulator accepts."
                ),
            ));
        }
    };
    let path = parts.uri.path();
    let Some((project, op)) = Op::route(&parts.method, path) else {
        return error_response(&ApiError::new(
            404,
            "notFound",
            format!(
                "The Cloud DNS emulator has no method for {} {path}",
                parts.method
            ),
        ));
    };
    *inner
        .stats()
        .requests
        .entry(op.name().to_string())
        .or_default() += 1;

    // Authentication and the project.
    if inner.opts.verify_tokens {
        let refusal = match bearer(&parts.headers) {
            None => Some(ApiError::login_required()),
            Some(t) => match inner.opts.tokens.iter().find(|k| k.token == t) {
                None => Some(ApiError::invalid_credentials()),
                Some(k) if !k.allows(&project, &inner.opts.project) => Some(ApiError::forbidden()),
                Some(_) => None,
            },
        };
        if let Some(e) = refusal {
            inner.stats().auth_failures += 1;
            tracing::debug!(
                op = op.name(),
                status = e.status,
                "Request refused: {}.",
                e.message
            );
            return error_response(&e);
        }
    }

    // Quota, per project.
    if inner.quota.check(&project).is_err() {
        inner.stats().throttled += 1;
        return error_response(&ApiError::rate_limited(
            inner.opts.quota_status,
            &project,
            op.is_write(),
        ));
    }

    // Faults: a rule's `zone` may name the managed zone, its id or its DNS name.
    let zone_keys: Vec<String> = match op.zone() {
        Some(z) => {
            let st = inner.lock();
            match st.zone(&project, z) {
                Some(zone) => vec![
                    zone.name.clone(),
                    zone.id.to_string(),
                    zone.dns_name.clone(),
                ],
                None => vec![z.to_string()],
            }
        }
        None => Vec::new(),
    };
    let keys: Vec<&str> = zone_keys.iter().map(String::as_str).collect();
    let decision = decide_faults(&*inner, op.fault_op(), op.name(), &keys);
    if !inner.stopping().sleep(decision.delay_before).await {
        return error_response(&ApiError::server(503));
    }

    let query = ops::parse_query(parts.uri.query().unwrap_or(""));
    let fields_param = query
        .iter()
        .find(|(k, _)| k == "fields")
        .map(|(_, v)| v.as_str());
    let selection = match fields::selection(fields_param) {
        Ok(sel) => sel,
        Err(()) => {
            let mut e = ApiError::new(
                400,
                "invalidParameter",
                format!("Invalid field selection {}", fields_param.unwrap_or("")),
            );
            e.items[0].location = Some(("fields".into(), "parameter".into()));
            return error_response(&e);
        }
    };
    let ctx = Ctx {
        project: &project,
        query: &query,
        body: &body,
        pending_forever: decision.pending_forever,
    };

    let commit = || {
        let _ = inner.run(&op, &ctx);
    };
    if let Some(t) = terminal_fault(&*inner, &decision, &kill, commit).await {
        return match t {
            Terminal::Timeout => error_response(&ApiError::server(504)),
            Terminal::Fault(rule) => error_response(&fault_error(rule, &project, &op)),
        };
    }

    let result = inner.run(&op, &ctx);
    inner.stopping().sleep(decision.delay_after).await;
    match result {
        Ok(Value::Null) => {
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = http::StatusCode::NO_CONTENT;
            resp
        }
        Ok(v) => json_response(200, fields::cut(v, selection.as_deref()).to_string()),
        Err(e) => {
            tracing::debug!(
                op = op.name(),
                status = e.status,
                "Request answered with an error."
            );
            error_response(&e)
        }
    }
}
