//! Credentials: ARM's `Authorization: Bearer <token>` check, and an AAD-shaped token
//! endpoint (`POST /{tenant}/oauth2/v2.0/token`, the client-credentials grant with a
//! client secret or a federated client assertion) whose tokens expire after the
//! configured lifetime. ARM's answers: no header is 401 `AuthenticationFailed`, an
//! unknown token 401 `InvalidAuthenticationToken`, an expired one 401
//! `ExpiredAuthenticationToken`; the token endpoint answers as AAD does
//! (`{"error":"invalid_client","error_description":"AADSTS…",…}`).
use super::errors::ArmError;
use super::options::ClientSpec;
use crate::timefmt::iso8601_millis;
use http::HeaderMap;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The assertion type of a federated credential.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

#[derive(Debug)]
struct Issued {
    expires: SystemTime,
}

/// Tokens the token endpoint (or the control API) issued.
#[derive(Debug, Default)]
pub(crate) struct Issuer {
    issued: Mutex<HashMap<String, Issued>>,
}

/// An AAD error answer: status and body.
#[derive(Debug, PartialEq)]
pub(crate) struct AadError {
    pub status: u16,
    pub body: Value,
}

fn aad_error(status: u16, error: &str, code: u32, text: &str) -> AadError {
    AadError {
        status,
        body: json!({
            "error": error,
            "error_description": format!("AADSTS{code}: {text}"),
            "error_codes": [code],
            "timestamp": iso8601_millis(SystemTime::now()),
            "trace_id": super::model::new_etag(),
            "correlation_id": super::model::new_etag(),
        }),
    }
}

impl Issuer {
    /// Issues a token good for `lifetime`.
    pub fn issue(&self, lifetime: Duration) -> String {
        let token = format!(
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.{}.emulator",
            hex::encode(rand::random::<[u8; 24]>())
        );
        self.issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                token.clone(),
                Issued {
                    expires: SystemTime::now() + lifetime,
                },
            );
        token
    }

    /// Forgets every issued token (static tokens stay).
    pub fn revoke_all(&self) -> usize {
        let mut m = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.len();
        m.clear();
        n
    }

    /// Checks a request's bearer token: a static one, or an issued one not expired.
    pub fn check(
        &self,
        headers: &HeaderMap,
        statics: &[String],
        verify: bool,
    ) -> Result<(), ArmError> {
        let v = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .ok_or_else(ArmError::authentication_failed)?;
        let token = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                let mut e = ArmError::authentication_failed();
                e.message = "Authentication failed. The 'Authorization' header is provided in an invalid format.".into();
                e
            })?;
        if !verify || statics.iter().any(|t| t == token) {
            return Ok(());
        }
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        match issued.get(token) {
            None => Err(ArmError::invalid_token(
                "The token is not one the emulator issued or was configured with.",
            )),
            Some(i) if i.expires <= SystemTime::now() => {
                let mut e = ArmError::new(
                    401,
                    "ExpiredAuthenticationToken",
                    format!(
                        "The access token expiry UTC time '{}' is earlier than current UTC time '{}'.",
                        iso8601_millis(i.expires),
                        iso8601_millis(SystemTime::now())
                    ),
                );
                e.www_authenticate = true;
                Err(e)
            }
            Some(_) => Ok(()),
        }
    }

    /// The token endpoint: `form` is the request's form fields, `tenant` the path's.
    pub fn token_endpoint(
        &self,
        tenant: &str,
        form: &HashMap<String, String>,
        clients: &[ClientSpec],
        lifetime: Duration,
    ) -> Result<Value, AadError> {
        let get = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
        if get("grant_type") != "client_credentials" {
            return Err(aad_error(
                400,
                "unsupported_grant_type",
                70003,
                &format!(
                    "The app requested an unsupported grant type '{}'.",
                    get("grant_type")
                ),
            ));
        }
        let scope = get("scope");
        if scope.is_empty() {
            return Err(aad_error(
                400,
                "invalid_request",
                900144,
                "The request body must contain the following parameter: 'scope'.",
            ));
        }
        if !scope.split(' ').any(|s| s.ends_with("/.default")) {
            return Err(aad_error(
                400,
                "invalid_scope",
                1002012,
                &format!(
                    "The provided value for scope {scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI)."
                ),
            ));
        }
        let id = get("client_id");
        let client = clients
            .iter()
            .find(|c| c.client_id == id)
            .filter(|c| c.tenant.as_deref().is_none_or(|t| t.eq_ignore_ascii_case(tenant)))
            .ok_or_else(|| {
                aad_error(
                    400,
                    "unauthorized_client",
                    700016,
                    &format!(
                        "Application with identifier '{id}' was not found in the directory '{tenant}'."
                    ),
                )
            })?;
        let (secret, assertion) = (form.get("client_secret"), form.get("client_assertion"));
        let ok = match (secret, assertion) {
            (Some(s), _) => client.client_secret.as_deref() == Some(s.as_str()),
            (None, Some(a)) => {
                if get("client_assertion_type") != JWT_BEARER {
                    return Err(aad_error(
                        400,
                        "invalid_request",
                        50027,
                        "Invalid JWT token: client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer.",
                    ));
                }
                client.client_assertion.as_deref() == Some(a.as_str())
            }
            (None, None) => {
                return Err(aad_error(
                    401,
                    "invalid_client",
                    7000218,
                    "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
                ));
            }
        };
        if !ok {
            return Err(match secret {
                Some(_) => aad_error(
                    401,
                    "invalid_client",
                    7000215,
                    "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.",
                ),
                None => aad_error(
                    401,
                    "invalid_client",
                    700213,
                    "No matching federated identity record found for presented assertion.",
                ),
            });
        }
        let secs = lifetime.as_secs();
        Ok(json!({
            "token_type": "Bearer",
            "expires_in": secs,
            "ext_expires_in": secs,
            "access_token": self.issue(lifetime),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn token_endpoint_issues_and_refuses_as_aad() {
        let i = Issuer::default();
        let clients = [ClientSpec {
            client_id: "c".into(),
            client_secret: Some("s".into()),
            client_assertion: Some("jwt".into()),
            tenant: None,
        }];
        let base = [
            ("grant_type", "client_credentials"),
            ("client_id", "c"),
            ("scope", "https://management.azure.com/.default"),
        ];
        let with = |extra: &[(&str, &str)]| {
            let mut f = form(&base);
            f.extend(form(extra));
            i.token_endpoint("t", &f, &clients, Duration::from_secs(60))
        };
        let ok = with(&[("client_secret", "s")]).unwrap();
        assert_eq!(ok["token_type"], "Bearer");
        let token = ok["access_token"].as_str().unwrap().to_string();
        let mut h = HeaderMap::new();
        h.insert("authorization", format!("Bearer {token}").parse().unwrap());
        assert!(i.check(&h, &[], true).is_ok());
        let e = with(&[("client_secret", "wrong")]).unwrap_err();
        assert_eq!(
            (e.status, e.body["error"].as_str()),
            (401, Some("invalid_client"))
        );
        assert!(
            with(&[
                ("client_assertion", "jwt"),
                ("client_assertion_type", JWT_BEARER)
            ])
            .is_ok()
        );
        assert_eq!(
            with(&[
                ("client_assertion", "nope"),
                ("client_assertion_type", JWT_BEARER)
            ])
            .unwrap_err()
            .body["error_codes"][0],
            700213
        );
        let mut f = form(&base);
        f.insert(
            "scope".into(),
            "https://management.azure.com/user_impersonation".into(),
        );
        f.insert("client_secret".into(), "s".into());
        assert_eq!(
            i.token_endpoint("t", &f, &clients, Duration::from_secs(1))
                .unwrap_err()
                .body["error"],
            "invalid_scope"
        );
        assert_eq!(i.revoke_all(), 2);
        assert_eq!(
            i.check(&h, &[], true).unwrap_err().code,
            "InvalidAuthenticationToken"
        );
        assert_eq!(
            i.check(&HeaderMap::new(), &[], true).unwrap_err().code,
            "AuthenticationFailed"
        );
        let expired = i.issue(Duration::ZERO);
        h.insert(
            "authorization",
            format!("Bearer {expired}").parse().unwrap(),
        );
        assert_eq!(
            i.check(&h, &[], true).unwrap_err().code,
            "ExpiredAuthenticationToken"
        );
    }
}
