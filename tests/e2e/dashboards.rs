//! Issue 18's dashboards and alerts, checked: the alert rules pass `promtool check
//! rules` and their unit tests (`promtool test rules`); the Prometheus operator's
//! PrometheusRule carries exactly those groups; every query of the Grafana dashboard
//! parses as PromQL (by promtool, as recording rules); and every `dnsplane_*` metric a
//! query or an alert names is one that a running planner and applier really export on
//! `/metrics`. The ServiceMonitors select the Services and ports that exist and trust
//! the CA and name of the certificate those ports serve.
use crate::deploy_files::{root, str_of, yaml_docs};
use crate::metrics::faulted_stack;
use crate::stack::Tools;
use dnsplane_e2e::{grpcurl, http_get, tool, wait_for};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn rules_file() -> PathBuf {
    root().join("deploy/prometheus/rules.yaml")
}

fn dashboard() -> Value {
    let path = root().join("deploy/grafana/dnsplane.json");
    let text = std::fs::read_to_string(&path).expect("deploy/grafana/dnsplane.json");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every PromQL expression of the dashboard's panels (and its variables' queries).
fn dashboard_queries(d: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in d["panels"].as_array().expect("panels") {
        for t in panel["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().expect("every target has an expr");
            out.push((
                panel["title"].as_str().unwrap_or("?").to_string(),
                expr.into(),
            ));
        }
    }
    out
}

/// Every alert expression of a rules file.
fn alert_exprs(groups: &Value) -> Vec<(String, String)> {
    groups
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules").iter())
        .map(|r| {
            (
                str_of(r, "/alert").to_string(),
                str_of(r, "/expr").to_string(),
            )
        })
        .collect()
}

/// The `dnsplane_*` identifiers of a PromQL expression.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while let Some(at) = expr[i..].find("dnsplane_") {
        let start = i + at;
        let preceded =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let end = expr[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(expr.len(), |n| start + n);
        if !preceded {
            names.insert(expr[start..end].to_string());
        }
        i = end;
    }
    names
}

fn promtool() -> Option<PathBuf> {
    tool("DNSPLANE_PROMTOOL", "promtool")
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("run promtool");
    (out.status.success(), crate::stack::combined(&out))
}

#[test]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    let Some(promtool) = promtool() else { return };
    let (ok, out) = run(Command::new(&promtool)
        .arg("check")
        .arg("rules")
        .arg(rules_file()));
    assert!(ok, "promtool check rules:\n{out}");
    let (ok, out) = run(Command::new(&promtool)
        .current_dir(root().join("deploy/prometheus"))
        .args(["test", "rules", "rules.test.yaml"]));
    assert!(ok && out.contains("SUCCESS"), "promtool test rules:\n{out}");
    // The checks do reject: a misspelt function, and an alert that no longer fires as
    // its unit test says.
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(rules_file()).expect("rules.yaml");
    let broken = dir.path().join("rules.yaml");
    std::fs::write(&broken, text.replacen("sum by (zone)", "summ by (zone)", 1)).expect("write");
    let (ok, _) = run(Command::new(&promtool)
        .arg("check")
        .arg("rules")
        .arg(&broken));
    assert!(!ok, "promtool accepted a misspelt function");
    std::fs::write(&broken, text.replacen("for: 15m", "for: 30m", 1)).expect("write");
    std::fs::copy(
        root().join("deploy/prometheus/rules.test.yaml"),
        dir.path().join("rules.test.yaml"),
    )
    .expect("copy");
    let (ok, _) = run(Command::new(&promtool).current_dir(dir.path()).args([
        "test",
        "rules",
        "rules.test.yaml",
    ]));
    assert!(!ok, "the unit tests pass an alert that fires too late");
}

#[test]
fn the_prometheusrule_carries_the_rules_files_groups() {
    let plain = yaml_docs(&rules_file());
    let operator = yaml_docs(&root().join("deploy/k8s/monitoring/prometheusrule.yaml"));
    assert_eq!(plain.len(), 1);
    assert_eq!(operator.len(), 1);
    assert_eq!(operator[0]["kind"], "PrometheusRule");
    assert_eq!(
        operator[0]["spec"]["groups"], plain[0]["groups"],
        "deploy/k8s/monitoring/prometheusrule.yaml and deploy/prometheus/rules.yaml differ"
    );
    // Every alert says how bad it is and what it means.
    for r in plain[0]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
    {
        let name = str_of(r, "/alert");
        assert!(
            ["info", "warning", "critical"].contains(&str_of(r, "/labels/severity")),
            "{name}: severity"
        );
        assert!(!str_of(r, "/annotations/description").is_empty(), "{name}");
    }
}

/// docs/observability.md's table of the dashboard's rows and panels is the file's: a
/// panel added, renamed or moved shows up here until the doc says so too.
#[test]
fn the_docs_show_the_dashboards_rows_and_panels() {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    for panel in dashboard()["panels"].as_array().expect("panels") {
        let title = str_of(panel, "/title").to_string();
        if panel["type"] == "row" {
            rows.push((title, Vec::new()));
        } else {
            rows.last_mut()
                .expect("a panel before the first row")
                .1
                .push(title);
        }
    }
    let want: Vec<String> = rows
        .iter()
        .map(|(row, panels)| format!("| {row} | {} |", panels.join(" · ")))
        .collect();
    let doc = std::fs::read_to_string(root().join("docs/observability.md"))
        .expect("docs/observability.md");
    let start = doc
        .find("<!-- dashboard-layout:")
        .expect("docs/observability.md's dashboard table");
    let end = doc[start..]
        .find("<!-- /dashboard-layout -->")
        .expect("its end")
        + start;
    let got: Vec<String> = doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| row |"))
        .map(str::to_string)
        .collect();
    assert!(!want.is_empty(), "the dashboard has rows");
    assert_eq!(
        got, want,
        "docs/observability.md's dashboard table vs deploy/grafana/dnsplane.json"
    );
}

#[test]
fn dashboard_queries_parse_as_promql() {
    let Some(promtool) = promtool() else { return };
    let queries = dashboard_queries(&dashboard());
    assert!(queries.len() >= 15, "{} queries", queries.len());
    // promtool parses PromQL only in rules: one recording rule per query.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("dashboard-rules.yaml");
    let mut text = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (_, expr)) in queries.iter().enumerate() {
        text.push_str(&format!(
            "      - record: dashboard:query{i}\n        expr: {}\n",
            serde_json::to_string(expr).expect("json string")
        ));
    }
    std::fs::write(&file, &text).expect("write");
    let (ok, out) = run(Command::new(&promtool).arg("check").arg("rules").arg(&file));
    assert!(ok, "a dashboard query does not parse:\n{out}\n{text}");
    assert!(
        out.contains(&format!("{} rules found", queries.len())),
        "{out}"
    );
}

/// The sample names a `/metrics` text exposes (and those its `# TYPE` lines promise).
fn exported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                "info" => &["_info"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') && !line.is_empty() {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            names.insert(name.to_string());
        }
    }
    names
}

#[test]
fn dashboard_and_alerts_use_only_metrics_the_services_export() {
    let Some(tools) = Tools::find() else { return };
    // A sync with a conflict and a retried 429 (metrics.rs's), so that the families
    // that count such events have samples.
    let (s, applier_admin, planner_admin) = faulted_stack(&tools, &["a", "b"]);
    // After a sync, so that the zone's families have their samples.
    let planner = wait_for(Duration::from_secs(30), || {
        let text = http_get(planner_admin, "/metrics").1;
        text.contains("dnsplane_planner_last_sync_success_timestamp_seconds{")
            .then_some(text)
    })
    .unwrap_or_else(|| panic!("no sync; logs:\n{}", s.logs()));
    // One call of the planner's API, counted by caller and code.
    let (ok, out) = grpcurl(
        &tools.grpcurl,
        &[
            &format!("127.0.0.1:{}", s.planner_port),
            "dnsplane.v1.Planner/GetStatus",
        ],
    );
    assert!(ok, "GetStatus: {out}");
    let planner = format!("{planner}\n{}", http_get(planner_admin, "/metrics").1);
    let applier = http_get(applier_admin, "/metrics").1;
    let exported: BTreeSet<String> = exported_names(&planner)
        .into_iter()
        .chain(exported_names(&applier))
        .collect();
    assert!(
        exported.contains("dnsplane_planner_records"),
        "{exported:?}"
    );

    let rules = yaml_docs(&rules_file());
    let used: Vec<(String, String)> = dashboard_queries(&dashboard())
        .into_iter()
        .chain(alert_exprs(&rules[0]["groups"]))
        .collect();
    for (what, expr) in &used {
        let names = metric_names(expr);
        // Only the scrape's own `up` is not ours.
        assert!(
            !names.is_empty() || expr.contains("up{job="),
            "{what} names no dnsplane metric: {expr}"
        );
        for name in names {
            assert!(
                exported.contains(&name),
                "{what}: {name} is not exported by the planner or the applier ({expr})"
            );
        }
    }
    // The check can fail: a name that does not exist is caught.
    assert!(!exported.contains("dnsplane_planner_records_total"));
}

#[test]
fn metric_names_are_found_in_expressions() {
    let names = metric_names(
        "sum by (zone) (rate(dnsplane_planner_record_outcomes_total{zone=~\"$zone\"}[5m])) / x_dnsplane_y",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["dnsplane_planner_record_outcomes_total".to_string()]
    );
}

/// The ServiceMonitors select the services' Services by their labels, scrape a port
/// those Services have, and trust the CA and the name of the certificate that port
/// serves (cert-manager's example issues it).
#[test]
fn service_monitors_scrape_the_admin_ports_over_tls() {
    let monitors = yaml_docs(&root().join("deploy/k8s/monitoring/servicemonitor.yaml"));
    let manifests: Vec<Value> = ["deploy/k8s/20-applier.yaml", "deploy/k8s/30-planner.yaml"]
        .iter()
        .flat_map(|f| yaml_docs(&root().join(f)))
        .collect();
    let services: Vec<&Value> = manifests
        .iter()
        .filter(|d| d["kind"] == "Service")
        .collect();
    let certs: Vec<Value> = yaml_docs(&root().join("deploy/k8s/cert-manager/certificates.yaml"))
        .into_iter()
        .filter(|d| d["kind"] == "Certificate")
        .collect();
    assert_eq!(monitors.len(), 2);
    for m in &monitors {
        assert_eq!(m["kind"], "ServiceMonitor");
        let name = str_of(m, "/metadata/name");
        let selector = m["spec"]["selector"]["matchLabels"]
            .as_object()
            .expect("matchLabels");
        let svc = services
            .iter()
            .find(|s| {
                selector
                    .iter()
                    .all(|(k, v)| s["metadata"]["labels"][k] == *v)
            })
            .unwrap_or_else(|| panic!("{name} selects no Service"));
        for ep in m["spec"]["endpoints"].as_array().expect("endpoints") {
            let port = str_of(ep, "/port");
            assert!(
                svc["spec"]["ports"]
                    .as_array()
                    .expect("ports")
                    .iter()
                    .any(|p| p["name"] == port),
                "{name}: the Service has no port {port}"
            );
            assert_eq!(port, "admin", "{name} scrapes the admin port");
            assert_eq!(str_of(ep, "/scheme"), "https", "{name}");
            let secret = str_of(ep, "/tlsConfig/ca/secret/name");
            // The Secret the service's pods serve TLS from (volume `tls`).
            let deployment = manifests
                .iter()
                .find(|d| {
                    d["kind"] == "Deployment" && d["metadata"]["name"] == svc["metadata"]["name"]
                })
                .unwrap_or_else(|| panic!("{name}: no Deployment behind the Service"));
            let served = deployment["spec"]["template"]["spec"]["volumes"]
                .as_array()
                .expect("volumes")
                .iter()
                .find(|v| v["name"] == "tls")
                .map(|v| str_of(v, "/secret/secretName"))
                .expect("a tls volume");
            assert_eq!(secret, served, "{name} trusts another certificate's CA");
            assert_eq!(str_of(ep, "/tlsConfig/ca/secret/key"), "ca.crt");
            let cert = certs
                .iter()
                .find(|c| str_of(c, "/spec/secretName") == secret)
                .unwrap_or_else(|| panic!("{name}: no Certificate issues {secret}"));
            let server_name = str_of(ep, "/tlsConfig/serverName");
            assert!(
                cert["spec"]["dnsNames"]
                    .as_array()
                    .expect("dnsNames")
                    .iter()
                    .any(|n| n == server_name),
                "{name}: {server_name} is not a name of {secret}"
            );
        }
    }
}
