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
