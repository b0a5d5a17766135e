//! external-dns's annotations as v0.22 reads them (`source/annotations` in its
//! repository), under both prefixes: v0.22's GA `external-dns.kubernetes.io/` and the
//! `external-dns.alpha.kubernetes.io/` every object written before it carries. When an
//! object has both, the GA one wins. A user moving from external-dns changes nothing on
//! their objects.
//!
//! Unlike external-dns, a value that cannot be read is a [`Problem`] (the object keeps
//! its last accepted records), not a warning in a log followed by a default.
use super::Problem;
use serde_json::Value;

/// v0.22's default prefix.
pub const PREFIX: &str = "external-dns.kubernetes.io/";
/// The prefix before v0.22 (external-dns #6424 switched the default).
pub const ALPHA_PREFIX: &str = "external-dns.alpha.kubernetes.io/";

pub const HOSTNAME: &str = "hostname";
pub const INTERNAL_HOSTNAME: &str = "internal-hostname";
pub const TARGET: &str = "target";
pub const TTL: &str = "ttl";
pub const SET_IDENTIFIER: &str = "set-identifier";
pub const CONTROLLER: &str = "controller";
pub const ALIAS: &str = "alias";
pub const RECORD_TYPE: &str = "record-type";
pub const ACCESS: &str = "access";
pub const ENDPOINTS_TYPE: &str = "endpoints-type";
pub const INGRESS_HOSTNAME_SOURCE: &str = "ingress-hostname-source";
pub const GATEWAY_HOSTNAME_SOURCE: &str = "gateway-hostname-source";
/// The value of the `controller` annotation external-dns (and so dnsplane) answers to.
pub const CONTROLLER_VALUE: &str = "dns-controller";

/// TTL bounds (external-dns: 1 ..= MaxInt32).
const TTL_MIN: i64 = 1;
const TTL_MAX: i64 = i32::MAX as i64;

/// An object's annotations.
#[derive(Debug, Clone, Copy)]
pub struct Annotations<'a> {
    map: Option<&'a serde_json::Map<String, Value>>,
}

impl<'a> Annotations<'a> {
    /// The annotations of `object` (`metadata.annotations`).
    pub fn of(object: &'a Value) -> Annotations<'a> {
        Annotations {
            map: object["metadata"]["annotations"].as_object(),
        }
    }

    /// Every annotation, as (key, value) of strings.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.map
            .into_iter()
            .flat_map(|m| m.iter())
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
    }

    /// The raw value of any annotation key.
    pub fn raw(&self, key: &str) -> Option<&'a str> {
        self.map?.get(key)?.as_str()
    }

    /// external-dns annotation `name` (`hostname`, `ttl`, …) under either prefix, with
    /// the full key it was found under.
    pub fn get(&self, name: &str) -> Option<(String, &'a str)> {
        [PREFIX, ALPHA_PREFIX].into_iter().find_map(|p| {
            let key = format!("{p}{name}");
            self.raw(&key).map(|v| (key, v))
        })
    }

    /// `metadata.annotations["key"]`: where a problem stands.
    pub fn field(key: &str) -> String {
        format!("metadata.annotations[\"{key}\"]")
    }

    /// The `hostname` annotation's names (`None`: no annotation), split as external-dns
    /// does: spaces removed, split on commas.
    pub fn hostnames(&self) -> Option<Vec<String>> {
        self.get(HOSTNAME).map(|(_, v)| split_hostnames(v))
    }

    /// The `internal-hostname` annotation's names.
    pub fn internal_hostnames(&self) -> Option<Vec<String>> {
        self.get(INTERNAL_HOSTNAME).map(|(_, v)| split_hostnames(v))
    }

    /// The `target` annotation's targets, trailing dots removed (empty: none).
    pub fn targets(&self) -> Vec<String> {
        match self.get(TARGET) {
            Some((_, v)) if !v.is_empty() => split_hostnames(v)
                .into_iter()
                .map(|t| t.trim_end_matches('.').to_string())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The `ttl` annotation: `None` when absent; seconds (`600`) or a Go duration
    /// (`10m`, `1h30m`, `1.5s` → 1), between 1 and 2^31-1.
    pub fn ttl(&self) -> Result<Option<i64>, Problem> {
        let Some((key, v)) = self.get(TTL) else {
            return Ok(None);
        };
        let problem = |why: String| Problem {
            field: Annotations::field(&key),
            message: why,
        };
        let secs = parse_ttl(v).ok_or_else(|| {
            problem(format!(
                "{v:?} is not a TTL: seconds (300) or a duration (5m, 1h30m)"
            ))
        })?;
        if !(TTL_MIN..=TTL_MAX).contains(&secs) {
            return Err(problem(format!(
                "TTL {secs} is out of range: it must be between {TTL_MIN} and {TTL_MAX} seconds"
            )));
        }
        Ok(Some(secs))
    }

    /// The `set-identifier` annotation, or empty.
    pub fn set_identifier(&self) -> String {
        self.get(SET_IDENTIFIER)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default()
    }

    /// Why the object is not for this controller: a `controller` annotation whose value
    /// is not `dns-controller`.
    pub fn controller_mismatch(&self) -> Option<String> {
        match self.get(CONTROLLER) {
            Some((key, v)) if v != CONTROLLER_VALUE => Some(format!(
                "annotation {key}={v:?} names another controller (this one answers to {CONTROLLER_VALUE:?})"
            )),
            _ => None,
        }
    }

    /// external-dns's provider-specific properties and set identifier
    /// (`ProviderSpecificAnnotations`): `alias`, `record-type`, every `aws-*`, `scw-*`,
    /// `webhook-*`, `coredns-*`, `azure-tags`, and the five Cloudflare ones (which keep
    /// the full annotation key as their name, as external-dns does; with the GA
    /// prefix, as v0.22 writes them). Sorted by name: Go's map order is random, and
    /// external-dns's comparison sorts them too.
    pub fn provider_specific(&self) -> (Vec<(String, String)>, String) {
        let mut props = Vec::new();
        if self.get(ALIAS).is_some_and(|(_, v)| v == "true") {
            props.push(("alias".to_string(), "true".to_string()));
        }
        if let Some((_, v)) = self.get(RECORD_TYPE) {
            props.push(("record-type".to_string(), v.to_string()));
        }
        let mut seen = std::collections::BTreeSet::new();
        // GA first, so that it wins over the alpha key of the same name.
        for prefix in [PREFIX, ALPHA_PREFIX] {
            for (k, v) in self.iter() {
                let Some(attr) = k.strip_prefix(prefix) else {
                    continue;
                };
                let name = if let Some(a) = attr.strip_prefix("aws-") {
                    format!("aws/{a}")
                } else if let Some(a) = attr.strip_prefix("scw-") {
                    format!("scw/{a}")
                } else if let Some(a) = attr.strip_prefix("webhook-") {
                    format!("webhook/{a}")
                } else if let Some(a) = attr.strip_prefix("coredns-") {
                    format!("coredns/{a}")
                } else if attr == "azure-tags" {
                    "azure/tags".to_string()
                } else if let Some(a) = attr.strip_prefix("cloudflare-") {
                    match a {
                        "custom-hostname" | "proxied" | "region-key" | "record-comment"
                        | "tags" => format!("{PREFIX}cloudflare-{a}"),
                        _ => continue,
                    }
                } else {
                    continue;
                };
                if seen.insert(name.clone()) {
                    props.push((name, v.to_string()));
                }
            }
        }
        props.sort();
        (props, self.set_identifier())
    }
}

/// external-dns's `SplitHostnameAnnotation`: spaces removed, split on commas.
pub fn split_hostnames(v: &str) -> Vec<String> {
    v.replace(' ', "")
        .trim()
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Seconds of `s`: a Go duration (`10m`, `1h30m`, `1.5s`: fractions of a second are
/// dropped) or an integer.
pub fn parse_ttl(s: &str) -> Option<i64> {
    go_duration_secs(s).or_else(|| s.parse::<i64>().ok())
}

/// Go's `time.ParseDuration`, in whole seconds (truncated), for the units a TTL can
/// use: `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`; a sign; several parts (`1h30m`).
fn go_duration_secs(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() || num == "." {
            return None;
        }
        let value: f64 = num.parse().ok()?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += value * scale;
        rest = tail;
    }
    let secs = (nanos / 1e9).trunc() as i64;
    Some(if neg { -secs } else { secs })
}

/// A label selector (`--annotation-filter`, `--gateway-label-filter`), Kubernetes's
/// grammar: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`,
/// comma-separated, all of which must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl Selector {
    /// Parses `text`, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let req = if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(key(k)?)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEq(key(k)?, v.trim().to_string())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Eq(key(k)?, v.trim().to_string())
            } else if let Some((k, set)) = split_set(part, " notin ") {
                Requirement::NotIn(key(k)?, set?)
            } else if let Some((k, set)) = split_set(part, " in ") {
                Requirement::In(key(k)?, set?)
            } else {
                Requirement::Exists(key(part)?)
            };
            reqs.push(req);
        }
        Ok(Selector(reqs))
    }

    /// Whether `labels` (key, value pairs) satisfy every requirement.
    pub fn matches<'a>(&self, labels: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => labels(k) == Some(v.as_str()),
            Requirement::NotEq(k, v) => labels(k) != Some(v.as_str()),
            Requirement::Exists(k) => labels(k).is_some(),
            Requirement::NotExists(k) => labels(k).is_none(),
            Requirement::In(k, set) => labels(k).is_some_and(|v| set.iter().any(|s| s == v)),
            Requirement::NotIn(k, set) => labels(k).is_none_or(|v| !set.iter().any(|s| s == v)),
        })
    }
}

fn key(k: &str) -> Result<String, String> {
    let k = k.trim();
    if k.is_empty() || k.contains([' ', '(', ')', '=', '!']) {
        return Err(format!("{k:?} is not a key"));
    }
    Ok(k.to_string())
}

/// `k in (a, b)` → (`k`, [a, b]).
fn split_set<'a>(part: &'a str, op: &str) -> Option<(&'a str, Result<Vec<String>, String>)> {
    let (k, rest) = part.split_once(op)?;
    let rest = rest.trim();
    let set = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("{rest:?}: a set is written (a, b)"))
        .and_then(|inner| inner.split(',').map(set_value).collect());
    Some((k, set))
}

/// A value of a set: no spaces inside (`in (a b)` is a missing comma, as Kubernetes's
/// parser says).
fn set_value(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.contains(char::is_whitespace) {
        return Err(format!("{v:?} is not a value (a missing comma?)"));
    }
    Ok(v.to_string())
}

/// Splits on commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(annotations: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "annotations": annotations}})
    }

    #[test]
    fn both_prefixes_are_read_and_ga_wins() {
        let o = obj(
            json!({"external-dns.alpha.kubernetes.io/hostname": "a.example.com, b.example.com"}),
        );
        assert_eq!(
            Annotations::of(&o).hostnames(),
            Some(vec!["a.example.com".into(), "b.example.com".into()])
        );
        let o = obj(json!({
            "external-dns.alpha.kubernetes.io/ttl": "60",
            "external-dns.kubernetes.io/ttl": "10m",
        }));
        assert_eq!(Annotations::of(&o).ttl(), Ok(Some(600)));
    }

    #[test]
    fn ttl_reads_seconds_and_go_durations_and_refuses_the_rest() {
        for (text, secs) in [("600", 600), ("10m", 600), ("1h30m", 5400), ("1.5s", 1)] {
            let o = obj(json!({"external-dns.kubernetes.io/ttl": text}));
            assert_eq!(Annotations::of(&o).ttl(), Ok(Some(secs)), "{text}");
        }
        for text in ["abc", "0", "-5", "10x", "4294967296"] {
            let o = obj(json!({"external-dns.kubernetes.io/ttl": text}));
            let e = Annotations::of(&o).ttl().unwrap_err();
            assert_eq!(
                e.field, "metadata.annotations[\"external-dns.kubernetes.io/ttl\"]",
                "{text}"
            );
            assert!(e.message.contains(text.trim_start_matches('-')), "{e:?}");
        }
    }

    #[test]
    fn provider_specific_follows_external_dns() {
        let o = obj(json!({
            "external-dns.kubernetes.io/aws-weight": "10",
            "external-dns.alpha.kubernetes.io/cloudflare-proxied": "true",
            "external-dns.kubernetes.io/set-identifier": "blue",
            "external-dns.kubernetes.io/alias": "true",
            "external-dns.kubernetes.io/unrelated": "x",
        }));
        let (props, set) = Annotations::of(&o).provider_specific();
        assert_eq!(set, "blue");
        assert_eq!(
            props,
            vec![
                ("alias".to_string(), "true".to_string()),
                ("aws/weight".to_string(), "10".to_string()),
                (
                    "external-dns.kubernetes.io/cloudflare-proxied".to_string(),
                    "true".to_string()
                ),
            ]
        );
    }

    #[test]
    fn selectors_follow_the_kubernetes_grammar() {
        let labels = |k: &str| match k {
            "app" => Some("web"),
            "tier" => Some("front"),
            _ => None,
        };
        for (sel, want) in [
            ("app=web", true),
            ("app==web,tier", true),
            ("app!=web", false),
            ("!team", true),
            ("tier in (front, back)", true),
            ("tier notin (front)", false),
            ("team", false),
            ("", true),
        ] {
            assert_eq!(Selector::parse(sel).unwrap().matches(labels), want, "{sel}");
        }
        assert!(Selector::parse("app in front").is_err());
    }
}
