//! Events: one storage, two shapes (core `v1` and `events.k8s.io/v1`, converted as
//! k8s.io/kubernetes `pkg/apis/events/v1` converts them), and the API server's
//! validation of what is written (`pkg/apis/core/validation/events.go`):
//!
//! - every Event: its namespace a DNS-1123 subdomain; an Event without `eventTime`
//!   (client-go's old recorder, `kubectl`) must be in its `involvedObject`'s namespace
//!   (or `default` when that has none); one with `eventTime` (kube-rs's `Recorder`,
//!   client-go's new one) needs `reportingController` (a qualified name),
//!   `reportingInstance` (≤ 128), `action` (≤ 128), `reason` (≤ 128) and a
//!   message/note of at most 1024 bytes, and its involvedObject namespace may be empty
//!   only in `default` or `kube-system`;
//! - written through `events.k8s.io/v1` besides: a DNS-subdomain name, `eventTime`
//!   set, `type` Normal or Warning, the deprecated fields unset, a `series` with
//!   `count` ≥ 2 and `lastObservedTime`; an update may change only the series (and
//!   labels, annotations).
//!
//! The core API (`/api/v1`) checks nothing more, as the real one: a core Event of
//! type `Bogus` or with no reason is stored.
use serde_json::{Map, Value};

/// (core field, events.k8s.io/v1 field) pairs that differ only in name.
const RENAMED: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Fields with the same name in both shapes.
const SAME: &[&str] = &[
    "metadata",
    "eventTime",
    "series",
    "reportingInstance",
    "action",
    "reason",
    "related",
    "type",
];

fn convert(from: &Value, api_version: &str, to_v1: bool) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), api_version.into());
    out.insert("kind".into(), "Event".into());
    let present = |k: &str| {
        from.get(k)
            .filter(|v| !v.is_null() && **v != "" && **v != 0)
    };
    for k in SAME {
        if let Some(v) = present(k) {
            out.insert((*k).into(), v.clone());
        }
    }
    for (core, v1) in RENAMED {
        let (src, dst) = if to_v1 { (core, v1) } else { (v1, core) };
        if let Some(v) = present(src) {
            if v.as_object().is_some_and(Map::is_empty) {
                continue;
            }
            out.insert((*dst).into(), v.clone());
        }
    }
    Value::Object(out)
}

/// A stored (core) Event as `events.k8s.io/v1` serves it.
pub fn core_to_v1(core: &Value) -> Value {
    convert(core, "events.k8s.io/v1", true)
}

/// An `events.k8s.io/v1` Event as stored.
pub fn v1_to_core(v1: &Value) -> Value {
    convert(v1, "v1", false)
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// RFC 1123 subdomain: what names and namespaces must be.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// A Kubernetes qualified name (`[prefix/]name`, the name ≤ 63).
fn qualified_name_errors(s: &str) -> Vec<String> {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let mut out = Vec::new();
    if let Some(p) = prefix
        && !is_dns_subdomain(p)
    {
        out.push(format!("prefix part {SUBDOMAIN_MSG}"));
    }
    let ok = |b: u8| b.is_ascii_alphanumeric();
    let bytes = name.as_bytes();
    if name.is_empty() {
        out.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 bytes".into());
    } else if !ok(bytes[0])
        || !ok(bytes[bytes.len() - 1])
        || !bytes
            .iter()
            .all(|&b| ok(b) || matches!(b, b'-' | b'_' | b'.'))
    {
        out.push("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into());
    }
    out
}

fn text<'a>(e: &'a Value, k: &str) -> &'a str {
    e[k].as_str().unwrap_or("")
}

fn set(e: &Value, k: &str) -> bool {
    !matches!(&e[k], Value::Null) && e[k] != "" && e[k] != 0
}

/// The field errors of a (core-shaped) Event written through core v1 (`v1 = false`)
/// or events.k8s.io/v1 (`v1 = true`); each is (field path, message).
pub fn validate(e: &Value, old: Option<&Value>, v1: bool) -> Vec<(String, String)> {
    let mut errs: Vec<(String, String)> = Vec::new();
    let mut invalid = |field: &str, value: &str, detail: &str| {
        errs.push((field.into(), format!("Invalid value: {value:?}: {detail}")));
    };
    let ns = e["metadata"]["namespace"].as_str().unwrap_or("");
    let involved_ns = e["involvedObject"]["namespace"].as_str().unwrap_or("");
    let mut required = Vec::new();
    if !set(e, "eventTime") {
        if involved_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                invalid(
                    "involvedObject.namespace",
                    involved_ns,
                    "does not match event.namespace",
                );
            }
        } else if ns != involved_ns {
            invalid(
                "involvedObject.namespace",
                involved_ns,
                "does not match event.namespace",
            );
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            invalid(
                "involvedObject.namespace",
                involved_ns,
                "does not match event.namespace",
            );
        }
        let controller_field = if v1 {
            "reportingController"
        } else {
            "reportingComponent"
        };
        let controller = text(e, "reportingComponent");
        if controller.is_empty() {
            required.push(controller_field);
        }
        for msg in qualified_name_errors(controller) {
            invalid(controller_field, controller, &msg);
        }
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let v = text(e, field);
            if v.is_empty() {
                required.push(field);
            }
            if v.len() > limit {
                invalid(field, "", &format!("can have at most {limit} characters"));
            }
        }
        if text(e, "message").len() > 1024 {
            invalid("message", "", "can have at most 1024 characters");
        }
    }
    if !is_dns_subdomain(ns) {
        invalid("namespace", ns, SUBDOMAIN_MSG);
    }
    if v1 {
        let name = e["metadata"]["name"].as_str().unwrap_or("");
        if !is_dns_subdomain(name) {
            invalid("metadata.name", name, SUBDOMAIN_MSG);
        }
        let series_changed = old.is_none_or(|o| o["series"] != e["series"]);
        if series_changed && let Some(s) = e.get("series").filter(|s| s.is_object()) {
            if s["count"].as_i64().unwrap_or(0) < 2 {
                invalid("series.count", "", "should be at least 2");
            }
            if !set(s, "lastObservedTime") {
                required.push("series.lastObservedTime");
            }
        }
        match old {
            None => {
                if !set(e, "eventTime") {
                    required.push("eventTime");
                }
                let ty = text(e, "type");
                if ty != "Normal" && ty != "Warning" {
                    invalid("type", "", &format!("has invalid value: {ty}"));
                }
                for f in ["firstTimestamp", "lastTimestamp", "count"] {
                    if set(e, f) {
                        invalid(f, "", "needs to be unset");
                    }
                }
                if e["source"].as_object().is_some_and(|s| !s.is_empty()) {
                    invalid("source", "", "needs to be unset");
                }
            }
            Some(o) => {
                for f in [
                    "involvedObject",
                    "reason",
                    "message",
                    "source",
                    "firstTimestamp",
                    "lastTimestamp",
                    "count",
                    "type",
                    "eventTime",
                    "action",
                    "related",
                    "reportingComponent",
                    "reportingInstance",
                ] {
                    if o.get(f) != e.get(f) {
                        invalid(f, "", "field is immutable");
                    }
                }
            }
        }
    }
    errs.extend(
        required
            .into_iter()
            .map(|f| (f.to_string(), "Required value".to_string())),
    );
    errs
}

/// RFC 7386 merge patch (also how the fake applies a strategic merge patch to an
/// Event: every field of an Event is a scalar or a struct).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An Event as kube-rs's `Recorder` creates it (events.k8s.io/v1).
    fn recorder_event() -> Value {
        let note = "web.example.com. A: published";
        crate::kube_api::fixtures::recorder_event("dnsplane", note, json!("u1"))
    }

    #[test]
    fn the_two_shapes_convert_both_ways() {
        let v1 = recorder_event();
        let core = v1_to_core(&v1);
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "web.example.com. A: published");
        assert_eq!(core["reportingComponent"], "dnsplane");
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core_to_v1(&core), v1);
    }

    #[test]
    fn events_are_validated_as_the_api_server_validates_them() {
        let good = v1_to_core(&recorder_event());
        assert_eq!(validate(&good, None, true), vec![]);
        assert_eq!(validate(&good, None, false), vec![]);

        let mut e = good.clone();
        e["type"] = "Bogus".into();
        e["message"] = "x".repeat(1025).into();
        e["reportingComponent"] = "".into();
        let errs = validate(&e, None, true);
        let fields: Vec<&str> = errs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "reportingController",
                "message",
                "type",
                "reportingController"
            ],
            "{errs:?}"
        );
        // Through core v1 the type is not checked, and the field has its core name.
        let fields: Vec<String> = validate(&e, None, false)
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(
            fields,
            ["reportingComponent", "message", "reportingComponent"]
        );

        // An old-style Event (no eventTime) must be in its object's namespace.
        let old_style = json!({"metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Service", "name": "web", "namespace": "other"},
            "reason": "Published", "message": "m", "type": "Normal"});
        assert_eq!(
            validate(&old_style, None, false),
            vec![(
                "involvedObject.namespace".to_string(),
                "Invalid value: \"other\": does not match event.namespace".to_string()
            )]
        );

        // A series needs two occurrences; an update changes only the series.
        let mut next = good.clone();
        next["series"] = json!({"count": 1, "lastObservedTime": "2026-11-29T03:01:00.000000Z"});
        next["reason"] = "Conflict".into();
        let fields: Vec<String> = validate(&next, Some(&good), true)
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(fields, ["series.count", "reason"]);
    }

    #[test]
    fn a_merge_patch_merges() {
        let mut t = json!({"count": 1, "message": "a", "source": {"component": "x"}});
        merge_patch(
            &mut t,
            &json!({"count": 2, "lastTimestamp": "t", "source": {"host": "h"}, "message": null}),
        );
        assert_eq!(
            t,
            json!({"count": 2, "lastTimestamp": "t", "source": {"component": "x", "host": "h"}})
        );
    }
}
