//! The grpcurl cookbook, run: every `grpcurl` command in docs/grpc.md is taken
//! from the file, pointed at a running `dnsplane up` (secure, as the README runs it:
//! its CA, token and client certificate from its state directory) and run with the
//! real grpcurl; each must succeed and say something sensible. Plus the
//! planner's admin port (`/metrics`, `/healthz`, `/readyz`, `/status`) on the same kind
//! of stack.
use crate::stack::{Stack, Tools, ZONE, endpoints, seed};
use dnsplane_e2e::{Proc, free_port, http_get, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The file the cookbook is in, from the repository root.
const COOKBOOK: &str = "docs/grpc.md";

/// The addresses the cookbook uses, as `dnsplane up` serves them.
const DOC_PLANNER: &str = "127.0.0.1:50051";
const DOC_APPLIER: &str = "127.0.0.1:50052";

#[derive(Debug)]
struct Cookbook {
    line: usize,
    text: String,
    args: Vec<String>,
}

/// Splits a shell command line into words: blanks separate, '…' and "…" quote.
fn shell_words(line: &str) -> Vec<String> {
    let (commands, balanced) = crate::docs_commands::split_words(line, false);
    assert!(balanced, "unbalanced quotes in: {line}");
    commands.concat()
}

/// The cookbook's text.
fn cookbook_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(COOKBOOK);
    std::fs::read_to_string(&path).expect(COOKBOOK)
}

/// Every `grpcurl` command in the cookbook's code blocks, continuation lines joined.
fn cookbook_commands() -> Vec<Cookbook> {
    let text = cookbook_text();
    let mut out = Vec::new();
    let mut in_code = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            continue;
        }
        let (start, mut joined) = match pending.take() {
            Some((start, so_far)) => (start, so_far),
            None if line.trim_start().starts_with("grpcurl ") => (i + 1, String::new()),
            None => continue,
        };
        let part = line.trim();
        if let Some(head) = part.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(part);
        let words = shell_words(&joined);
        out.push(Cookbook {
            line: start,
            text: joined,
            args: words[1..].to_vec(),
        });
    }
    assert!(
        pending.is_none(),
        "{COOKBOOK} ends inside a continued grpcurl command"
    );
    out
}

/// The JSON documents grpcurl printed (one per response message).
fn json_stream(out: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(out)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("grpcurl output is not JSON ({e}): {out}"))
}

fn web() -> String {
    endpoints(
        "web",
        &[
            ("www.example.com", "A", &["192.0.2.10"]),
            ("api.example.com", "AAAA", &["2001:db8::10"]),
            ("example.com", "TXT", &["v=spf1 -all"]),
            ("taken.example.com", "A", &["192.0.2.1"]),
        ],
    )
}

/// A stack whose zone holds an unowned record where a desired one should go: one
/// record stays in conflict (`exists`), the others converge.
fn conflicted_stack(tools: Tools) -> Stack {
    let s = Stack::new(tools, &[("web.yaml", &web())], "report");
    seed(&s.state_dir(), &[("taken.example.com", "A", "192.0.2.99")]);
    s
}

fn wait_converged(s: &Stack) {
    let ok = wait_for(Duration::from_secs(30), || {
        let st = s.planner_call("GetStatus", "{}");
        let by = &st["zones"][0]["recordsByState"];
        (by["converged"] == 3 && by["conflict"] == 1 && st["zones"][0]["syncing"].is_null())
            .then_some(())
    });
    assert!(
        ok.is_some(),
        "3 converged + 1 conflict not reached; logs:\n{}",
        s.logs()
    );
}

/// `dnsplane up` as the README runs it (secure: TLS with its own CA, the admin
/// token, mTLS to the applier), on ports and a state directory of its own, with the
/// conflicted zone of [`conflicted_stack`].
struct Up {
    _proc: Proc,
    state: tempfile::TempDir,
    planner: u16,
    applier: u16,
    dns: u16,
    log: PathBuf,
    grpcurl: PathBuf,
}

impl Up {
    fn start(tools: &Tools) -> Up {
        let state = tempfile::tempdir().expect("state");
        let desired = state.path().join("desired");
        std::fs::create_dir_all(&desired).expect("desired");
        std::fs::write(desired.join("web.yaml"), web()).expect("web.yaml");
        seed(
            &state.path().join("s/embedded"),
            &[("taken.example.com", "A", "192.0.2.99")],
        );
        let (planner, applier, dns) = (free_port(), free_port(), free_port());
        let log = state.path().join("up.log");
        let proc = crate::up::spawn_up(
            &[],
            &desired,
            &[("planner", planner), ("applier", applier), ("dns", dns)],
            &state.path().join("s"),
            log.clone(),
        );
        Up {
            _proc: proc,
            state,
            planner,
            applier,
            dns,
            log,
            grpcurl: tools.grpcurl.clone(),
        }
    }

    /// The state directory (the cookbook's `$S`).
    fn dir(&self) -> PathBuf {
        self.state.path().join("s")
    }

    fn token(&self) -> String {
        std::fs::read_to_string(self.dir().join("token"))
            .expect("the admin token")
            .trim()
            .to_string()
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `Planner/<method>` with the state directory's CA and token.
    fn call(&self, method: &str, body: &str) -> Option<Value> {
        // Not there until `up` has made it.
        let token = std::fs::read_to_string(self.dir().join("token")).ok()?;
        let out = Command::new(&self.grpcurl)
            .arg("-cacert")
            .arg(self.dir().join("ca.pem"))
            .args(["-H", &format!("authorization: Bearer {}", token.trim())])
            .args(["-d", body])
            .arg(format!("127.0.0.1:{}", self.planner))
            .arg(format!("dnsplane.v1.Planner/{method}"))
            .output()
            .ok()?;
        out.status.success().then_some(())?;
        serde_json::from_slice(&out.stdout).ok()
    }

    fn wait_converged(&self) {
        let ok = wait_for(Duration::from_secs(60), || {
            let st = self.call("GetStatus", "{}")?;
            let by = &st["zones"][0]["recordsByState"];
            (by["converged"] == 3 && by["conflict"] == 1 && st["zones"][0]["syncing"].is_null())
                .then_some(())
        });
        assert!(
            ok.is_some(),
            "3 converged + 1 conflict not reached; log:\n{}",
            self.logs()
        );
    }

    fn wait_dns(&self, dig_path: &Path, name: &str, want: &str) {
        let ok = wait_for(Duration::from_secs(30), || {
            (dnsplane_e2e::dig(dig_path, self.dns, name, "A", false) == [want]).then_some(())
        });
        assert!(
            ok.is_some(),
            "{name} never answered {want}; log:\n{}",
            self.logs()
        );
    }
}

#[test]
fn every_grpcurl_command_in_docs_grpc_runs_against_dnsplane_up() {
    let commands = cookbook_commands();
    let all: String = commands.iter().map(|c| format!("{}\n", c.text)).collect();
    // The cookbook covers what operators ask for.
    for (what, needle) in [
        ("list services", "127.0.0.1:50051 list"),
        ("status", "dnsplane.v1.Planner/GetStatus"),
        ("plan", "dnsplane.v1.Planner/Plan"),
        ("stuck records", "RECORD_STATE_KIND_CONFLICT"),
        ("trigger a sync", "dnsplane.v1.Planner/Sync"),
        ("health", "grpc.health.v1.Health/Check"),
    ] {
        assert!(
            all.contains(needle),
            "the grpcurl cookbook ({COOKBOOK}) lacks {what} ({needle}):\n{all}"
        );
    }
    // The variables the commands use are set as the cookbook says.
    let doc = cookbook_text();
    for line in ["S=.dnsplane-state", "export DNSPLANE_TOKEN=$(cat $S/token)"] {
        assert!(
            doc.lines().any(|l| l.trim() == line),
            "{COOKBOOK} sets {line}"
        );
    }
    let Some(tools) = Tools::find() else { return };
    let up = Up::start(&tools);
    up.wait_converged();
    let planner = format!("127.0.0.1:{}", up.planner);
    let applier = format!("127.0.0.1:{}", up.applier);
    let state = up.dir().display().to_string();
    let token = up.token();

    for c in &commands {
        let args: Vec<String> = c
            .args
            .iter()
            .map(|a| match a.as_str() {
                DOC_PLANNER => planner.clone(),
                DOC_APPLIER => applier.clone(),
                other => {
                    assert!(
                        !other.contains("127.0.0.1") && !other.starts_with("localhost"),
                        "{COOKBOOK}:{}: unknown address {other}",
                        c.line
                    );
                    other
                        .replace("$S/", &format!("{state}/"))
                        .replace("$DNSPLANE_TOKEN", &token)
                }
            })
            .collect();
        let on_applier = args.contains(&applier);
        assert_eq!(
            args.first().map(String::as_str),
            Some("-cacert"),
            "{COOKBOOK}:{}: TLS with up's CA: {}",
            c.line,
            c.text
        );
        assert!(
            !on_applier || args.iter().any(|a| a == "-cert"),
            "{COOKBOOK}:{}: the applier takes only clients with a certificate: {}",
            c.line,
            c.text
        );
        let out = Command::new(&up.grpcurl)
            .args(&args)
            .output()
            .expect("run grpcurl");
        let text = crate::stack::combined(&out);
        assert!(
            out.status.success(),
            "{COOKBOOK}:{}: `{}` failed:\n{text}\nlog:\n{}",
            c.line,
            c.text,
            up.logs()
        );
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let at = format!("{COOKBOOK}:{}: `{}`", c.line, c.text);
        match args.last().map(String::as_str) {
            Some("list") => {
                let service = if on_applier {
                    "dnsplane.v1.Applier"
                } else {
                    "dnsplane.v1.Planner"
                };
                for want in [
                    service,
                    "grpc.health.v1.Health",
                    "grpc.reflection.v1alpha.ServerReflection",
                ] {
                    assert!(
                        stdout.lines().any(|l| l == want),
                        "{at}: no {want} in\n{stdout}"
                    );
                }
            }
            Some("dnsplane.v1.Planner") if args.iter().any(|a| a == "describe") => {
                for rpc in [
                    "rpc GetStatus",
                    "rpc Plan",
                    "rpc Sync",
                    "rpc ListRecordStates",
                    "rpc PutDesired",
                    "rpc PutDesiredStream",
                    "rpc PatchDesired",
                ] {
                    assert!(stdout.contains(rpc), "{at}: no {rpc} in\n{stdout}");
                }
            }
            Some(method) => {
                let docs = json_stream(&stdout);
                assert!(!docs.is_empty(), "{at}: no answer");
                check_answer(&at, method, &args, &docs);
            }
            None => panic!("{at}: empty command"),
        }
    }
    // The pushes from the cookbook reached DNS.
    up.wait_dns(&tools.dig, "x.example.com", "192.0.2.7");
    up.wait_dns(&tools.dig, "y.example.com", "192.0.2.8");
    up.wait_dns(&tools.dig, "b2.example.com", "192.0.2.22");
    // Without the token or the CA, the same calls are refused.
    let refused = Command::new(&up.grpcurl)
        .arg("-cacert")
        .arg(up.dir().join("ca.pem"))
        .arg(&planner)
        .arg("dnsplane.v1.Planner/GetStatus")
        .output()
        .expect("grpcurl");
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && text.contains("Unauthenticated"),
        "{text}"
    );
    let plaintext = Command::new(&up.grpcurl)
        .args(["-plaintext", &planner, "list"])
        .output()
        .expect("grpcurl");
    assert!(!plaintext.status.success(), "plaintext is refused");
}

/// What each RPC of the cookbook must have answered on this stack.
fn check_answer(at: &str, method: &str, args: &[String], docs: &[Value]) {
    let one = &docs[0];
    match method {
        "dnsplane.v1.Planner/GetStatus" => {
            assert_eq!(one["zones"][0]["zone"], ZONE, "{at}: {one}");
            assert_eq!(
                one["zones"][0]["recordsByState"]["conflict"], 1,
                "{at}: {one}"
            );
        }
        "dnsplane.v1.Applier/GetStatus" => {
            assert_eq!(one["accounts"][0]["name"], "embedded", "{at}: {one}");
        }
        "dnsplane.v1.Planner/Plan" => {
            assert_eq!(one["zones"][0]["zone"], ZONE, "{at}: {one}");
            let blocked = one["zones"][0]["blocked"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                blocked
                    .iter()
                    .any(|b| b["key"]["name"] == "taken.example.com."),
                "{at}: the conflict is held back in the plan: {one}"
            );
        }
        "dnsplane.v1.Planner/ListRecordStates" => {
            let records = one["records"].as_array().cloned().unwrap_or_default();
            let stuck = records
                .iter()
                .find(|r| r["key"]["name"] == "taken.example.com.")
                .unwrap_or_else(|| panic!("{at}: the stuck record is not listed: {one}"));
            assert_eq!(
                stuck["state"], "RECORD_STATE_KIND_CONFLICT",
                "{at}: {stuck}"
            );
            assert_eq!(
                stuck["observed"]["values"][0], "192.0.2.99",
                "{at}: {stuck}"
            );
            assert!(
                records
                    .iter()
                    .all(|r| r["state"] != "RECORD_STATE_KIND_CONVERGED"),
                "{at}: {one}"
            );
        }
        "dnsplane.v1.Planner/Sync" => {
            let last = docs.last().expect("a message");
            assert!(docs.iter().all(|d| d["zone"] == ZONE), "{at}: {docs:?}");
            assert_eq!(last["phase"], "done", "{at}: {docs:?}");
        }
        "dnsplane.v1.Planner/PutDesired" => {
            assert_eq!(one["accepted"], 1, "{at}: {one}");
        }
        "dnsplane.v1.Planner/PutDesiredStream" => {
            assert_eq!(one["accepted"], 2, "{at}: {one}");
        }
        "dnsplane.v1.Planner/PatchDesired" => {
            // Proto3 JSON leaves out zeros: the delete matched nothing.
            assert_eq!(one["upserted"], 1, "{at}: {one}");
            assert_eq!(one["records"], 2, "{at}: {one}");
            assert!(one["deleted"].is_null(), "{at}: {one}");
        }
        "grpc.health.v1.Health/Check" => {
            assert_eq!(one["status"], "SERVING", "{at}: {one}");
        }
        other => panic!(
            "{at}: the cookbook test does not know what {other} ({args:?}) should answer; add it here"
        ),
    }
}

#[test]
fn the_planner_admin_port_serves_metrics_probes_and_status() {
    let Some(tools) = Tools::find() else { return };
    let mut s = conflicted_stack(tools);
    s.start_applier();
    let admin_port = free_port();
    s.start_planner_with_admin(admin_port);
    wait_converged(&s);

    assert_eq!(http_get(admin_port, "/healthz"), (200, "ok\n".to_string()));
    assert_eq!(
        http_get(admin_port, "/readyz"),
        (200, "ready\n".to_string())
    );
    let (code, metrics) = http_get(admin_port, "/metrics");
    assert_eq!(code, 200);
    // The embedded account's target of the zone (every zone-labelled family names
    // the account too).
    let zone = format!("zone=\"{ZONE}\",account=\"embedded\"");
    for line in [
        format!("dnsplane_planner_records{{{zone},state=\"converged\"}} 3"),
        format!("dnsplane_planner_records{{{zone},state=\"conflict\"}} 1"),
        format!("dnsplane_planner_records{{{zone},state=\"failed\"}} 0"),
        format!("dnsplane_planner_desired_records{{{zone}}} 4"),
        "dnsplane_planner_source_errors 0".to_string(),
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line:?} not in /metrics:\n{metrics}"
        );
    }
    let success = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "dnsplane_planner_last_sync_success_timestamp_seconds{{{zone}}} "
            ))
        })
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no last success timestamp in:\n{metrics}"));
    let start = metrics
        .lines()
        .find_map(|l| l.strip_prefix("dnsplane_process_start_time_seconds "))
        .and_then(|v| v.parse::<f64>().ok())
        .expect("process start time");
    assert!(
        success >= start,
        "the last success ({success}) comes after the start ({start})"
    );
    assert!(
        metrics.contains("dnsplane_build_info{service=\"dnsplane-planner\","),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!("dnsplane_planner_zone_syncing{{{zone}}} ")),
        "{metrics}"
    );

    // /status is GetStatus: every field grpcurl shows is there with the same value
    // (the clocks of the conflict's re-plans move on between the two calls).
    let (code, body) = http_get(admin_port, "/status");
    assert_eq!(code, 200);
    let status: Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("/status is not JSON ({e}): {body}"));
    let grpc = s.planner_call("GetStatus", "{}");
    assert_eq!(status["level"], grpc["level"]);
    for (key, value) in grpc["zones"][0].as_object().expect("zone status") {
        let ours = &status["zones"][0][key];
        if key == "syncing" {
            // True for the instant a re-plan of the conflict runs; volatile like the clocks.
            assert!(value.is_boolean(), "/status zones[0].syncing: {value}");
        } else if ["lastSync", "lastSuccess", "nextRetry"].contains(&key.as_str()) {
            let (a, b) = (
                ours.as_str().unwrap_or_default(),
                value.as_str().unwrap_or_default(),
            );
            let rfc3339 = |t: &str| t.len() >= 20 && t.as_bytes()[10] == b'T' && t.ends_with('Z');
            assert!(
                rfc3339(a) && rfc3339(b),
                "/status zones[0].{key}: {a} vs {b}"
            );
        } else {
            assert_eq!(ours, value, "/status zones[0].{key}: {status} vs {grpc}");
        }
    }
    assert_eq!(
        status["zones"][0]["recordsByState"]["conflict"], 1,
        "{status}"
    );

    // Draining: the planner stops cleanly on SIGTERM.
    let exit = s.planner.as_mut().expect("planner").terminate();
    assert!(
        exit.is_some_and(|e| e.success()),
        "planner exit {exit:?}; logs:\n{}",
        s.logs()
    );
}
