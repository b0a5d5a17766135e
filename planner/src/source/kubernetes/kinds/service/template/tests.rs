//! The template engine on the functions and shapes external-dns's docs and tests use.
use super::exec::go_to_json;
use super::*;
use serde_json::json;

fn svc() -> Value {
    json!({
        "metadata": {"name": "web", "namespace": "prod", "labels": {"team": "a", "app1": "my-service-1"},
                     "annotations": {"zone": "us-1"}},
        "spec": {"type": "NodePort", "clusterIP": "10.0.0.1",
                 "ports": [{"name": "http", "nodePort": 30080}, {"name": "debug"}],
                 "selector": {"app": "site"}},
    })
}

fn run(t: &str) -> Result<Vec<String>, String> {
    exec_fqdn(t, &svc(), "Service")
}

#[test]
fn fields_and_functions() {
    let cases = [
        (
            "{{.Name}}.{{.Namespace}}.example.com",
            vec!["web.prod.example.com"],
        ),
        (
            "{{.Kind | toLower}}.{{.Name}}.example.com",
            vec!["service.web.example.com"],
        ),
        ("{{.Name}}.{{.APIVersion}}.x", vec!["web.v1.x"]),
        ("{{.Labels.team}}.example.com", vec!["a.example.com"]),
        (
            "{{index .Labels \"team\"}}.example.com",
            vec!["a.example.com"],
        ),
        ("{{index .Annotations \"zone\"}}.x", vec!["us-1.x"]),
        ("{{ trimPrefix .Name \"w\" }}.x", vec!["eb.x"]),
        ("{{ trimSuffix .Name \"b\" }}.x", vec!["we.x"]),
        // Go passes the piped value last: trimSuffix("b", "web").
        ("{{ .Name | trimSuffix \"b\" }}.x", vec!["b.x"]),
        ("{{ replace \"e\" \"3\" .Name }}.x", vec!["w3b.x"]),
        ("{{ if isIPv4 .Spec.ClusterIP }}v4.x{{ end }}", vec!["v4.x"]),
        (
            "{{ if eq .Spec.Type \"NodePort\" }}np.x{{ else }}other.x{{ end }}",
            vec!["np.x"],
        ),
        (
            "{{ range .Spec.Ports }}{{ .Name }}.x,{{ end }}",
            vec!["debug.x", "http.x"],
        ),
        (
            "{{ $n := .Name }}{{ range .Spec.Ports -}} {{ $n }}.{{ .Name }}.x{{ printf \",\" }}{{ end }}",
            vec!["web.debug.x", "web.http.x"],
        ),
        (
            "{{ range $k, $v := .Labels }}{{ if and (contains $k \"app\") (contains $v \"my-\") }}{{ $.Name }}.{{ $v }}.x,{{ end }}{{ end }}",
            vec!["web.my-service-1.x"],
        ),
        ("{{ if hasKey .Labels \"team\" }}t.x{{ end }}", vec!["t.x"]),
        (
            "{{ if eq (index .Spec.Selector \"app\") \"site\" }}s.x{{ end }}",
            vec!["s.x"],
        ),
        ("{{/* a comment */}}a.x, a.x., b.x", vec!["a.x", "b.x"]),
        ("{{ .ObjectMeta.Name }}.x", vec!["web.x"]),
    ];
    for (t, want) in cases {
        assert_eq!(
            run(t),
            Ok(want.iter().map(|s| s.to_string()).collect()),
            "{t}"
        );
        assert_eq!(check_template(t), Ok(()), "{t}");
    }
}

#[test]
fn unsupported_templates_are_refused_at_config_time() {
    for t in [
        "{{.Calibre}}.example.com",
        "{{ upper .Name }}",
        "{{ if .Name }}x",
        "{{ .Name ",
        "{{ template \"x\" }}",
        "{{ printf \"%x\" .Name }}",
    ] {
        assert!(check_template(t).is_err(), "{t}");
    }
}

#[test]
fn go_names_map_to_json_keys() {
    assert_eq!(go_to_json("ClusterIP"), "clusterIP");
    assert_eq!(go_to_json("APIVersion"), "apiVersion");
    assert_eq!(go_to_json("UID"), "uid");
    assert_eq!(go_to_json("ExternalIPs"), "externalIPs");
    assert_eq!(go_to_json("IPFamilies"), "ipFamilies");
    assert_eq!(go_to_json("TrafficDistribution"), "trafficDistribution");
}

/// Every template of external-dns v0.22's docs/advanced/fqdn-templating.md is accepted.
#[test]
fn the_templates_of_external_dns_docs_are_accepted() {
    let docs = [
        "{{ .Name }}.example.com",
        "{{ .Name }}.{{ .Namespace }}.example.tld",
        "{{ .Labels.environment }}.{{ .Name }}.example.com",
        r#"{{ or .Annotations.dns "invalid" }}.example.com"#,
        r#"{{ index .ObjectMeta.Annotations "dns.company.com/label" }}.{{ .Namespace }}.company.local"#,
        r#"{{ if eq .Kind "Service" }}{{ .Name }}.svc.example.com{{ end }}"#,
        r#"{{ if eq .Kind "Service" }}{{ .Name }}.svc.example.com{{ end }}{{ if eq .Kind "Pod" }}{{ .Name }}.pod.example.com{{ end }}"#,
        r#"{{ if isSource "traefik-proxy" }}{{ .Name }}.proxy.example.com{{ end }}{{ if isSource "service" }}{{ .Name }}.svc.example.com{{ end }}"#,
        r#"{{ if eq .Kind "Service" }}{{ if eq .Spec.Type "ExternalName" }}{{ .Name }}.external.example.com{{ end }}{{ end }}"#,
        r#"{{ if eq .Kind "Service" }}{{ if index .Spec.Selector "app" }}{{ .Name }}.{{ index .Spec.Selector "app" }}.example.com{{ end }}{{ end }}"#,
        r#"{{ if eq .Kind "Service" }}{{ range $key, $value := .Labels }}{{ if contains $key "app" }}{{ $.Name }}.{{ $value }}.example.com{{ printf "," }}{{ end }}{{ end }}{{ end }}"#,
        r#"{{ index .Annotations "dns.example.com/hostname" }}.example.com"#,
        r#"{{ range $key, $value := .Annotations }}{{ if contains $key "dns.example.com/" }}{{ $value }}{{ printf "," }}{{ end }}{{ end }}"#,
        r#"{{ range $key, $value := .Annotations }}{{ if contains $value ".example.com" }}{{ $value }}{{ printf "," }}{{ end }}{{ end }}"#,
        r#"{{ if eq .Kind "Service" }}{{ range $k, $v := .Annotations }}{{ if and (contains $k "dns/") (contains $v "example.com") }}{{ $v }}{{ printf "," }}{{ end }}{{ end }}{{ end }}"#,
        r#"{{ .Name }}.{{ .Labels.env }}.{{ .Labels.region }}.example.com, {{ if eq .Labels.env "prod" }}{{ .Name }}.my-company.tld{{ end }}"#,
        "{{ `{{ .Name }}.uat.example.com` }}",
        "{{.Annotations.hostname}}.example.com",
        r#"{{range .Status.Addresses}}{{if and (eq .Type "ExternalIP") (isIPv4 .Address)}}{{.Address | replace "." "-"}}{{break}}{{end}}{{end}}.example.com"#,
        r#"{{ if hasKey .Labels "app" }}{{ .Name }}.{{ index .Labels "app" }}.example.com{{ end }}"#,
        r#"{{ if and (eq .Kind "Service") (hasKey .Labels "tier") }}{{ .Name }}.{{ index .Labels "tier" }}.example.com{{ end }}"#,
        r#"{{ if hasKey .Labels "records" }}{{ range $entry := (index .Labels "records" | fromJson) }}{{ index $entry "dns" }},{{ end }}{{ end }}"#,
    ];
    for t in docs {
        assert_eq!(check_template(t), Ok(()), "{t}");
    }
    // The docs' own mistake is refused (`{{name}}`: a function that does not exist).
    assert!(check_template("{{name}}.uat.example.com").is_err());
    assert!(check_template(r#"{{ isSource "no-such-source" }}"#).is_err());
    assert!(check_template("{{ break }}").is_err());
}

#[test]
fn is_source_break_or_and_from_json() {
    let node = json!({
        "metadata": {"name": "n1", "labels": {"records": "[{\"dns\": \"a.x\"}, {\"dns\": \"b.x\"}]"}},
        "status": {"addresses": [
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "ExternalIP", "address": "2001:db8::1"},
            {"type": "ExternalIP", "address": "203.0.113.1"},
            {"type": "ExternalIP", "address": "203.0.113.2"},
        ]},
    });
    let cases = [
        (
            r#"{{range .Status.Addresses}}{{if and (eq .Type "ExternalIP") (isIPv4 .Address)}}{{.Address | replace "." "-"}}{{break}}{{end}}{{end}}.example.com"#,
            vec!["203-0-113-1.example.com"],
        ),
        (
            r#"{{ range .Status.Addresses }}{{ if ne .Type "ExternalIP" }}{{ continue }}{{ end }}{{ if isIPv6 .Address }}{{ continue }}{{ end }}{{ .Address | replace "." "-" }}.x,{{ end }}"#,
            vec!["203-0-113-1.x", "203-0-113-2.x"],
        ),
        (
            r#"{{ if isSource "service" }}svc.x{{ else }}{{ .Name }}.other.x{{ end }}"#,
            vec!["n1.other.x"],
        ),
        (
            r#"{{ or .Annotations.dns "invalid" }}.example.com"#,
            vec!["invalid.example.com"],
        ),
        (
            r#"{{ range $entry := (index .Labels "records" | fromJson) }}{{ index $entry "dns" }},{{ end }}"#,
            vec!["a.x", "b.x"],
        ),
    ];
    for (t, want) in cases {
        let got = exec_fqdn(t, &node, "Node");
        assert_eq!(got, Ok(want.iter().map(|s| s.to_string()).collect()), "{t}");
    }
    let svc_only = r#"{{ if isSource "service" }}{{ .Name }}.svc.x{{ end }}"#;
    assert_eq!(
        exec_fqdn(svc_only, &svc(), "Service"),
        Ok(vec!["web.svc.x".to_string()])
    );
}

/// Whatever a user writes, checking it answers (Ok or a message) and never panics.
#[test]
fn any_text_is_answered_without_panic() {
    let alphabet: Vec<char> = "{}{}-. $\"`()|,=:abcN1\\/*\n".chars().collect();
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..20_000 {
        let len = (seed % 24) as usize;
        let mut s = String::new();
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        let _ = check_template(&s);
        let _ = check_template(&format!("{{{{ {s} }}}}"));
    }
}
