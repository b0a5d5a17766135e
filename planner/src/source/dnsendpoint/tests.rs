use super::*;
use crate::source::testing::{entry, keys};

const MULTI: &str = "\
# not a DNSEndpoint
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
data: {a: b}
---
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSEndpoint
metadata:
  name: web
  namespace: prod
spec:
  endpoints:
    - dnsName: WWW.Example.com
      recordType: a
      recordTTL: 300
      targets: [\"192.0.2.2\", \" 192.0.2.1\", \"192.0.2.2\"]
      labels: {owner: x}
      providerSpecific: [{name: a, value: b}]
    - dnsName: shop.example.com
      recordType: CNAME
      targets: [www.example.com]
---
kind: DNSEndpoint
metadata: {name: txt}
spec:
  endpoints:
  - dnsName: example.com
    recordType: TXT
    recordTTL: 0
    targets: [\"v=spf1 -all\"]
...
";

#[test]
fn parses_multi_document_files_and_skips_other_kinds() {
    let (entries, errors) = parse_manifests("web.yaml", MULTI);
    assert_eq!(errors, vec![]);
    assert_eq!(
        keys(&entries),
        vec![
            entry("www.example.com.", "A", &["192.0.2.1", "192.0.2.2"]),
            entry("shop.example.com.", "CNAME", &["www.example.com."]),
            entry("example.com.", "TXT", &["\"v=spf1 -all\""]),
        ]
    );
    assert_eq!(entries[0].ttl, Some(300));
    assert_eq!(entries[1].ttl, None);
    assert_eq!(
        entries[2].ttl, None,
        "recordTTL 0 means unset, as in external-dns"
    );
    let origins: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| (&*e.origin.source, &*e.origin.location, &*e.origin.resource))
        .collect();
    assert_eq!(
        origins,
        vec![
            ("file", "web.yaml:15", "DNSEndpoint prod/web"),
            ("file", "web.yaml:21", "DNSEndpoint prod/web"),
            ("file", "web.yaml:29", "DNSEndpoint default/txt"),
        ]
    );
}

#[test]
fn list_objects_are_read_item_by_item() {
    let text = "kind: List\nitems:\n  - kind: DNSEndpoint\n    metadata: {name: a}\n    spec:\n      endpoints:\n        - {dnsName: a.example.com, recordType: AAAA, targets: [\"2001:DB8::1\"]}\n  - kind: Service\n    metadata: {name: s}\n";
    let (entries, errors) = parse_manifests("l.yaml", text);
    assert_eq!(errors, vec![]);
    assert_eq!(
        keys(&entries),
        vec![entry("a.example.com.", "AAAA", &["2001:db8::1"])]
    );
    assert_eq!(&*entries[0].origin.location, "l.yaml:7");
    assert_eq!(&*entries[0].origin.resource, "DNSEndpoint default/a");
}

#[test]
fn malformed_yaml_reports_the_parsers_line_in_the_file() {
    // The error is in the second document, so its line must be mapped back.
    let text = "\
kind: DNSEndpoint
metadata: {name: a}
spec:
  endpoints:
    - dnsName: a.example.com
      recordType: A
      targets: [192.0.2.1]
---
kind: DNSEndpoint
metadata: {name: b}
spec:
  endpoints:
    - dnsName: b.example.com
      recordType: A: B
      targets: [192.0.2.2]
";
    let (entries, errors) = parse_manifests("bad.yaml", text);
    assert_eq!(entries, vec![], "a file with a YAML error is not used");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].location, "bad.yaml:14");
    assert_eq!(errors[0].record, "");
    assert!(
        errors[0]
            .message
            .starts_with("invalid YAML: mapping values are not allowed"),
        "{}",
        errors[0]
    );

    let (_, errors) = parse_manifests(
        "dup.yaml",
        "kind: DNSEndpoint\nmetadata: {name: a}\nkind: Other\n",
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].location, "dup.yaml:3");
    assert!(
        errors[0]
            .message
            .contains("duplicate key \"kind\" (first at line 1)"),
        "{}",
        errors[0]
    );
}

#[test]
fn bad_target_reports_its_own_line() {
    let text = "\
kind: DNSEndpoint
metadata: {name: web}
spec:
  endpoints:
    - dnsName: app.example.com
      recordType: A
      targets:
        - 192.0.2.10
        - 300.1.1.1
    - dnsName: www.example.com
      recordType: A
      targets: [192.0.2.20]
";
    let (entries, errors) = parse_manifests("deploy/examples/desired/web.yaml", text);
    assert_eq!(
        keys(&entries),
        vec![entry("www.example.com.", "A", &["192.0.2.20"])]
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "deploy/examples/desired/web.yaml:9: app.example.com. A: target \"300.1.1.1\": not a valid IPv4 address"
    );
    assert_eq!(errors[0].source, "file");
    assert_eq!(errors[0].record, "app.example.com. A");
}

#[test]
fn every_problem_names_its_line() {
    let text = "\
kind: DNSEndpoint
metadata: {name: web}
spec:
  endpoints:
    - recordType: A
      targets: [192.0.2.1]
    - dnsName: a.example.com
      targets: [192.0.2.1]
    - dnsName: b.example.com
      recordType: HINFO
      targets: [x.example.com]
    - dnsName: c.example.com
      recordType: A
      recordTTL: 4294967296
      targets: [192.0.2.1]
    - dnsName: d.example.com
      recordType: A
      targets: []
    - dnsName: e.example.com
      recordType: A
      providerSpecific: [{name: aws/weight, value: \"300\"}]
      targets: [192.0.2.1]
    - dnsName: f.example.com
      recordType: CNAME
      targets: [x.example.com, y.example.com]
    - dnsName: g..example.com
      recordType: A
      targets: [192.0.2.1]
    - dnsName: h.example.com
      recordType: MX
      targets: [\"10 mail.example.com\"]
      recordTTL: -5
    - dnsName: ok.example.com
      recordType: MX
      targets: [\"10 Mail.Example.com\"]
";
    let (entries, errors) = parse_manifests("e.yaml", text);
    assert_eq!(
        keys(&entries),
        vec![entry("ok.example.com.", "MX", &["10 mail.example.com."])]
    );
    let got: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e.location.as_str(), e.record.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("e.yaml:5", "A"),
            ("e.yaml:7", "a.example.com."),
            ("e.yaml:10", "b.example.com. HINFO"),
            ("e.yaml:14", "c.example.com. A"),
            ("e.yaml:18", "d.example.com. A"),
            ("e.yaml:21", "e.example.com. A"),
            ("e.yaml:25", "f.example.com. CNAME"),
            ("e.yaml:26", "g..example.com A"),
            ("e.yaml:32", "h.example.com. MX"),
        ]
    );
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(messages[0], "dnsName is missing");
    assert_eq!(messages[1], "recordType is missing");
    assert!(
        messages[2].starts_with("unsupported record type \"HINFO\""),
        "{}",
        messages[2]
    );
    assert_eq!(
        messages[3],
        "recordTTL 4294967296 is above the maximum of 2147483647 seconds"
    );
    assert_eq!(
        messages[4],
        "targets is empty: an endpoint needs at least one target"
    );
    assert_eq!(
        messages[5],
        "provider-specific property \"aws/weight\": 300 is above 255, Route 53's largest weight"
    );
    assert_eq!(messages[6], "a CNAME holds exactly one target, not 2");
    assert!(messages[7].contains("empty label"), "{}", messages[7]);
    assert_eq!(messages[8], "recordTTL -5 is negative");
}

#[test]
fn wrong_shapes_are_errors_and_null_endpoints_are_none() {
    let text = "kind: DNSEndpoint\nmetadata: {name: a}\nspec:\n  endpoints:\n    - dnsName: {x: 1}\n      recordType: A\n      targets: 192.0.2.1\n---\nkind: DNSEndpoint\nmetadata: {name: b}\nspec:\n  endpoints: ~\n";
    let (entries, errors) = parse_manifests("s.yaml", text);
    assert_eq!(entries, vec![]);
    let got: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e.location.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("s.yaml:5", "dnsName must be a string"),
            ("s.yaml:7", "targets must be a list of strings")
        ]
    );
}

#[test]
fn misspelt_kind_is_an_error_other_kinds_are_skipped() {
    let text = "kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n---\nkind: DNSEndpoints\nmetadata: {name: web}\nspec:\n  endpoints: []\n";
    let (entries, errors) = parse_manifests("k.yaml", text);
    assert_eq!(entries, vec![]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].location, "k.yaml:5");
    assert!(
        errors[0].message.contains("kind is \"DNSEndpoints\""),
        "{}",
        errors[0]
    );
}

/// Routing-policy sets and provider-specific properties are part of the record: two
/// sets at one name and type are two entries, properties come out canonical, and an
/// alias's target is a name whatever the type.
#[test]
fn sets_and_properties_are_read() {
    let text = "\
kind: DNSEndpoint
metadata: {name: web, namespace: default}
spec:
  endpoints:
    - dnsName: www.example.com
      recordType: A
      setIdentifier: eu
      providerSpecific: [{name: aws/weight, value: \"010\"}]
      targets: [192.0.2.1]
    - dnsName: www.example.com
      recordType: A
      setIdentifier: us
      providerSpecific: [{name: aws/weight, value: \"20\"}]
      targets: [192.0.2.2]
    - dnsName: apex.example.com
      recordType: A
      providerSpecific:
        - {name: alias, value: \"true\"}
        - {name: aws/evaluate-target-health, value: \"false\"}
      targets: [LB-1.Example.com]
    - dnsName: bad.example.com
      recordType: A
      setIdentifier: \"\"
      providerSpecific: [{name: alias, value: \"true\"}]
      targets: [a.example.com, b.example.com]
";
    let (entries, errors) = parse_manifests("s.yaml", text);
    let got: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                e.set.as_str(),
                e.values.clone(),
                e.properties.clone(),
            )
        })
        .collect();
    let p = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(
        got,
        vec![
            (
                "www.example.com.".into(),
                "eu",
                vec!["192.0.2.1".to_string()],
                vec![p("aws/weight", "10")]
            ),
            (
                "www.example.com.".into(),
                "us",
                vec!["192.0.2.2".to_string()],
                vec![p("aws/weight", "20")]
            ),
            (
                "apex.example.com.".into(),
                "",
                vec!["lb-1.example.com.".to_string()],
                vec![p("alias", "true"), p("aws/evaluate-target-health", "false")]
            ),
        ]
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].location, "s.yaml:25");
    assert_eq!(
        errors[0].message,
        "an alias holds exactly one target, not 2"
    );
}

/// Every DNSEndpoint manifest shown in the README and in docs/config.md parses without
/// an error: the docs show what the parser takes.
#[test]
fn the_documented_manifests_parse() {
    let mut blocks = 0;
    for file in ["README.md", "docs/config.md"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(file);
        let text = std::fs::read_to_string(&path).expect(file);
        let mut rest = text.as_str();
        while let Some(start) = rest.find("```yaml\n") {
            let body = &rest[start + 8..];
            let end = body.find("```").expect("a closed yaml block");
            let block = &body[..end];
            rest = &body[end..];
            if !block.contains("kind: DNSEndpoint") {
                continue;
            }
            blocks += 1;
            let (entries, errors) = parse_manifests(file, block);
            assert!(errors.is_empty(), "{file}: {block}\n{errors:#?}");
            assert!(!entries.is_empty(), "{file}: {block}");
        }
    }
    assert!(
        blocks >= 3,
        "docs/config.md shows its DNSEndpoint manifests"
    );
}

/// `labels` are kept with the entry exactly as written; a bad label (not a mapping, a
/// value that is not a string, over a bound) makes its endpoint an error at the line
/// of that label, naming it.
#[test]
fn labels_are_kept_and_bad_ones_name_their_line() {
    let (entries, errors) = parse_manifests("web.yaml", MULTI);
    assert_eq!(errors, vec![]);
    assert_eq!(
        entries[0].labels.iter().collect::<Vec<_>>(),
        [("owner", "x")]
    );
    assert!(entries[1].labels.is_empty());
    let long = "v".repeat(crate::source::labels::MAX_LABEL_VALUE + 1);
    let text = format!(
        "kind: DNSEndpoint\nmetadata: {{name: a}}\nspec:\n  endpoints:\n    - dnsName: a.example.com\n      recordType: A\n      targets: [192.0.2.1]\n      labels:\n        owner: web\n        resource: {long}\n    - dnsName: b.example.com\n      recordType: A\n      targets: [192.0.2.2]\n      labels: [owner]\n    - dnsName: c.example.com\n      recordType: A\n      targets: [192.0.2.3]\n      labels:\n        owner: {{x: 1}}\n    - dnsName: d.example.com\n      recordType: A\n      targets: [192.0.2.4]\n      labels: {{resource: \"ingress/default/web\", ownedRecord: ~}}\n"
    );
    let (entries, errors) = parse_manifests("l.yaml", &text);
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            format!(
                "l.yaml:10: a.example.com. A: labels: label \"resource\": the value is above {} bytes",
                crate::source::labels::MAX_LABEL_VALUE
            ),
            "l.yaml:14: b.example.com. A: labels must be a mapping of strings to strings (`labels: {owner: web}`)".to_string(),
            "l.yaml:19: c.example.com. A: labels.owner: a label value must be a string".to_string(),
        ]
    );
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].labels.iter().collect::<Vec<_>>(),
        [("ownedRecord", ""), ("resource", "ingress/default/web")]
    );
}
