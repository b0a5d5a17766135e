//! The README's first command: `dnsplane up` on the example desired state.
use crate::stack::Tools;
use dnsplane_e2e::{Proc, binary, dig, free_port, grpcurl, repo_root, wait_for};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `dnsplane up FLAGS --desired DESIRED --X-listen 127.0.0.1:PORT… --state-dir STATE`,
/// one `--X-listen` per `(X, PORT)` of `listen` (`planner`, `applier`, `dns`,
/// `admin`, `emulator`), logging to `log`.
pub fn spawn_up(
    flags: &[&str],
    desired: &Path,
    listen: &[(&str, u16)],
    state: &Path,
    log: PathBuf,
) -> Proc {
    let mut args: Vec<String> = std::iter::once("up")
        .chain(flags.iter().copied())
        .map(String::from)
        .collect();
    args.extend(["--desired".into(), desired.display().to_string()]);
    for (what, port) in listen {
        args.extend([format!("--{what}-listen"), format!("127.0.0.1:{port}")]);
    }
    args.extend(["--state-dir".into(), state.display().to_string()]);
    let name = format!(
        "dnsplane {}",
        flags.iter().fold("up".to_string(), |a, f| a + " " + f)
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Proc::spawn(&name, &binary("dnsplane"), &args, log)
}

/// Every record of `deploy/examples/desired/` as (name, type, sorted `dig +short` lines).
fn example_records(root: &Path) -> Vec<(String, String, Vec<String>)> {
    let dir = root.join("deploy/examples/desired");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        // The examples are simple enough to read line by line, which keeps this test
        // independent of the parser it checks.
        let (mut name, mut rtype, mut in_targets) = (String::new(), String::new(), false);
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("- dnsName:") {
                name = v.trim().to_string();
                in_targets = false;
            } else if let Some(v) = t.strip_prefix("recordType:") {
                rtype = v.trim().to_string();
                out.push((name.clone(), rtype.clone(), Vec::new()));
            } else if t.starts_with("targets:") {
                in_targets = true;
            } else if in_targets && t.starts_with("- ") {
                let v = t[2..].trim().trim_matches('\'').to_string();
                let v = match rtype.as_str() {
                    "CNAME" | "NS" => format!("{v}."),
                    "MX" | "SRV" => format!("{v}."),
                    "TXT" => format!("\"{v}\""),
                    _ => v,
                };
                if let Some(last) = out.last_mut() {
                    last.2.push(v);
                    last.2.sort();
                }
            } else if !t.starts_with("- ") {
                in_targets = false;
            }
        }
    }
    out
}

/// A running `dnsplane up` on the example desired state, with ports and a state
/// directory of its own (`<state>/s`), its output in `<state>/up.log`.
struct Up {
    _proc: Proc,
    state: tempfile::TempDir,
    planner: u16,
    dns: u16,
    log: std::path::PathBuf,
}

impl Up {
    /// Whether the first example record is answered on the DNS port, within 60 s.
    fn serves_the_first_example(&self, tools: &Tools, root: &Path) -> bool {
        let (name, rtype, want) = &example_records(root)[0];
        wait_for(Duration::from_secs(60), || {
            let mut got = dig(&tools.dig, self.dns, name, rtype, false);
            got.sort();
            (&got == want).then_some(())
        })
        .is_some()
    }

    fn start(root: &Path, extra: &[&str]) -> Up {
        Up::start_with_env(root, extra, &[])
    }

    fn start_with_env(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> Up {
        let state = tempfile::tempdir().expect("state");
        let (planner, applier, dns) = (free_port(), free_port(), free_port());
        let log = state.path().join("up.log");
        let mut args = vec!["up".to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        args.extend([
            "--desired".into(),
            root.join("deploy/examples/desired").display().to_string(),
            "--planner-listen".into(),
            format!("127.0.0.1:{planner}"),
            "--applier-listen".into(),
            format!("127.0.0.1:{applier}"),
            "--dns-listen".into(),
            format!("127.0.0.1:{dns}"),
            "--state-dir".into(),
            state.path().join("s").display().to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let proc =
            Proc::spawn_with_env("dnsplane up", &binary("dnsplane"), &args, env, log.clone());
        Up {
            _proc: proc,
            state,
            planner,
            dns,
            log,
        }
    }
}

#[test]
fn dnsplane_up_serves_the_example_zone() {
    let Some(tools) = Tools::find() else { return };
    let root = repo_root();
    let up = Up::start(&root, &[]);
    let (pp, dp, log, state) = (up.planner, up.dns, up.log.clone(), &up.state);
    let records = example_records(&root);
    assert!(
        records.len() >= 10,
        "the examples hold the records the README promises: {records:?}"
    );
    for (name, rtype, want) in &records {
        let got = wait_for(Duration::from_secs(60), || {
            let mut got = dig(&tools.dig, dp, name, rtype, false);
            got.sort();
            (&got == want).then_some(got)
        });
        assert!(
            got.is_some(),
            "dig {name} {rtype} never answered {want:?}; log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    // Secure by default: plaintext is refused; the CLI finds the CA and the token in
    // the state directory by itself (no scheme in --addr: TLS, since there is a CA).
    let (ok, out) = grpcurl(&tools.grpcurl, &[&format!("127.0.0.1:{pp}"), "list"]);
    assert!(!ok, "plaintext answered: {out}");
    let s = state.path().join("s");
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(binary("dnsplane"))
            .args(args)
            .args(["--addr", &format!("127.0.0.1:{pp}")])
            .arg("--state-dir")
            .arg(&s)
            .env_remove("DNSPLANE_TOKEN")
            .output()
            .expect("dnsplane");
        let text = crate::stack::combined(&out);
        (out.status.code(), text)
    };
    let (code, out) = cli(&["status"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("| example.com."), "the zone's row: {out}");
    // `up` keeps an audit trail in its state directory: `history` answers at once.
    let (name, _, _) = &records[0];
    let (code, out) = cli(&["history", name]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(name.trim_end_matches('.')),
        "{name}'s events: {out}"
    );
    // The token is what lets it in: without it (another state directory holding only
    // the CA), UNAUTHENTICATED.
    let other = state.path().join("other");
    std::fs::create_dir_all(&other).expect("dir");
    std::fs::copy(s.join("ca.pem"), other.join("ca.pem")).expect("copy");
    let out = std::process::Command::new(binary("dnsplane"))
        .args([
            "status",
            "--addr",
            &format!("127.0.0.1:{pp}"),
            "--state-dir",
        ])
        .arg(&other)
        .env_remove("DNSPLANE_TOKEN")
        .output()
        .expect("dnsplane");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("bearer token"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in ["token", "server-key.pem", "client-key.pem", "ca-key.pem"] {
            let mode = std::fs::metadata(s.join(f)).expect(f).permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
    }
}

/// With `DNSPLANE_LOG_FORMAT=json` every line `up` writes is a JSON object, its
/// banner included: a log collector reads one object a line.
#[test]
fn dnsplane_up_with_json_logs_writes_nothing_but_json_lines() {
    let Some(tools) = Tools::find() else { return };
    let root = repo_root();
    let up = Up::start_with_env(&root, &[], &[("DNSPLANE_LOG_FORMAT", "json")]);
    let answered = up.serves_the_first_example(&tools, &root);
    let text = std::fs::read_to_string(&up.log).unwrap_or_default();
    assert!(answered, "never served; log:\n{text}");
    assert!(
        text.contains("Ctrl-C to stop"),
        "the banner is logged: {text}"
    );
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.is_object()),
            "not a JSON object: {line}"
        );
    }
}

/// A second `dnsplane up` on the same state directory cannot open the embedded store
/// (the first holds it): it exits at once, non-zero, with the reason, instead of
/// running on as a planner without an applier (issue 35).
#[test]
fn a_second_up_on_the_same_state_directory_exits_with_the_reason() {
    let Some(tools) = Tools::find() else { return };
    let root = repo_root();
    let up = Up::start(&root, &[]);
    assert!(
        up.serves_the_first_example(&tools, &root),
        "the first up never served"
    );
    let mut second = std::process::Command::new(binary("dnsplane"))
        .args(["up", "--desired"])
        .arg(root.join("deploy/examples/desired"))
        .args(["--state-dir"])
        .arg(up.state.path().join("s"))
        .args(["--admin-listen", "off"])
        .args(["--planner-listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--applier-listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--dns-listen", &format!("127.0.0.1:{}", free_port())])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the second up");
    // A safety net, not a timing claim: it ends as soon as it fails to start.
    let ended = wait_for(Duration::from_secs(60), || second.try_wait().ok().flatten());
    if ended.is_none() {
        let _ = second.kill();
    }
    let out = second.wait_with_output().expect("wait");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        ended.is_some(),
        "the second up ran on without an applier:\n{text}"
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("already open"), "the reason is given: {text}");
}

/// `dnsplane up --insecure`: the old behaviour, plaintext and open, for those who ask.
#[test]
fn dnsplane_up_insecure_serves_plaintext() {
    let Some(tools) = Tools::find() else { return };
    let root = repo_root();
    let up = Up::start(&root, &["--insecure"]);
    let (pp, log, state) = (up.planner, up.log.clone(), &up.state);
    let listed = wait_for(Duration::from_secs(30), || {
        let (ok, out) = grpcurl(&tools.grpcurl, &[&format!("127.0.0.1:{pp}"), "list"]);
        (ok && out.contains("dnsplane.v1.Planner")).then_some(())
    });
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(listed.is_some(), "plaintext never answered; log:\n{text}");
    assert!(
        text.contains("--insecure: every port is plaintext"),
        "loudly: {text}"
    );
    assert!(!state.path().join("s/token").exists(), "no token made");
}

/// The README's Route 53 quickstart: `dnsplane up --route53-emulator`, then the
/// README's own AWS CLI command (the real `aws`, signing with SigV4 and parsing the
/// emulator's XML) lists every example record in the emulated hosted zone.
#[test]
fn dnsplane_up_with_the_route53_emulator_is_read_by_the_aws_cli() {
    let Some(aws) = dnsplane_e2e::tool("DNSPLANE_AWS_CLI", "aws") else {
        return;
    };
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let command = readme
        .lines()
        .find(|l| l.starts_with("AWS_ACCESS_KEY_ID=AKIAEMULATOR") && l.contains(" aws "))
        .expect("the README's aws command");
    let state = tempfile::tempdir().expect("state");
    let (pp, ap, ep) = (free_port(), free_port(), free_port());
    let log = state.path().join("up.log");
    let _up = spawn_up(
        &["--route53-emulator"],
        &root.join("deploy/examples/desired"),
        &[("planner", pp), ("applier", ap), ("emulator", ep)],
        &state.path().join("s"),
        log.clone(),
    );
    let command = command.replace("127.0.0.1:4566", &format!("127.0.0.1:{ep}"));
    let path = format!(
        "{}:{}",
        aws.parent().expect("aws dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let records = example_records(&root);
    let listed = wait_for(Duration::from_secs(60), || {
        let out = std::process::Command::new("sh")
            .args(["-c", &command])
            .env("PATH", &path)
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run aws");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let lines: Vec<&str> = text.lines().collect();
        let all_there = records.iter().all(|(name, rtype, values)| {
            let head = lines.iter().position(|l| {
                l.starts_with("RESOURCERECORDSETS\t")
                    && l.contains(&format!("\t{name}.\t"))
                    && l.ends_with(&format!("\t{rtype}"))
            });
            head.is_some_and(|h| {
                let set: Vec<&str> = lines[h + 1..]
                    .iter()
                    .take_while(|l| l.starts_with("RESOURCERECORDS\t"))
                    .map(|l| l.trim_start_matches("RESOURCERECORDS\t"))
                    .collect();
                values.iter().all(|v| set.contains(&v.as_str()))
            })
        });
        (out.status.success() && all_there).then_some(text)
    });
    assert!(
        listed.is_some(),
        "the AWS CLI never listed every example record {records:?}; log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

/// `dnsplane up --azure-emulator`: the example records land in the emulated Azure DNS
/// zone through the `azure` driver, and Azure's own listing (ARM's `recordsets`, with
/// the token the banner names) shows every one of them with its records, and the
/// ownership TXT records beside them.
#[test]
fn dnsplane_up_with_the_azure_emulator_writes_the_examples_through_arm() {
    let root = repo_root();
    let state = tempfile::tempdir().expect("state");
    let (pp, ap, ep) = (free_port(), free_port(), free_port());
    let log = state.path().join("up.log");
    let _up = spawn_up(
        &["--azure-emulator"],
        &root.join("deploy/examples/desired"),
        &[("planner", pp), ("applier", ap), ("emulator", ep)],
        &state.path().join("s"),
        log.clone(),
    );
    use dnsplane_emulate::azure::{DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_TOKEN};
    let url = format!(
        "http://127.0.0.1:{ep}/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{DEFAULT_RESOURCE_GROUP}/providers/Microsoft.Network/dnsZones/example.com/recordsets?api-version=2018-05-01&$top=1000"
    );
    let records = example_records(&root);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let listed = wait_for(Duration::from_secs(60), || {
        let body: serde_json::Value = rt.block_on(async {
            let resp = reqwest::Client::new()
                .get(&url)
                .bearer_auth(DEFAULT_TOKEN)
                .send()
                .await
                .ok()?;
            resp.json().await.ok()
        })?;
        let sets = body["value"].as_array()?.clone();
        let count = |name: &str, rtype: &str| {
            let rel = name
                .strip_suffix(".example.com")
                .unwrap_or(if name == "example.com" { "@" } else { name });
            sets.iter().find_map(|s| {
                let t = s["type"].as_str()?.rsplit('/').next()?.to_string();
                (s["name"] == rel && t == rtype).then(|| {
                    let props = s["properties"].as_object().cloned().unwrap_or_default();
                    props
                        .iter()
                        .filter(|(k, _)| k.to_ascii_lowercase().ends_with("records"))
                        .map(|(_, v)| v.as_array().map_or(0, Vec::len))
                        .sum::<usize>()
                        + usize::from(props.contains_key("CNAMERecord"))
                })
            })
        };
        let all_there = records
            .iter()
            .all(|(name, rtype, values)| count(name, rtype) == Some(values.len()));
        let marks = sets.iter().filter(|s| {
            s["type"].as_str().is_some_and(|t| t.ends_with("/TXT"))
                && s["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("_dnsplane-"))
        });
        (all_there && marks.count() > 0).then_some(body)
    });
    assert!(
        listed.is_some(),
        "ARM never listed every example record {records:?}; log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("Azure DNS emulator http://127.0.0.1:"),
        "{text}"
    );
}
