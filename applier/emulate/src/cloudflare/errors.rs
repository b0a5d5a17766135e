//! Cloudflare's error answers: the v4 envelope `{"success":false,"errors":[{"code":…,
//! "message":…,"error_chain":[…]}],"messages":[],"result":null}` with the HTTP status
//! Cloudflare gives the case. The codes and texts are the ones clients have quoted from
//! real answers (see `docs/emulators.md` for which are verified and which are the
//! emulator's choice where Cloudflare documents none).
use serde_json::{Value, json};
use std::time::Duration;

/// One error answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub code: u32,
    pub message: String,
    /// `error_chain`: the detail codes under a generic one (6003 → 6111).
    pub chain: Vec<(u32, String)>,
    pub retry_after: Option<Duration>,
}

impl ApiError {
    pub fn new(status: u16, code: u32, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            chain: Vec::new(),
            retry_after: None,
        }
    }

    /// A 400 validation answer.
    pub fn invalid(code: u32, message: impl Into<String>) -> ApiError {
        ApiError::new(400, code, message)
    }

    /// 400 9106: no credentials at all.
    pub fn missing_credentials() -> ApiError {
        ApiError::new(
            400,
            9106,
            "Missing X-Auth-Key, X-Auth-Email or Authorization headers",
        )
    }

    /// 400 6003 with a detail (6111: the `Authorization` header, 6103: `X-Auth-Key`).
    pub fn invalid_headers(detail: u32, what: &str) -> ApiError {
        let mut e = ApiError::new(400, 6003, "Invalid request headers");
        e.chain
            .push((detail, format!("Invalid format for {what} header")));
        e
    }

    /// 403 9109: a well-formed token Cloudflare does not know.
    pub fn invalid_token() -> ApiError {
        ApiError::new(403, 9109, "Invalid access token")
    }

    /// 403 10000: the token may not touch this resource (or it does not exist for it).
    pub fn authentication() -> ApiError {
        ApiError::new(403, 10000, "Authentication error")
    }

    /// 404 81044: an unknown record id.
    pub fn no_record() -> ApiError {
        ApiError::new(404, 81044, "Record does not exist.")
    }

    /// 400 7003: a path whose identifier is malformed.
    pub fn no_route(path: &str) -> ApiError {
        let mut e = ApiError::new(
            400,
            7003,
            format!("Could not route to {path}, perhaps your object identifier is invalid?"),
        );
        e.chain.push((7000, "No route for that URI".into()));
        e
    }

    /// 501 (code 7000, "no route", Cloudflare's own for a path it does not serve): a
    /// call of Cloudflare's API the emulator does not reproduce, named as the API
    /// reference names it, so that a client never takes it for a missing zone.
    pub fn unimplemented(method: &http::Method, template: &str) -> ApiError {
        ApiError::new(
            501,
            7000,
            format!(
                "The Cloudflare emulator does not implement {method} {template}; see docs/emulators.md for the calls it serves"
            ),
        )
    }

    /// 429 971: the rate limit.
    pub fn rate_limited(limit: u32, window: Duration, retry_after: Duration) -> ApiError {
        let mut e = ApiError::new(
            429,
            971,
            format!(
                "More than {limit} requests per {} seconds reached. Please wait and consider throttling your request speed",
                window.as_secs()
            ),
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// A server error, as Cloudflare's edge sends one through the API.
    pub fn server(status: u16) -> ApiError {
        let (code, message) = match status {
            502 => (10013, "Bad Gateway"),
            503 => (10013, "Service Unavailable"),
            504 => (10013, "Gateway Timeout"),
            _ => (10001, "Internal Server Error"),
        };
        ApiError::new(status, code, message)
    }

    /// The error object inside `errors`.
    pub fn object(&self) -> Value {
        let mut o = json!({ "code": self.code, "message": self.message });
        if !self.chain.is_empty() {
            o["error_chain"] = self
                .chain
                .iter()
                .map(|(c, m)| json!({ "code": c, "message": m }))
                .collect();
        }
        o
    }

    /// The whole answer body.
    pub fn body(&self) -> Value {
        json!({
            "success": false,
            "errors": [self.object()],
            "messages": [],
            "result": null,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_carry_the_code_and_the_chain() {
        let b = ApiError::invalid_headers(6111, "Authorization").body();
        assert_eq!(b["success"], false);
        assert_eq!(b["errors"][0]["code"], 6003);
        assert_eq!(b["errors"][0]["error_chain"][0]["code"], 6111);
        assert_eq!(
            b["errors"][0]["error_chain"][0]["message"],
            "Invalid format for Authorization header"
        );
        let r = ApiError::rate_limited(1200, Duration::from_secs(300), Duration::from_secs(9));
        assert_eq!((r.status, r.code), (429, 971));
        assert!(
            r.message
                .starts_with("More than 1200 requests per 300 seconds reached.")
        );
        assert!(
            ApiError::no_record().body()["errors"][0]
                .get("error_chain")
                .is_none()
        );
    }
}
