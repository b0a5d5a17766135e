//! ARM's error answers: `{"error":{"code":…,"message":…}}` (the API description's
//! `CloudError`) with the HTTP status ARM gives the case. Codes that Azure documents or
//! that clients have quoted from real answers are used as such; where Azure documents
//! none (the per-set and per-zone limits, CNAME beside other data) the code is the
//! emulator's choice, named in `docs/emulators.md`.
use serde_json::{Value, json};
use std::time::Duration;

/// One error answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArmError {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// A `Retry-After` header (429s).
    pub retry_after: Option<Duration>,
    /// `WWW-Authenticate` (401s), as ARM sends it.
    pub www_authenticate: bool,
}

impl ArmError {
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> ArmError {
        ArmError {
            status,
            code: code.to_string(),
            message: message.into(),
            retry_after: None,
            www_authenticate: false,
        }
    }

    /// 400 `BadRequest`: a body the service cannot take.
    pub fn bad_request(message: impl Into<String>) -> ArmError {
        ArmError::new(400, "BadRequest", message)
    }

    /// 400 `MissingApiVersionParameter`.
    pub fn missing_api_version() -> ArmError {
        ArmError::new(
            400,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        )
    }

    /// 400 `NoRegisteredProviderFound`: an api-version the resource type lacks.
    pub fn unsupported_api_version(version: &str, rtype: &str, supported: &[&str]) -> ArmError {
        ArmError::new(
            400,
            "NoRegisteredProviderFound",
            format!(
                "No registered resource provider found for location 'global' and API version '{version}' for type '{rtype}'. The supported api-versions are '{}'. The supported locations are 'global'.",
                supported.join(", ")
            ),
        )
    }

    /// 401 with no (or a malformed) `Authorization` header.
    pub fn authentication_failed() -> ArmError {
        let mut e = ArmError::new(
            401,
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing.",
        );
        e.www_authenticate = true;
        e
    }

    /// 401 with a token ARM does not accept (unknown or expired).
    pub fn invalid_token(why: &str) -> ArmError {
        let mut e = ArmError::new(
            401,
            "InvalidAuthenticationToken",
            format!("The access token is invalid. {why}"),
        );
        e.www_authenticate = true;
        e
    }

    /// 404 `ResourceGroupNotFound`.
    pub fn no_resource_group(rg: &str) -> ArmError {
        ArmError::new(
            404,
            "ResourceGroupNotFound",
            format!("Resource group '{rg}' could not be found."),
        )
    }

    /// 404 `ResourceNotFound` for a zone read directly.
    pub fn no_zone(rtype: &str, zone: &str, rg: &str) -> ArmError {
        ArmError::new(
            404,
            "ResourceNotFound",
            format!(
                "The Resource 'Microsoft.Network/{rtype}/{zone}' under resource group '{rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix"
            ),
        )
    }

    /// 404 `ParentResourceNotFound`: a record-set call on a zone that does not exist.
    pub fn no_parent(rtype: &str, zone: &str) -> ArmError {
        ArmError::new(
            404,
            "ParentResourceNotFound",
            format!(
                "Can not perform requested operation on nested resource. Parent resource '{zone}' not found. (Microsoft.Network/{rtype})"
            ),
        )
    }

    /// 404 `NotFound`: a record set that does not exist (Azure DNS's own answer).
    pub fn no_record_set(name: &str, rg: &str, sub: &str) -> ArmError {
        ArmError::new(
            404,
            "NotFound",
            format!(
                "The resource record '{name}' does not exist in resource group '{rg}' of subscription '{sub}'."
            ),
        )
    }

    /// 412 `PreconditionFailed`.
    pub fn precondition(message: impl Into<String>) -> ArmError {
        ArmError::new(412, "PreconditionFailed", message)
    }

    /// 429 `TooManyRequests` (ARM's subscription throttling).
    pub fn throttled(kind: &str, retry_after: Duration) -> ArmError {
        let mut e = ArmError::new(
            429,
            "TooManyRequests",
            format!(
                "Number of '{kind}' requests for subscription exceeded the limit. Please try again after {} seconds.",
                retry_secs(retry_after)
            ),
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// A server error.
    pub fn server(status: u16) -> ArmError {
        let (code, message) = match status {
            502 => ("BadGateway", "The server received an invalid response."),
            503 => (
                "ServiceUnavailable",
                "The server is currently unable to handle the request.",
            ),
            504 => (
                "GatewayTimeout",
                "The gateway did not receive a response within the specified time period.",
            ),
            _ => (
                "InternalServerError",
                "An error has occurred. Please retry the request.",
            ),
        };
        ArmError::new(status, code, message)
    }

    /// The whole answer body.
    pub fn body(&self) -> Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

/// Whole seconds for `Retry-After`, at least 1.
pub(crate) fn retry_secs(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_cloud_errors() {
        let b = ArmError::precondition("stale").body();
        assert_eq!(b["error"]["code"], "PreconditionFailed");
        assert_eq!(b["error"]["message"], "stale");
        assert_eq!(b.as_object().unwrap().len(), 1);
        let t = ArmError::throttled("write", Duration::from_millis(1200));
        assert_eq!(
            (t.status, t.retry_after),
            (429, Some(Duration::from_millis(1200)))
        );
        assert!(t.message.contains("after 2 seconds"));
        assert_eq!(retry_secs(Duration::ZERO), 1);
    }
}
