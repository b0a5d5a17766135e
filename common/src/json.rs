//! The proto3 JSON mapping of the status messages, as `grpcurl` prints it, for the
//! admin ports' `/status` (both services show quota status; the planner passes on its
//! appliers'). Default values are written out too.
use crate::pb;
use std::collections::{BTreeMap, HashMap};

/// 64-bit integers as strings, sorted by key.
pub fn u64_map(m: &HashMap<String, u64>) -> serde_json::Value {
    let sorted: BTreeMap<&String, String> = m.iter().map(|(k, v)| (k, v.to_string())).collect();
    serde_json::json!(sorted)
}

/// A duration: seconds with 0, 3, 6 or 9 fractional digits and an `s` (`"1s"`,
/// `"0.250s"`, `"12.000034s"`); `null` when absent.
pub fn duration(d: Option<&prost_types::Duration>) -> serde_json::Value {
    let Some(d) = d else {
        return serde_json::Value::Null;
    };
    let sign = if d.seconds < 0 || d.nanos < 0 {
        "-"
    } else {
        ""
    };
    let (secs, nanos) = (d.seconds.unsigned_abs(), d.nanos.unsigned_abs());
    let text = if nanos == 0 {
        format!("{sign}{secs}s")
    } else if nanos % 1_000_000 == 0 {
        format!("{sign}{secs}.{:03}s", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!("{sign}{secs}.{:06}s", nanos / 1_000)
    } else {
        format!("{sign}{secs}.{nanos:09}s")
    };
    text.into()
}

/// A timestamp in RFC 3339; `null` when absent.
pub fn timestamp(t: Option<&prost_types::Timestamp>) -> serde_json::Value {
    t.map_or(serde_json::Value::Null, |t| t.to_string().into())
}

/// An account's quota status.
pub fn quota_status(q: &pb::QuotaStatus) -> serde_json::Value {
    serde_json::json!({
        "mode": q.mode,
        "rate": q.rate,
        "currentRate": q.current_rate,
        "burst": q.burst,
        "replicas": q.replicas,
        "ops": q.ops,
        "redis": q.redis,
        "granted": q.granted.to_string(),
        "waited": q.waited.to_string(),
        "denied": q.denied.to_string(),
        "waitTotal": duration(q.wait_total.as_ref()),
        "throttled": q.throttled.to_string(),
        "fallbacks": q.fallbacks.to_string(),
        "lastRedisError": q.last_redis_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_use_the_proto3_json_spelling() {
        let d = |seconds, nanos| duration(Some(&prost_types::Duration { seconds, nanos }));
        assert_eq!(d(1, 0), "1s");
        assert_eq!(d(0, 250_000_000), "0.250s");
        assert_eq!(d(12, 34_000), "12.000034s");
        assert_eq!(d(3, 5), "3.000000005s");
        assert_eq!(d(-1, -500_000_000), "-1.500s");
        assert_eq!(duration(None), serde_json::Value::Null);
    }
}
