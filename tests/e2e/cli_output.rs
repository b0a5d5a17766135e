//! The CLI for scripts, against a real planner + applier: each read command's JSON
//! validates against its schema in docs/cli/ (Python's jsonschema), its YAML reads
//! back as the same document, the exit codes follow docs/cli.md's table, tables are
//! sorted and carry no escape codes off a terminal or under NO_COLOR, and `--addr`
//! takes a bare `host:port`. Completions load in bash; the man page names every
//! subcommand.
use crate::stack::{Stack, Tools, endpoints, seed};
use dnsplane_e2e::{binary, tool, wait_for};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Runs `dnsplane ARGS --addr 127.0.0.1:PORT` (no scheme): exit code, stdout, stderr.
fn cli(s: &Stack, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(binary("dnsplane"))
        .args(args)
        .args(["--addr", &format!("127.0.0.1:{}", s.planner_port)])
        .env("DNSPLANE_LOG", "warn")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .output()
        .expect("run dnsplane");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn schema(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/cli")
        .join(format!("{name}.schema.json"))
}

/// Validates `json` against the command's schema, and checks that `yaml` is the same
/// document (but for the fields that move between two calls: times and retry counts;
/// output.rs's unit test checks the YAML of one document exactly).
fn validate(python: &Path, command: &str, json: &str, yaml: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (jf, yf) = (dir.path().join("doc.json"), dir.path().join("doc.yaml"));
    std::fs::write(&jf, json).expect("write json");
    std::fs::write(&yf, yaml.unwrap_or("")).expect("write yaml");
    let script = r#"
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
text = open(sys.argv[3]).read()
# What moves between two calls to a live planner (retries count on).
MOVING = {"attempts", "next_retry", "updated", "last_sync", "last_success", "syncing"}
if text:
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in MOVING and not k.endswith("_seconds")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    other = yaml.safe_load(text)
    if strip(other) != strip(doc):
        sys.exit("the YAML differs from the JSON:\n%r\n%r" % (other, doc))
print("valid")
"#;
    let out = Command::new(python)
        .args(["-c", script])
        .arg(schema(command))
        .arg(&jf)
        .arg(&yf)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{command}: {}{}\n{json}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn cli_json_yaml_schemas_exit_codes_and_order() {
    let Some(tools) = Tools::find() else { return };
    let Some(python) = tool("DNSPLANE_JSONSCHEMA_PYTHON", "dnsplane-jsonschema-python") else {
        return;
    };
    let desired = endpoints(
        "web",
        &[
            ("www.example.com", "A", &["192.0.2.10"]),
            ("zz.example.com", "A", &["192.0.2.11"]),
            ("aa.example.com", "A", &["192.0.2.12"]),
            ("mm.example.com", "A", &["192.0.2.13"]),
            ("mm.example.com", "TXT", &["hello"]),
        ],
    );
    let mut s = Stack::new(tools, &[("web.yaml", &desired)], "report");
    // Held by somebody else: conflicts, in an order that is not sorted.
    seed(
        &s.state_dir(),
        &[
            ("zz.example.com", "A", "198.51.100.7"),
            ("aa.example.com", "A", "198.51.100.8"),
        ],
    );
    s.start_until_www();
    s.wait_dns("mm.example.com", "A", &["192.0.2.13"]);

    // status: a zone with conflicts is not converged: exit 2, and the document says so.
    let status = wait_for(Duration::from_secs(15), || {
        let (code, out, _) = cli(&s, &["status", "-o", "json"], &[]);
        let v = json(&out);
        (v["zones"][0]["records_by_state"]["conflict"] == 2
            && v["zones"][0]["last_sync"].is_string())
        .then_some((code, out))
    });
    let (code, out) = status.expect("status never showed the two conflicts");
    assert_eq!(code, 2, "{out}");
    let v = json(&out);
    assert_eq!(v["exit_code"], 2, "{out}");
    assert_eq!(v["converged"], false, "{out}");
    assert!(v["zones"][0]["last_sync_age_seconds"].is_u64(), "{out}");
    let (_, yaml, _) = cli(&s, &["status", "-o", "yaml"], &[]);
    validate(&python, "status", &out, Some(&yaml));

    // records: sorted by name then type; desired value and next retry carried.
    let (code, out, err) = cli(&s, &["records", "--all", "-o", "json"], &[]);
    assert_eq!(code, 2, "conflicts listed: {out}{err}");
    let (_, yaml, _) = cli(&s, &["records", "--all", "-o", "json"], &[]);
    validate(&python, "records", &out, Some(&yaml));
    let (_, yaml, _) = cli(&s, &["records", "--all", "-o", "yaml"], &[]);
    validate(&python, "records", &out, Some(&yaml));
    let v = json(&out);
    let keys: Vec<(String, String)> = v["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or("").to_string(),
                r["type"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "records sorted by name, then type");
    assert_eq!(keys.len(), 5, "{keys:?}");
    let aa = &v["records"][0];
    assert_eq!(aa["name"], "aa.example.com.", "{out}");
    assert_eq!(aa["state"], "conflict", "{out}");
    assert_eq!(aa["desired"]["values"][0], "192.0.2.12", "{out}");
    assert_eq!(aa["observed"]["values"][0], "198.51.100.8", "{out}");
    assert_eq!(v["not_converged"], 2, "{out}");

    // The table: sorted too, with the desired value; a pipe gets no escape codes.
    let (code, table, _) = cli(&s, &["records"], &[]);
    assert_eq!(code, 2, "{table}");
    assert!(
        !table.contains('\x1b'),
        "escape codes into a pipe: {table:?}"
    );
    let (a, z) = (
        table.find("aa.example.com.").expect("aa listed"),
        table.find("zz.example.com.").expect("zz listed"),
    );
    assert!(a < z, "{table}");
    assert!(
        table.contains("192.0.2.12") && table.contains("198.51.100.8"),
        "{table}"
    );
    assert!(table.contains("2 record(s)"), "{table}");

    // plan: only blocked records, no change: --detailed-exitcode says 0.
    let (code, out, err) = cli(&s, &["plan", "-o", "json", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, yaml, _) = cli(&s, &["plan", "-o", "yaml"], &[]);
    validate(&python, "plan", &out, Some(&yaml));
    let v = json(&out);
    assert_eq!(v["changes"], 0, "{out}");
    let blocked: Vec<&str> = v["zones"][0]["blocked"]
        .as_array()
        .expect("blocked")
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(blocked, ["aa.example.com.", "zz.example.com."], "{out}");

    // sync follows to the end; its document too.
    let (code, out, err) = cli(&s, &["sync", "-o", "json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    validate(&python, "sync", &out, None);
    assert_eq!(json(&out)["zones"][0]["phase"], "done", "{out}");
    let (code, out, _) = cli(&s, &["sync"], &[]);
    assert!(
        code == 0 && out.contains("example.com. done") && !out.contains('\x1b'),
        "{out}"
    );

    // Colour: on a terminal (script(1) gives one) the table is coloured, unless
    // NO_COLOR is set.
    let script = tool("DNSPLANE_SCRIPT", "script").expect("script(1), from bsdutils");
    let on_tty = |no_color: bool| {
        let cmd = format!(
            "stty cols 200 rows 50; {} records --addr 127.0.0.1:{}",
            binary("dnsplane").display(),
            s.planner_port
        );
        let mut c = Command::new(&script);
        c.args(["-qec", &cmd, "/dev/null"])
            .env("DNSPLANE_LOG", "warn")
            .env("TERM", "xterm")
            .env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        let out = c.output().expect("run script");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_tty(false);
    assert!(
        coloured.contains("\x1b[") && coloured.contains("aa.example.com."),
        "no colour on a terminal: {coloured:?}"
    );
    let plain = on_tty(true);
    assert!(
        plain.contains("aa.example.com.") && !plain.contains("\x1b["),
        "NO_COLOR ignored: {plain:?}"
    );

    // An unreachable planner: 1, whatever the command and format.
    for args in [
        &["status"][..],
        &["status", "-o", "json"],
        &["records"],
        &["plan", "--detailed-exitcode"],
    ] {
        let out = Command::new(binary("dnsplane"))
            .args(args)
            .args(["--addr", "127.0.0.1:1"])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

/// A converged zone: `status` 0; `plan --detailed-exitcode` 0, then 2 once the desired
/// state changes and writes hang (so the change stays planned).
#[test]
fn cli_exit_codes_converged_and_changes_present() {
    let Some(tools) = Tools::find() else { return };
    let s = Stack::www_running(tools.clone());
    let converged = wait_for(Duration::from_secs(15), || {
        let (code, out, _) = cli(&s, &["status"], &[]);
        (code == 0).then_some(out)
    });
    let out = converged.expect("status never exited 0 on a converged zone");
    assert!(
        out.contains("example.com.") && out.contains("converged=1"),
        "{out}"
    );
    assert!(out.contains(" ago)"), "the last sync's age: {out}");
    let (code, out, _) = cli(&s, &["plan", "--detailed-exitcode"], &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = cli(&s, &["records"], &[]);
    assert_eq!(code, 0, "{out}");
    drop(s);

    let hang_writes = "[[accounts.faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"1h\"\n";
    let desired = endpoints("web", &[("www.example.com", "A", &["192.0.2.10"])]);
    let mut s = Stack::with_config(tools, &[("web.yaml", &desired)], "report", hang_writes, "");
    s.start();
    let out = wait_for(Duration::from_secs(15), || {
        let (code, out, _) = cli(&s, &["plan", "--detailed-exitcode"], &[]);
        (code == 2).then_some(out)
    })
    .unwrap_or_else(|| panic!("plan --detailed-exitcode never said 2; logs:\n{}", s.logs()));
    assert!(out.contains("+ www.example.com. A 60 192.0.2.10"), "{out}");
    // Without the flag, changes are no failure.
    let (code, out, _) = cli(&s, &["plan"], &[]);
    assert_eq!(code, 0, "{out}");
}

/// The JSON example in docs/cli.md is a document the `status` schema admits: the
/// docs show what the contract says.
#[test]
fn the_status_example_in_the_docs_meets_the_schema() {
    let Some(python) = tool("DNSPLANE_JSONSCHEMA_PYTHON", "dnsplane-jsonschema-python") else {
        return;
    };
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md"))
            .expect("docs/cli.md");
    let start = docs
        .find("```json\n")
        .expect("docs/cli.md has a JSON example")
        + 8;
    let example = &docs[start..start + docs[start..].find("```").expect("the block ends")];
    json(example);
    validate(&python, "status", example, None);
}

/// `completions bash` loads in bash and completes the subcommands; `man` names each.
#[test]
fn completions_load_in_bash_and_the_man_page_names_every_subcommand() {
    let subcommands = [
        "up",
        "plan",
        "status",
        "records",
        "approve",
        "release",
        "resume",
        "certs",
        "emulate",
        "sync",
        "completions",
        "man",
    ];
    let bash = tool("DNSPLANE_BASH", "bash").expect("bash");
    let script = format!(
        r#"source <("{bin}" completions bash) || exit 9
complete -p dnsplane || exit 8
COMP_WORDS=(dnsplane s); COMP_CWORD=1; COMP_LINE="dnsplane s"; COMP_POINT=10
_dnsplane dnsplane s dnsplane
printf '%s\n' "${{COMPREPLY[@]}}"
echo ---
COMP_WORDS=(dnsplane status --o); COMP_CWORD=2; COMP_LINE="dnsplane status --o"; COMP_POINT=19
_dnsplane dnsplane --o status
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        bin = binary("dnsplane").display()
    );
    let out = Command::new(bash)
        .args(["--norc", "-c", &script])
        .output()
        .expect("run bash");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (first, second) = text.split_once("---").expect("two completions");
    let words: Vec<&str> = first.lines().collect();
    for w in ["status", "sync"] {
        assert!(words.contains(&w), "`dnsplane s<TAB>` offers {w}: {text}");
    }
    assert!(!words.contains(&"plan"), "only what starts with s: {text}");
    assert!(second.contains("--output"), "{text}");

    let out = Command::new(binary("dnsplane"))
        .arg("man")
        .output()
        .expect("run man");
    let page = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && page.contains(".TH dnsplane"),
        "{page}"
    );
    for sub in subcommands {
        assert!(
            page.contains(&format!("dnsplane\\-{sub}(1)")),
            "the man page names {sub}: {page}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(binary("dnsplane"))
        .arg("man")
        .arg(dir.path())
        .output()
        .expect("run man DIR");
    assert!(out.status.success());
    for sub in subcommands {
        let page = dir.path().join(format!("dnsplane-{sub}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        assert!(text.contains(".TH dnsplane-"), "{text}");
    }
    // A bad flag is an error (1), not "not converged" (clap's own code is 2).
    let out = Command::new(binary("dnsplane"))
        .args(["status", "--no-such-flag"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let out = Command::new(binary("dnsplane"))
        .args(["status", "--help"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let top = std::fs::read_to_string(dir.path().join("dnsplane.1")).expect("dnsplane.1");
    assert!(
        top.contains("\\-\\-version") || top.contains("\\-V"),
        "{top}"
    );
}

/// `dnsplane sync` during an automatic sync follows it: the running sync's work is
/// in what it reports (it used to wait silently and report `done 0/0`).
#[test]
fn cli_sync_follows_the_sync_already_running() {
    let Some(tools) = Tools::find() else { return };
    let desired = endpoints("web", &[("www.example.com", "A", &["192.0.2.10"])]);
    // Every write takes 3 s: the automatic sync below is still applying when the
    // call comes.
    let slow_writes = "[[accounts.faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"3s\"\n";
    let mut s = Stack::with_config(tools, &[("web.yaml", &desired)], "report", slow_writes, "");
    s.start_until_www();
    let more = endpoints("more", &[("new.example.com", "A", &["192.0.2.20"])]);
    std::fs::write(s.path("desired/more.yaml"), more).expect("write more.yaml");
    wait_for(Duration::from_secs(10), || {
        let st = s.planner_call("GetStatus", "{}");
        (st["zones"][0]["recordsByState"]["in_flight"] == 1).then_some(())
    })
    .unwrap_or_else(|| panic!("the automatic sync never sent new; logs:\n{}", s.logs()));
    let (code, out, err) = cli(&s, &["sync", "-o", "json"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let zone = &json(&out)["zones"][0];
    assert_eq!(zone["phase"], "done", "{out}");
    assert!(
        zone["changes_planned"].as_u64() >= Some(1) && zone["changes_done"].as_u64() >= Some(1),
        "the followed sync's write is reported: {out}"
    );
    assert!(zone["outcomes"]["APPLIED"].as_u64() >= Some(1), "{out}");
    s.wait_dns("new.example.com", "A", &["192.0.2.20"]);
}
