//! An API server's refusal: an HTTP code and a `Status` body, as client-go and kube-rs
//! read them (`reason`, `message`, `details`).
use super::resource::Resource;
use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::{Value, json};

/// What the fake answers instead of doing what was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub code: u16,
    /// The `Status` object.
    pub status: Value,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.code,
            self.status["reason"].as_str().unwrap_or(""),
            self.status["message"].as_str().unwrap_or("")
        )
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    pub fn new(code: u16, reason: &str, message: &str) -> Refusal {
        Refusal {
            code,
            status: json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": message, "reason": reason,
                           "code": code}),
        }
    }

    fn details(mut self, resource: Resource, name: &str) -> Refusal {
        let i = resource.info();
        let mut d = json!({"kind": i.plural});
        if !name.is_empty() {
            d["name"] = name.into();
        }
        if !i.group.is_empty() {
            d["group"] = i.group.into();
        }
        self.status["details"] = d;
        self
    }

    /// 404: `services "web" not found`.
    pub fn not_found(resource: Resource, name: &str) -> Refusal {
        Refusal::new(
            404,
            "NotFound",
            &format!("{} \"{name}\" not found", resource.group_resource()),
        )
        .details(resource, name)
    }

    /// 403 as RBAC answers a service account without the verb on the resource.
    pub fn forbidden(resource: Resource, verb: &str, namespace: Option<&str>) -> Refusal {
        let i = resource.info();
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        Refusal::new(
            403,
            "Forbidden",
            &format!(
                "{} is forbidden: User \"system:serviceaccount:dnsplane:dnsplane\" cannot {verb} resource \"{}\" in API group \"{}\" {scope}",
                resource.group_resource(),
                i.plural,
                i.group
            ),
        )
        .details(resource, "")
    }

    /// 422 Invalid, each cause a (field path, message) as the API server words them:
    /// `HTTPRoute.gateway.networking.k8s.io "web" is invalid: spec.hostnames[0]: …`.
    pub fn invalid(resource: Resource, name: &str, causes: Vec<(String, String)>) -> Refusal {
        let i = resource.info();
        let qualified = if i.group.is_empty() {
            i.kind.to_string()
        } else {
            format!("{}.{}", i.kind, i.group)
        };
        let each: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let listed = if each.len() == 1 {
            each[0].clone()
        } else {
            format!("[{}]", each.join(", "))
        };
        let mut r = Refusal::new(
            422,
            "Invalid",
            &format!("{qualified} \"{name}\" is invalid: {listed}"),
        );
        r.status["details"] = json!({
            "name": name, "group": i.group, "kind": i.kind,
            "causes": causes.iter().map(|(f, m)| {
                let reason = if m.starts_with("Required value") { "FieldValueRequired" }
                    else if m.starts_with("Unsupported value") { "FieldValueNotSupported" }
                    else if m.starts_with("Too long") { "FieldValueTooLong" }
                    else if m.starts_with("Too many") { "FieldValueTooMany" }
                    else { "FieldValueInvalid" };
                json!({"reason": reason, "message": m, "field": f})
            }).collect::<Vec<_>>(),
        });
        r
    }

    pub fn response(&self) -> Response<Body> {
        reply(
            StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &self.status,
        )
    }
}

pub fn reply(code: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}
