//! What the API server does with a CRD's structural schema besides pruning:
//! defaulting (`default`, applied where a field is absent, or null and not nullable)
//! and validation of what kube-openapi checks from the schema: `type` (and
//! `x-kubernetes-int-or-string`), `required`, `enum`, `minLength`/`maxLength`
//! (characters), `pattern` (as RE2, which Rust's `regex` reads the same), `format`
//! `ipv4`/`ipv6`, `minimum`/`maximum`, `minItems`/`maxItems`, uniqueness in
//! `x-kubernetes-list-type: set` and the keys of `map` lists, and the value
//! validations in `allOf`/`anyOf`/`oneOf`/`not`. Each error is a field path and the
//! API server's wording.
//!
//! Not done: CEL rules (`x-kubernetes-validations`: the Gateway API CRDs use them for
//! cross-field rules; the fake accepts what they would refuse), `multipleOf`,
//! `maxProperties`, and formats other than IP addresses.
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// One field error: (path, message).
pub type FieldError = (String, String);

/// Sets the schema's defaults in `x`, recursively, as the API server does on write.
pub fn default(x: &mut Value, s: &Value) {
    match x {
        Value::Object(map) => {
            if let Some(props) = s["properties"].as_object() {
                for (k, p) in props {
                    let Some(d) = p.get("default") else { continue };
                    let missing = match map.get(k) {
                        None => true,
                        Some(Value::Null) => p["nullable"] != true,
                        Some(_) => false,
                    };
                    if missing {
                        map.insert(k.clone(), d.clone());
                    }
                }
                for (k, v) in map.iter_mut() {
                    if let Some(p) = props.get(k) {
                        default(v, p);
                    }
                }
            } else if let Some(a @ Value::Object(_)) = s.get("additionalProperties") {
                for v in map.values_mut() {
                    default(v, a);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = s.get("items") {
                for v in items {
                    default(v, item);
                }
            }
        }
        _ => {}
    }
}

fn type_name(x: &Value) -> &'static str {
    match x {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as Go's field errors print it: scalars as JSON, the rest by type.
fn shown(x: &Value) -> String {
    match x {
        Value::Array(_) | Value::Object(_) => format!("\"{}\"", type_name(x)),
        v => v.to_string(),
    }
}

fn has_type(x: &Value, ty: &str) -> bool {
    match ty {
        "object" => x.is_object(),
        "array" => x.is_array(),
        "string" => x.is_string(),
        "boolean" => x.is_boolean(),
        "number" => x.is_number(),
        "integer" => x.is_i64() || x.is_u64() || x.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

fn pattern(p: &str) -> Option<Regex> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .entry(p.to_string())
        .or_insert_with(|| Regex::new(p).ok())
        .clone()
}

/// Validates `x` at `path` against schema `s`, appending to `errs`.
fn invalid(errs: &mut Vec<FieldError>, path: &str, x: &Value, detail: String) {
    errs.push((
        path.to_string(),
        format!("Invalid value: {}: {detail}", shown(x)),
    ));
}

/// A type mismatch: the API server shows the value's type, not the value.
fn wrong_type(errs: &mut Vec<FieldError>, path: &str, x: &Value, want: &str) {
    let got = type_name(x);
    errs.push((
        path.to_string(),
        format!("Invalid value: \"{got}\": {path} in body must be of type {want}: \"{got}\""),
    ));
}

pub fn validate(x: &Value, s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if x.is_null() {
        if s["nullable"] != true && s.get("type").is_some() {
            wrong_type(errs, path, x, s["type"].as_str().unwrap_or(""));
        }
        return;
    }
    if s["x-kubernetes-int-or-string"] == true {
        if !(has_type(x, "integer") || x.is_string()) {
            wrong_type(errs, path, x, "integer,string");
            return;
        }
    } else if let Some(ty) = s["type"].as_str()
        && !has_type(x, ty)
    {
        wrong_type(errs, path, x, ty);
        return;
    }
    if let Some(values) = s["enum"].as_array()
        && !values.contains(x)
    {
        let supported: Vec<String> = values.iter().map(Value::to_string).collect();
        errs.push((
            path.to_string(),
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(x),
                supported.join(", ")
            ),
        ));
    }
    match x {
        Value::String(v) => {
            let chars = v.chars().count() as u64;
            if let Some(max) = s["maxLength"].as_u64()
                && chars > max
            {
                errs.push((
                    path.to_string(),
                    format!("Too long: may not be more than {max} bytes"),
                ));
            }
            if let Some(min) = s["minLength"].as_u64()
                && chars < min
            {
                invalid(
                    errs,
                    path,
                    x,
                    format!("{path} in body should be at least {min} chars long"),
                );
            }
            if let Some(p) = s["pattern"].as_str()
                && pattern(p).is_some_and(|re| !re.is_match(v))
            {
                invalid(errs, path, x, format!("{path} in body should match '{p}'"));
            }
            let bad_format = match s["format"].as_str() {
                Some("ipv4") => v.parse::<std::net::Ipv4Addr>().is_err(),
                Some("ipv6") => v.parse::<std::net::Ipv6Addr>().is_err(),
                _ => false,
            };
            if bad_format {
                invalid(
                    errs,
                    path,
                    x,
                    format!(
                        "{path} in body must be of type {}: {x}",
                        s["format"].as_str().unwrap_or("")
                    ),
                );
            }
        }
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if let Some(max) = s["maximum"].as_f64()
                && (f > max || (s["exclusiveMaximum"] == true && f >= max))
            {
                invalid(
                    errs,
                    path,
                    x,
                    format!(
                        "{path} in body should be less than or equal to {}",
                        s["maximum"]
                    ),
                );
            }
            if let Some(min) = s["minimum"].as_f64()
                && (f < min || (s["exclusiveMinimum"] == true && f <= min))
            {
                invalid(
                    errs,
                    path,
                    x,
                    format!(
                        "{path} in body should be greater than or equal to {}",
                        s["minimum"]
                    ),
                );
            }
        }
        Value::Array(items) => {
            if let Some(max) = s["maxItems"].as_u64()
                && items.len() as u64 > max
            {
                errs.push((
                    path.to_string(),
                    format!("Too many: {}: must have at most {max} items", items.len()),
                ));
            }
            if let Some(min) = s["minItems"].as_u64()
                && (items.len() as u64) < min
            {
                invalid(
                    errs,
                    path,
                    x,
                    format!("{path} in body should have at least {min} items"),
                );
            }
            list_uniqueness(items, s, path, errs);
            if let Some(item) = s.get("items") {
                for (i, v) in items.iter().enumerate() {
                    validate(v, item, &format!("{path}[{i}]"), errs);
                }
            }
        }
        Value::Object(map) => object(map, s, path, errs),
        _ => {}
    }
    combinators(x, s, path, errs);
}

fn child(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn object(map: &Map<String, Value>, s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(required) = s["required"].as_array() {
        for r in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(r) {
                errs.push((child(path, r), "Required value".into()));
            }
        }
    }
    for (k, v) in map {
        if let Some(p) = s["properties"].get(k) {
            validate(v, p, &child(path, k), errs);
        } else if let Some(a @ Value::Object(_)) = s.get("additionalProperties") {
            validate(v, a, &child(path, k), errs);
        }
    }
}

fn list_uniqueness(items: &[Value], s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let keys: Vec<&str> = s["x-kubernetes-list-map-keys"]
        .as_array()
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let identity = |v: &Value| -> Option<String> {
        match s["x-kubernetes-list-type"].as_str() {
            Some("set") => Some(v.to_string()),
            Some("map") => {
                let m: Map<String, Value> = keys
                    .iter()
                    .filter_map(|k| v.get(*k).map(|x| ((*k).to_string(), x.clone())))
                    .collect();
                Some(Value::Object(m).to_string())
            }
            _ => None,
        }
    };
    let mut seen = std::collections::HashSet::new();
    for (i, v) in items.iter().enumerate() {
        if let Some(id) = identity(v)
            && !seen.insert(id.clone())
        {
            errs.push((format!("{path}[{i}]"), format!("Duplicate value: {id}")));
        }
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`: value validations on the same value.
fn combinators(x: &Value, s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let passes = |sub: &Value| {
        let mut e = Vec::new();
        validate(x, sub, path, &mut e);
        e.is_empty()
    };
    if let Some(all) = s["allOf"].as_array() {
        for sub in all {
            validate(x, sub, path, errs);
        }
    }
    let mut invalid = |detail: &str| {
        errs.push((
            path.to_string(),
            format!("Invalid value: {}: {detail}", shown(x)),
        ));
    };
    if let Some(any) = s["anyOf"].as_array()
        && !any.iter().any(passes)
    {
        invalid("must validate at least one schema (anyOf)");
    }
    if let Some(one) = s["oneOf"].as_array()
        && one.iter().filter(|sub| passes(sub)).count() != 1
    {
        invalid("must validate one and only one schema (oneOf)");
    }
    if let Some(not) = s.get("not")
        && passes(not)
    {
        invalid("must not validate the schema (not)");
    }
}
