//! The Gateway API's own CRDs and examples (crds/gateway-api) through the API
//! server's pruning, defaulting and validation.
use super::*;
use serde_json::json;

const EXAMPLES: [&str; 4] = [
    include_str!("../../crds/gateway-api/examples/http-routing-bar-httproute.yaml"),
    include_str!("../../crds/gateway-api/examples/http-routing-gateway.yaml"),
    include_str!("../../crds/gateway-api/examples/grpc-routing-foo-grpcroute.yaml"),
    include_str!("../../crds/gateway-api/examples/http-filter.yaml"),
];

fn crd_of(kind: &str) -> &'static Crd {
    gateway_api()
        .iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
}

/// Whether everything in `given` is in `stored` with the same value (`stored` may
/// have more: the defaults).
fn keeps(stored: &Value, given: &Value) -> bool {
    match (stored, given) {
        (Value::Object(s), Value::Object(g)) => g
            .iter()
            .all(|(k, v)| s.get(k).is_some_and(|sv| keeps(sv, v))),
        (Value::Array(s), Value::Array(g)) => {
            s.len() == g.len() && s.iter().zip(g).all(|(a, b)| keeps(a, b))
        }
        (s, g) => s == g,
    }
}

fn docs(text: &str) -> Vec<Value> {
    text.split("\n---\n")
        .map(|d| yaml_to_json(d).expect("an example parses"))
        .collect()
}

fn bar_route() -> Value {
    docs(EXAMPLES[0]).remove(0)
}

fn errors_of(mut object: Value) -> Vec<validate::FieldError> {
    let kind = object["kind"].as_str().unwrap().to_string();
    crd_of(&kind).admit(&mut object).err().unwrap_or_default()
}

#[test]
fn the_standard_channel_crds_parse() {
    let got: Vec<(String, String, String, bool)> = gateway_api()
        .iter()
        .map(|c| {
            (
                c.kind.clone(),
                c.group.clone(),
                c.version.clone(),
                c.status_subresource,
            )
        })
        .collect();
    let want: Vec<(String, String, String, bool)> = [
        "Gateway",
        "HTTPRoute",
        "GRPCRoute",
        "TLSRoute",
        "TCPRoute",
        "UDPRoute",
    ]
    .iter()
    .map(|k| {
        (
            k.to_string(),
            "gateway.networking.k8s.io".into(),
            "v1".into(),
            true,
        )
    })
    .collect();
    assert_eq!(got, want);
}

/// The gateway-api repository's own examples are accepted, and everything they say
/// kept; the API server's defaults are added (a parentRef's group and kind, a
/// backendRef's weight, a rule's match).
#[test]
fn the_projects_examples_are_accepted_unchanged() {
    let mut n = 0;
    for text in EXAMPLES {
        for given in docs(text) {
            let kind = given["kind"].as_str().unwrap().to_string();
            let mut stored = given.clone();
            let admitted = crd_of(&kind).admit(&mut stored);
            assert_eq!(admitted, Ok(()), "{kind} {}", given["metadata"]["name"]);
            assert!(keeps(&stored, &given), "{kind}: {given}\nbecame {stored}");
            n += 1;
        }
    }
    assert_eq!(n, 5);
    let mut stored = bar_route();
    crd_of("HTTPRoute").admit(&mut stored).unwrap();
    assert_eq!(
        stored["spec"]["parentRefs"][0],
        json!({"name": "example-gateway", "group": "gateway.networking.k8s.io", "kind": "Gateway"})
    );
    assert_eq!(stored["spec"]["rules"][1]["backendRefs"][0]["weight"], 1);
    assert_eq!(
        stored["spec"]["rules"][1]["matches"],
        json!([{"path": {"type": "PathPrefix", "value": "/"}}])
    );
}

#[test]
fn what_the_schema_forbids_is_refused_with_field_paths() {
    let mut r = bar_route();
    r["spec"]["hostnames"] = json!("bar.example.com");
    assert_eq!(
        errors_of(r),
        vec![(
            "spec.hostnames".to_string(),
            "Invalid value: \"string\": spec.hostnames in body must be of type array: \"string\""
                .to_string()
        )]
    );

    let mut r = bar_route();
    r["spec"]["rules"][1]["backendRefs"][0]["port"] = json!("8080");
    r["spec"]["rules"][0]["matches"][0]["headers"][0]["type"] = json!("Fuzzy");
    r["spec"]["rules"][1]["backendRefs"][0]
        .as_object_mut()
        .unwrap()
        .remove("name");
    r["spec"]["hostnames"] = json!(["-bad-.example.com"]);
    let errs = errors_of(r);
    let fields: Vec<&str> = errs.iter().map(|(f, _)| f.as_str()).collect();
    for want in [
        "spec.hostnames[0]",
        "spec.rules[0].matches[0].headers[0].type",
        "spec.rules[1].backendRefs[0].name",
        "spec.rules[1].backendRefs[0].port",
    ] {
        assert!(fields.contains(&want), "{want} in {errs:?}");
    }
    let msg = |f: &str| &errs.iter().find(|(p, _)| p == f).unwrap().1;
    assert_eq!(msg("spec.rules[1].backendRefs[0].name"), "Required value");
    assert!(msg("spec.rules[0].matches[0].headers[0].type").starts_with(
        "Unsupported value: \"Fuzzy\": supported values: \"Exact\", \"RegularExpression\""
    ));
    assert!(msg("spec.hostnames[0]").contains("in body should match"));

    let mut r = bar_route();
    r["spec"]["hostnames"] = json!(
        (0..17)
            .map(|i| format!("h{i}.example.com"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        errors_of(r),
        vec![(
            "spec.hostnames".to_string(),
            "Too many: 17: must have at most 16 items".to_string()
        )]
    );

    // Unknown fields are pruned, not refused (the API server's default).
    let mut r = bar_route();
    r["spec"]["extra"] = json!(1);
    let mut stored = r.clone();
    crd_of("HTTPRoute").admit(&mut stored).unwrap();
    assert!(stored["spec"].get("extra").is_none());

    // A Gateway: duplicate listener names (a map list), an address that is no IP.
    let mut g = docs(EXAMPLES[1]).remove(0);
    let listener = g["spec"]["listeners"][0].clone();
    g["spec"]["listeners"]
        .as_array_mut()
        .unwrap()
        .push(listener);
    g["spec"]["addresses"] = json!([{"type": "IPAddress", "value": "not-an-ip"}]);
    let errs = errors_of(g);
    let fields: Vec<&str> = errs.iter().map(|(f, _)| f.as_str()).collect();
    assert!(fields.contains(&"spec.listeners[1]"), "{errs:?}");
    assert!(
        fields.contains(&"spec.addresses[0]") || fields.contains(&"spec.addresses[0].value"),
        "{errs:?}"
    );
}
