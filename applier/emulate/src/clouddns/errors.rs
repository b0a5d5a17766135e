//! Cloud DNS error answers in the googleapis v1 JSON format:
//! `{"error":{"code":409,"message":"…","errors":[{"message":"…","domain":"global",
//! "reason":"alreadyExists"}],"status":"ALREADY_EXISTS"}}` — the top-level message is
//! the first entry's; a change refused for several entries lists every one of them.
//! The texts are Google's where they were recorded (INTEROP.md §2.1, PROVIDERS.md §3.3).
use serde_json::{Value, json};
use std::time::Duration;

/// One entry of `errors[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ErrorItem {
    pub message: String,
    pub reason: String,
    /// `location`/`locationType` (the 401s name the `Authorization` header).
    pub location: Option<(String, String)>,
}

/// One error answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    /// The top-level `message` (the first entry's, unless a 401 says more).
    pub message: String,
    pub items: Vec<ErrorItem>,
    pub retry_after: Option<Duration>,
    /// An HTML page instead of JSON (Google's front end answers a 502 that way).
    pub html: Option<String>,
}

/// The googleapis `status` word of an HTTP status.
fn status_word(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ALREADY_EXISTS",
        412 => "FAILED_PRECONDITION",
        429 => "RESOURCE_EXHAUSTED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// Google front end's 502 page.
pub(crate) const GFE_502: &str = "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <title>Error 502 (Server Error)!!1</title>\n  <p><b>502.</b> <ins>That\u{2019}s an error.</ins>\n  <p>The server encountered a temporary error and could not complete your request.<p>Please try again in 30 seconds.  <ins>That\u{2019}s all we know.</ins>\n";

impl ApiError {
    pub fn new(status: u16, reason: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        ApiError {
            status,
            message: message.clone(),
            items: vec![ErrorItem {
                message,
                reason: reason.to_string(),
                location: None,
            }],
            retry_after: None,
            html: None,
        }
    }

    /// Several failing entries of one change; the status is the first one's.
    pub fn many(status: u16, items: Vec<ErrorItem>) -> ApiError {
        ApiError {
            status,
            message: items.first().map(|i| i.message.clone()).unwrap_or_default(),
            items,
            retry_after: None,
            html: None,
        }
    }

    #[cfg(test)]
    pub fn reason(&self) -> &str {
        self.items.first().map_or("", |i| i.reason.as_str())
    }

    /// 401 `required`: no `Authorization: Bearer` header at all.
    pub fn login_required() -> ApiError {
        let mut e = ApiError::new(401, "required", "Login Required.");
        e.message = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.".into();
        e.items[0].location = Some(("Authorization".into(), "header".into()));
        e
    }

    /// 401 `authError`: a token the service does not know (or an expired one).
    pub fn invalid_credentials() -> ApiError {
        let mut e = ApiError::new(401, "authError", "Invalid Credentials");
        e.message = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.".into();
        e.items[0].location = Some(("Authorization".into(), "header".into()));
        e
    }

    /// 403 `forbidden`: a valid token without access to the project.
    pub fn forbidden() -> ApiError {
        ApiError::new(403, "forbidden", "Forbidden")
    }

    /// 404 `notFound` for a managed zone.
    pub fn no_such_zone(zone: &str) -> ApiError {
        ApiError::new(
            404,
            "notFound",
            format!("The 'parameters.managedZone' resource named '{zone}' does not exist."),
        )
    }

    /// 404 `notFound` for a change id.
    pub fn no_such_change(id: &str) -> ApiError {
        ApiError::new(
            404,
            "notFound",
            format!("The 'parameters.changeId' resource named '{id}' does not exist."),
        )
    }

    /// 400 `invalid`: `Invalid value for '<field>': '<value>'`.
    pub fn invalid(field: &str, value: &str) -> ApiError {
        ApiError::new(400, "invalid", invalid_value(field, value))
    }

    /// 400 `required`: a missing field (the emulator's wording: no public source
    /// records Google's).
    pub fn required(field: &str) -> ApiError {
        ApiError::new(
            400,
            "required",
            format!("Required field '{field}' not specified"),
        )
    }

    /// 400 `parseError`: a body that is not JSON of the right shape.
    pub fn parse_error(detail: &str) -> ApiError {
        ApiError::new(400, "parseError", format!("Parse Error: {detail}"))
    }

    /// 429 `rateLimitExceeded` (or 503 with the same reason, when the options say so).
    pub fn rate_limited(status: u16, project: &str, write: bool) -> ApiError {
        let (metric, limit) = if write {
            ("Write requests", "Write requests per minute")
        } else {
            ("Read requests", "Read requests per minute")
        };
        ApiError::new(
            status,
            "rateLimitExceeded",
            format!(
                "Quota exceeded for quota metric '{metric}' and limit '{limit}' of service 'dns.googleapis.com' for consumer 'project:{project}'."
            ),
        )
    }

    /// A 5xx in Google's words: 502 is the front end's HTML page.
    pub fn server(status: u16) -> ApiError {
        match status {
            502 => ApiError {
                status,
                message: "The server encountered a temporary error and could not complete your request. Please try again in 30 seconds.".into(),
                items: vec![ErrorItem {
                    message: "The server encountered a temporary error and could not complete your request. Please try again in 30 seconds.".into(),
                    reason: "badGateway".into(),
                    location: None,
                }],
                retry_after: None,
                html: Some(GFE_502.to_string()),
            },
            503 => ApiError::new(503, "backendError", "The service is currently unavailable."),
            504 => ApiError::new(504, "backendError", "Deadline expired before operation could complete."),
            _ => ApiError::new(status, "backendError", "Internal error encountered."),
        }
    }

    /// The JSON body (or the HTML page).
    pub fn body(&self) -> String {
        if let Some(h) = &self.html {
            return h.clone();
        }
        let errors: Vec<Value> = self
            .items
            .iter()
            .map(|i| {
                let mut v = json!({"message": i.message, "domain": "global", "reason": i.reason});
                if let Some((loc, kind)) = &i.location {
                    v["location"] = json!(loc);
                    v["locationType"] = json!(kind);
                }
                v
            })
            .collect();
        json!({
            "error": {
                "code": self.status,
                "message": self.message,
                "errors": errors,
                "status": status_word(self.status),
            }
        })
        .to_string()
    }
}

/// `Invalid value for '<field>': '<value>'`.
pub(crate) fn invalid_value(field: &str, value: &str) -> String {
    format!("Invalid value for '{field}': '{value}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_googleapis_json() {
        let e = ApiError::new(
            409,
            "alreadyExists",
            "The resource 'entity.change.additions[0]' named 'x.example.com. (A)' already exists",
        );
        let v: Value = serde_json::from_str(&e.body()).unwrap();
        assert_eq!(v["error"]["code"], 409);
        assert_eq!(v["error"]["errors"][0]["reason"], "alreadyExists");
        assert_eq!(v["error"]["errors"][0]["domain"], "global");
        assert_eq!(v["error"]["message"], v["error"]["errors"][0]["message"]);
        let a: Value = serde_json::from_str(&ApiError::login_required().body()).unwrap();
        assert_eq!(a["error"]["code"], 401);
        assert_eq!(a["error"]["errors"][0]["reason"], "required");
        assert_eq!(a["error"]["errors"][0]["location"], "Authorization");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Request is missing")
        );
        assert!(
            ApiError::server(502)
                .body()
                .contains("Please try again in 30 seconds.")
        );
    }
}
