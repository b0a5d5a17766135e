//! Server-side printing of Events (`Accept: …;as=Table;g=meta.k8s.io`), so that
//! `kubectl get events` shows the columns it shows against a real API server (Last
//! Seen, Type, Reason, Object, Message, and the wide ones). Other resources are
//! answered as plain lists, and kubectl prints their names and ages.
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Go's `duration.HumanDuration`, which kubectl's ages use.
pub fn human_duration(d: Duration) -> String {
    let seconds = d.as_secs();
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let (years, d) = (days / 365, days % 365);
    if hours < 24 * 365 * 8 && d != 0 {
        return format!("{years}y{d}d");
    }
    format!("{years}y")
}

fn age(t: &Value) -> Option<String> {
    let at = humantime::parse_rfc3339_weak(t.as_str()?).ok()?;
    let d = SystemTime::now().duration_since(at).unwrap_or_default();
    Some(human_duration(d))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// One row: a (core-shaped) Event's cells.
fn row(e: &Value) -> Value {
    let last = [
        &e["series"]["lastObservedTime"],
        &e["lastTimestamp"],
        &e["eventTime"],
    ]
    .into_iter()
    .find_map(age)
    .unwrap_or_else(|| "<unknown>".into());
    let first = [&e["firstTimestamp"], &e["eventTime"]]
        .into_iter()
        .find_map(age)
        .unwrap_or_else(|| "<unknown>".into());
    let o = &e["involvedObject"];
    let object = format!("{}/{}", text(&o["kind"]).to_lowercase(), text(&o["name"]));
    let source = match (text(&e["source"]["component"]), text(&e["source"]["host"])) {
        ("", _) => text(&e["reportingComponent"]).to_string(),
        (c, "") => c.to_string(),
        (c, h) => format!("{c}, {h}"),
    };
    let count = e["series"]["count"]
        .as_i64()
        .or_else(|| e["count"].as_i64())
        .unwrap_or(1);
    json!({
        "cells": [last, text(&e["type"]), text(&e["reason"]), object, text(&o["fieldPath"]),
                  source, text(&e["message"]), first, count.to_string(), text(&e["metadata"]["name"])],
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": e["metadata"]},
    })
}

/// The Table of `events` (core-shaped), with the list's metadata.
pub fn events(meta: Value, events: &[Arc<Value>]) -> Value {
    let col = |name: &str, priority: u8| json!({"name": name, "type": "string", "format": "", "description": "", "priority": priority});
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
        "columnDefinitions": [col("Last Seen", 0), col("Type", 0), col("Reason", 0),
            col("Object", 0), col("Subobject", 1), col("Source", 1), col("Message", 0),
            col("First Seen", 1), col("Count", 1), col("Name", 1)],
        "rows": events.iter().map(|e| row(e)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (secs, want) in [
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 + 120, "3h2m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 3600, "3d1h"),
            (40 * 86400, "40d"),
        ] {
            assert_eq!(human_duration(Duration::from_secs(secs)), want);
        }
    }
}
