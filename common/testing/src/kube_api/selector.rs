//! Label and field selectors as the API server reads them, and query strings.
use super::resource::Resource;
use serde_json::Value;
use std::collections::BTreeMap;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Label {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// A parsed `labelSelector`: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
/// `k`, `!k`, comma-separated (all must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Label>);

/// The terms of a selector: split at commas outside parentheses.
fn terms(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn set(values: &str) -> Option<Vec<String>> {
    let inner = values.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|v| v.trim().to_string()).collect())
}

impl LabelSelector {
    /// Parses a selector; the error is the API server's message.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let bad = |t: &str| format!("unable to parse requirement: {t:?}");
        let mut out = Vec::new();
        for t in terms(s) {
            let req = if let Some((k, v)) = t.split_once("!=") {
                Label::Ne(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                Label::Eq(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = t.split_once(" notin ") {
                Label::NotIn(k.trim().into(), set(v).ok_or_else(|| bad(t))?)
            } else if let Some((k, v)) = t.split_once(" in ") {
                Label::In(k.trim().into(), set(v).ok_or_else(|| bad(t))?)
            } else if let Some(k) = t.strip_prefix('!') {
                Label::Absent(k.trim().into())
            } else if t.contains(char::is_whitespace) || t.contains(['(', ')']) {
                return Err(bad(t));
            } else {
                Label::Exists(t.into())
            };
            out.push(req);
        }
        Ok(LabelSelector(out))
    }

    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Label::Eq(k, v) => get(k) == Some(v),
            Label::Ne(k, v) => get(k) != Some(v),
            Label::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Label::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Label::Exists(k) => get(k).is_some(),
            Label::Absent(k) => get(k).is_none(),
        })
    }
}

/// A parsed `fieldSelector`: `path=v`, `path==v`, `path!=v`, comma-separated, over the
/// fields the resource supports (others are refused, as the API server does).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

/// The field labels each resource supports beside `metadata.name` and
/// `metadata.namespace` (k8s.io/kubernetes pkg/apis/*/v1 conversion.go).
fn supported(resource: Resource, field: &str) -> bool {
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return true;
    }
    match resource {
        Resource::Event => matches!(
            field,
            "involvedObject.kind"
                | "involvedObject.namespace"
                | "involvedObject.name"
                | "involvedObject.uid"
                | "involvedObject.apiVersion"
                | "involvedObject.resourceVersion"
                | "involvedObject.fieldPath"
                | "reason"
                | "reportingComponent"
                | "source"
                | "type"
        ),
        Resource::EventV1 => matches!(
            field,
            "regarding.kind"
                | "regarding.namespace"
                | "regarding.name"
                | "regarding.uid"
                | "regarding.apiVersion"
                | "regarding.resourceVersion"
                | "regarding.fieldPath"
                | "reason"
                | "reportingController"
                | "type"
        ),
        Resource::Pod => matches!(
            field,
            "spec.nodeName"
                | "spec.restartPolicy"
                | "spec.schedulerName"
                | "spec.serviceAccountName"
                | "spec.hostNetwork"
                | "status.phase"
                | "status.podIP"
                | "status.nominatedNodeName"
        ),
        Resource::Node => field == "spec.unschedulable",
        Resource::Service => matches!(field, "spec.clusterIP" | "spec.type"),
        _ => false,
    }
}

impl FieldSelector {
    pub fn parse(resource: Resource, s: &str) -> Result<FieldSelector, String> {
        let mut out = Vec::new();
        for t in terms(s) {
            let (k, eq, v) = if let Some((k, v)) = t.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                (k, true, v)
            } else {
                return Err(format!("invalid selector: {t:?}; can't understand {t:?}"));
            };
            let k = k.trim();
            if !supported(resource, k) {
                return Err(format!("field label not supported: {k}",));
            }
            out.push((k.to_string(), eq, v.trim().to_string()));
        }
        Ok(FieldSelector(out))
    }

    /// Whether `object` (in the shape of the resource the selector was parsed for)
    /// matches; an absent field reads as `""`.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, eq, want)| {
            let path = if path == "source" {
                "source.component"
            } else {
                path
            };
            let mut at = object;
            for part in path.split('.') {
                at = &at[part];
            }
            let have = match at {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (have == *want) == *eq
        })
    }
}

/// A query string's parameters, percent-decoded.
pub fn query_map(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

/// Percent-decoding of a query value (`%3D` → `=`, `+` → space).
pub fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_read_as_the_api_server_reads_them() {
        let o = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (s, want) in [
            ("", true),
            ("app=web", true),
            ("app==web,tier", true),
            ("app!=web", false),
            ("app in (web, api),tier notin (back)", true),
            ("app notin (web)", false),
            ("!tier", false),
            ("!zone,app", true),
            ("zone", false),
        ] {
            assert_eq!(LabelSelector::parse(s).unwrap().matches(&o), want, "{s}");
        }
        assert!(LabelSelector::parse("app in web").is_err());
    }

    #[test]
    fn field_selectors_know_their_resources_fields() {
        let e = json!({"involvedObject": {"name": "web", "kind": "Service"}, "source": {"component": "dnsplane"}});
        let s = FieldSelector::parse(
            Resource::Event,
            "involvedObject.name=web,involvedObject.kind=Service,involvedObject.uid=,source=dnsplane",
        )
        .unwrap();
        assert!(s.matches(&e));
        assert!(
            !FieldSelector::parse(Resource::Event, "involvedObject.name!=web")
                .unwrap()
                .matches(&e)
        );
        assert_eq!(
            FieldSelector::parse(Resource::Service, "spec.ports=1").unwrap_err(),
            "field label not supported: spec.ports"
        );
    }
}
