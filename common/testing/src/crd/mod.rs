//! A CustomResourceDefinition as a kube-apiserver uses it: its structural schema
//! checked, and objects pruned by it. A real API server drops every field the schema
//! of the CRD does not declare (on create, update and status writes); a fake that keeps
//! them hides a CRD that cannot hold what a controller writes. [`Crd::prune`] follows
//! the apiextensions-apiserver's rules (`pkg/apiserver/schema/pruning`):
//!
//! - at the object's root, `apiVersion`, `kind` and `metadata` are kept;
//! - in an object, a field in `properties` is pruned by its schema, any field by
//!   `additionalProperties` when there is one; the rest are dropped;
//! - an array's items are pruned by `items`;
//! - `x-kubernetes-preserve-unknown-fields: true` keeps the unknown fields of that
//!   node, and still prunes its declared ones;
//! - `x-kubernetes-embedded-resource: true` keeps `apiVersion`, `kind` and `metadata`;
//! - a `null` in a declared field that is not `nullable` (and has no `default`) is
//!   dropped;
//! - a value of the wrong type is left as it is (validation, which this does not do,
//!   refuses it).
//!
//! [`Crd::parse`] refuses, as the API server would, a schema that is not structural in
//! the ways a hand-written CRD goes wrong: a key that is not a JSON schema property
//! (a misspelling), a node without `type`, `properties` beside `additionalProperties`,
//! an array without `items`, list-map keys that are not required properties.
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

pub mod validate;

/// dnsplane's DNSEndpoint CRD, as `deploy/k8s` ships it.
pub const DNSPLANE_CRD: &str = include_str!("../../../../deploy/k8s/05-crd-dnsendpoint.yaml");

/// external-dns's DNSEndpoint CRD, its structure (see the fixture's header): the CRD
/// whose status schema prunes dnsplane's `conditions`.
pub const EXTERNAL_DNS_CRD: &str = include_str!("../../fixtures/external-dns-dnsendpoint-crd.yaml");

/// The Gateway API's CRDs as its standard install ships them (`crds/gateway-api/`,
/// see its README for the release), by plural.
pub const GATEWAY_API_CRDS: [(&str, &str); 6] = [
    (
        "gateways",
        include_str!("../../crds/gateway-api/gateway.networking.k8s.io_gateways.yaml"),
    ),
    (
        "httproutes",
        include_str!("../../crds/gateway-api/gateway.networking.k8s.io_httproutes.yaml"),
    ),
    (
        "grpcroutes",
        include_str!("../../crds/gateway-api/gateway.networking.k8s.io_grpcroutes.yaml"),
    ),
    (
        "tlsroutes",
        include_str!("../../crds/gateway-api/gateway.networking.k8s.io_tlsroutes.yaml"),
    ),
    (
        "tcproutes",
        include_str!("../../crds/gateway-api/gateway.networking.k8s.io_tcproutes.yaml"),
    ),
    (
        "udproutes",
        include_str!("../../crds/gateway-api/gateway.networking.k8s.io_udproutes.yaml"),
    ),
];

/// [`GATEWAY_API_CRDS`] parsed (once per process: they are 1 MB of YAML).
pub fn gateway_api() -> &'static [Arc<Crd>] {
    static PARSED: OnceLock<Vec<Arc<Crd>>> = OnceLock::new();
    PARSED.get_or_init(|| {
        GATEWAY_API_CRDS
            .iter()
            .map(|(plural, yaml)| {
                let crd =
                    Crd::parse(yaml).unwrap_or_else(|e| panic!("crds/gateway-api {plural}: {e}"));
                assert_eq!(crd.plural, *plural);
                Arc::new(crd)
            })
            .collect()
    })
}

/// The keys of a JSON schema node (apiextensions.k8s.io/v1 `JSONSchemaProps`).
const SCHEMA_KEYS: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// One served version of a CRD: what the fake API server needs of it.
#[derive(Debug, Clone)]
pub struct Crd {
    pub group: String,
    pub plural: String,
    pub kind: String,
    pub version: String,
    /// Whether the version has the status subresource.
    pub status_subresource: bool,
    /// The version's `openAPIV3Schema`.
    pub schema: Value,
}

impl Crd {
    /// The CRD in `yaml` (one document), with its first served version; an error for
    /// what the API server would refuse (see the module's doc).
    pub fn parse(yaml: &str) -> Result<Crd, String> {
        let doc = yaml_to_json(yaml)?;
        let text = |pointer: &str| {
            doc.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("the CRD has no {pointer}"))
        };
        if text("/kind")? != "CustomResourceDefinition"
            || text("/apiVersion")? != "apiextensions.k8s.io/v1"
        {
            return Err("not an apiextensions.k8s.io/v1 CustomResourceDefinition".into());
        }
        let (group, plural) = (text("/spec/group")?, text("/spec/names/plural")?);
        if text("/metadata/name")? != format!("{plural}.{group}") {
            return Err("metadata.name must be <plural>.<group>".into());
        }
        let version = doc
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| vs.iter().find(|v| v["served"] == true))
            .ok_or("the CRD serves no version")?;
        let schema = version
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .ok_or("the served version has no schema.openAPIV3Schema")?;
        check_structural(&schema, "openAPIV3Schema")?;
        if schema["type"] != "object" {
            return Err("openAPIV3Schema: the root must be of type object".into());
        }
        Ok(Crd {
            group,
            plural,
            kind: text("/spec/names/kind")?,
            version: version["name"].as_str().unwrap_or_default().to_string(),
            status_subresource: version.pointer("/subresources/status").is_some(),
            schema,
        })
    }

    /// What the API server does to an object written: prunes it, sets its defaults
    /// and validates it ([`validate`]); the errors are (field path, message).
    pub fn admit(&self, object: &mut Value) -> Result<(), Vec<validate::FieldError>> {
        self.prune(object);
        validate::default(object, &self.schema);
        let mut errs = Vec::new();
        validate::validate(object, &self.schema, "", &mut errs);
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    /// Prunes a whole object (its root: `apiVersion`, `kind` and `metadata` kept).
    pub fn prune(&self, object: &mut Value) {
        if let Value::Object(map) = object {
            prune_nulls(map, &self.schema);
            map.retain(|k, v| {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    return true;
                }
                match self.schema["properties"].get(k) {
                    Some(s) => {
                        prune(v, Some(s));
                        true
                    }
                    None => self.schema["x-kubernetes-preserve-unknown-fields"] == true,
                }
            });
        }
    }
}

/// Prunes `x` by `schema` (none: nothing is declared there).
pub fn prune(x: &mut Value, schema: Option<&Value>) {
    if let Some(s) = schema
        && s["x-kubernetes-preserve-unknown-fields"] == true
    {
        return prune_known(x, s);
    }
    match x {
        Value::Object(map) => {
            let Some(s) = schema else {
                map.clear();
                return;
            };
            prune_nulls(map, s);
            let embedded = s["x-kubernetes-embedded-resource"] == true;
            map.retain(|k, v| {
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    return true;
                }
                match field_schema(s, k) {
                    Some(field) => {
                        prune(v, field);
                        true
                    }
                    None => false,
                }
            });
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            for item in items {
                prune(item, item_schema);
            }
        }
        _ => {}
    }
}

/// A node that keeps its unknown fields: only the declared ones are pruned.
fn prune_known(x: &mut Value, s: &Value) {
    match x {
        Value::Object(map) => {
            prune_nulls(map, s);
            for (k, v) in map.iter_mut() {
                if let Some(field) = field_schema(s, k) {
                    prune(v, field);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    prune_known(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// The schema of field `k` of an object node `s`: `Some(Some(schema))` if declared,
/// `Some(None)` if `additionalProperties: true` (kept, its own content undeclared),
/// `None` if unknown.
fn field_schema<'a>(s: &'a Value, k: &str) -> Option<Option<&'a Value>> {
    if let Some(p) = s["properties"].get(k) {
        return Some(Some(p));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(true)) => Some(None),
        Some(a @ Value::Object(_)) => Some(Some(a)),
        _ => None,
    }
}

/// Drops the declared fields that are `null` but may not be.
fn prune_nulls(map: &mut Map<String, Value>, s: &Value) {
    map.retain(|k, v| {
        let Some(p) = s["properties"].get(k) else {
            return true;
        };
        !(v.is_null() && p["nullable"] != true && p.get("default").is_none())
    });
}

/// The structural rules a hand-written schema breaks (see the module's doc).
fn check_structural(s: &Value, at: &str) -> Result<(), String> {
    let Some(node) = s.as_object() else {
        return Err(format!("{at}: not a schema object"));
    };
    if let Some(k) = node.keys().find(|k| !SCHEMA_KEYS.contains(&k.as_str())) {
        return Err(format!("{at}: unknown field {k:?}"));
    }
    let preserve = s["x-kubernetes-preserve-unknown-fields"] == true
        || s["x-kubernetes-int-or-string"] == true;
    let ty = s["type"].as_str().unwrap_or("");
    if ty.is_empty() && !preserve {
        return Err(format!("{at}: type must not be empty"));
    }
    if !matches!(
        ty,
        "" | "object" | "array" | "string" | "integer" | "number" | "boolean"
    ) {
        return Err(format!("{at}: unknown type {ty:?}"));
    }
    if s.get("properties").is_some() && s.get("additionalProperties").is_some() {
        return Err(format!(
            "{at}: properties and additionalProperties are mutually exclusive"
        ));
    }
    if ty == "array" && s.get("items").is_none() {
        return Err(format!("{at}: an array must have items"));
    }
    if let Some(props) = s.get("properties") {
        let props = props
            .as_object()
            .ok_or_else(|| format!("{at}.properties: not a map"))?;
        for (k, p) in props {
            check_structural(p, &format!("{at}.properties[{k}]"))?;
        }
    }
    if let Some(a @ Value::Object(_)) = s.get("additionalProperties") {
        check_structural(a, &format!("{at}.additionalProperties"))?;
    }
    if let Some(items) = s.get("items") {
        check_structural(items, &format!("{at}.items"))?;
    }
    if let Some(required) = s.get("required") {
        let declared = |r: &Value| r.as_str().is_some_and(|r| s["properties"].get(r).is_some());
        if !required.as_array().is_some_and(|r| r.iter().all(declared)) {
            return Err(format!("{at}.required: names a field not in properties"));
        }
    }
    match s["x-kubernetes-list-type"].as_str() {
        None if s.get("x-kubernetes-list-map-keys").is_some() => {
            return Err(format!(
                "{at}: x-kubernetes-list-map-keys needs x-kubernetes-list-type: map"
            ));
        }
        None | Some("atomic" | "set") => {}
        Some("map") => {
            let item = &s["items"];
            let keys = s["x-kubernetes-list-map-keys"]
                .as_array()
                .filter(|k| !k.is_empty())
                .ok_or_else(|| format!("{at}: a map list needs x-kubernetes-list-map-keys"))?;
            for key in keys {
                let required = item["required"].as_array().is_some_and(|r| r.contains(key));
                let scalar = key.as_str().is_some_and(|k| {
                    matches!(
                        item["properties"][k]["type"].as_str(),
                        Some("string" | "integer" | "number" | "boolean")
                    )
                });
                if !required || !scalar {
                    return Err(format!(
                        "{at}: list-map key {key} must be a required scalar property of the items"
                    ));
                }
            }
        }
        Some(other) => return Err(format!("{at}: unknown x-kubernetes-list-type {other:?}")),
    }
    if let Some(values) = s.get("enum") {
        let fits = |v: &Value| match ty {
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            _ => true,
        };
        if !values.as_array().is_some_and(|v| v.iter().all(fits)) {
            return Err(format!("{at}.enum: values must be of type {ty}"));
        }
    }
    Ok(())
}

/// One YAML document as JSON: plain scalars that read as booleans, integers or floats
/// become them, as YAML 1.2's core schema has it; quoted scalars stay strings.
pub fn yaml_to_json(text: &str) -> Result<Value, String> {
    let options = marked_yaml::LoaderOptions::default().prevent_coercion(true);
    let node = marked_yaml::parse_yaml_with_options(0, text, options).map_err(|e| e.to_string())?;
    Ok(node_to_json(&node))
}

fn node_to_json(node: &marked_yaml::Node) -> Value {
    match node {
        marked_yaml::Node::Scalar(s) => {
            if let Some(b) = s.as_bool() {
                Value::Bool(b)
            } else if let Some(i) = s.as_i64() {
                Value::from(i)
            } else if let Some(f) = s.as_f64().filter(|_| {
                s.as_str()
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
            }) {
                Value::from(f)
            } else if s.may_coerce() && matches!(s.as_str(), "null" | "~" | "") {
                Value::Null
            } else {
                Value::String(s.as_str().to_string())
            }
        }
        marked_yaml::Node::Sequence(s) => Value::Array(s.iter().map(node_to_json).collect()),
        marked_yaml::Node::Mapping(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), node_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A status as dnsplane writes it (planner/src/source/kubernetes/status.rs).
    fn dnsplane_status() -> Value {
        json!({
            "observedGeneration": 3,
            "conditions": [{
                "type": "Ready", "status": "False", "reason": "Conflict",
                "message": "app.example.com. A: conflict: exists; 0 of 1 record(s) converged",
                "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 3,
            }],
        })
    }

    fn object(status: Value) -> Value {
        json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
            "metadata": {"name": "app", "namespace": "web", "generation": 3},
            "spec": {"endpoints": [{
                "dnsName": "app.example.com", "recordType": "A", "targets": ["192.0.2.1"],
                "recordTTL": 60, "setIdentifier": "eu", "labels": {"k": "v"},
                "providerSpecific": [{"name": "alias", "value": "true"}],
            }]},
            "status": status,
        })
    }

    /// The problem: external-dns's CRD declares only `observedGeneration` in the
    /// status, so an API server with it drops dnsplane's conditions.
    #[test]
    fn external_dns_crd_prunes_the_conditions() {
        let crd = Crd::parse(EXTERNAL_DNS_CRD).unwrap();
        let mut o = object(dnsplane_status());
        crd.prune(&mut o);
        assert_eq!(o["status"], json!({"observedGeneration": 3}));
        assert_eq!(
            o["spec"],
            object(Value::Null)["spec"],
            "the spec is declared"
        );
    }

    /// dnsplane's CRD keeps what dnsplane writes, and external-dns's spec whole.
    #[test]
    fn dnsplane_crd_keeps_the_status_and_the_spec() {
        let crd = Crd::parse(DNSPLANE_CRD).unwrap();
        assert_eq!(
            (
                crd.group.as_str(),
                crd.version.as_str(),
                crd.kind.as_str(),
                crd.plural.as_str()
            ),
            (
                "externaldns.k8s.io",
                "v1alpha1",
                "DNSEndpoint",
                "dnsendpoints"
            )
        );
        assert!(crd.status_subresource);
        let want = object(dnsplane_status());
        let mut o = want.clone();
        crd.prune(&mut o);
        assert_eq!(o, want);
        // Undeclared fields still go, at any depth.
        let mut o = want.clone();
        o["status"]["conditions"][0]["extra"] = json!(1);
        o["status"]["extra"] = json!({"a": 1});
        o["spec"]["endpoints"][0]["extra"] = json!("x");
        o["spec"]["extra"] = json!([]);
        o["extra"] = json!(1);
        crd.prune(&mut o);
        assert_eq!(o, want);
    }

    #[test]
    fn pruning_follows_the_apiserver_rules() {
        let schema = json!({
            "type": "object",
            "properties": {
                "kept": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
                "opaque": {"type": "object"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
                "nullable": {"type": "string", "nullable": true},
                "notnull": {"type": "string"},
                "wrong": {"type": "object", "properties": {"a": {"type": "string"}}},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            },
        });
        let mut x = json!({
            "kept": {"anything": {"deep": 1}, "inner": {"a": "1", "b": "2"}},
            "map": {"one": {"x": "1", "y": "2"}, "two": {}},
            "opaque": {"a": 1},
            "list": [{"n": 1, "m": 2}, {"m": 3}],
            "nullable": null,
            "notnull": null,
            "wrong": "a string",
            "embedded": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                         "spec": {"free": true}, "other": 1},
            "unknown": 1,
        });
        prune(&mut x, Some(&schema));
        assert_eq!(
            x,
            json!({
                "kept": {"anything": {"deep": 1}, "inner": {"a": "1"}},
                "map": {"one": {"x": "1"}, "two": {}},
                "opaque": {},
                "list": [{"n": 1}, {}],
                "nullable": null,
                "wrong": "a string",
                "embedded": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                             "spec": {"free": true}},
            })
        );
    }

    /// What the API server refuses in a CRD, refused here (so that a misspelt schema
    /// key fails the deploy tests, which kubernetes-validate does not look into).
    #[test]
    fn a_schema_that_is_not_structural_is_refused() {
        for (from, to, why) in [
            ("maxLength: 32768", "maxLenght: 32768", "unknown field"),
            (
                "                        type: integer\n                        format: int64\n                      recordType:",
                "                        format: int64\n                      recordType:",
                "type must not be empty",
            ),
            (
                "                    - type\n                  items:",
                "                    - observedGeneration\n                  items:",
                "list-map key",
            ),
            ("storage: true", "storage: true\n      x: 1", ""),
        ] {
            assert!(DNSPLANE_CRD.contains(from), "{from}");
            let broken = DNSPLANE_CRD.replacen(from, to, 1);
            match Crd::parse(&broken) {
                Err(e) => assert!(!why.is_empty() && e.contains(why), "{e}"),
                // Outside the schema: not this check's business (kubernetes-validate's).
                Ok(_) => assert!(why.is_empty(), "{from} -> {to} accepted"),
            }
        }
    }

    #[test]
    fn yaml_scalars_take_their_types() {
        let v = yaml_to_json("a: true\nb: \"true\"\nc: 12\nd: '12'\ne: 1.5\nf: ~\ng: 1.2.3\n");
        assert_eq!(
            v.unwrap(),
            json!({"a": true, "b": "true", "c": 12, "d": "12", "e": 1.5, "f": null, "g": "1.2.3"})
        );
    }
}

#[cfg(test)]
mod gateway_tests;
