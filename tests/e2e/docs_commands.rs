//! Docs are true: every command block (```sh) of README.md and docs/*.md is accounted
//! for here. A block is either run for real — against a fresh secure `dnsplane up`
//! (from a directory where `.dnsplane-state` is its state directory, as the README
//! runs it), against `dnsplane emulate route53`, or needing nothing — and must
//! succeed; or run by another test, named here; or, when it needs what cannot run
//! here (a Kubernetes cluster, a Docker engine, external-dns, a release build or a
//! benchmark of many minutes), checked: it parses as shell, every repository path it
//! names exists, every `dnsplane*` subcommand and flag it uses exists, and every
//! `cargo … -p P --bench B` names a real package and target. A block this table does
//! not know fails the test until someone decides which it is.
//!
//! Beside the blocks: every repository path and every `dnsplane_*` metric the docs
//! name exists.
use crate::stack::Tools;
use dnsplane_e2e::{Proc, binary, free_port, wait_for};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How a block is made true.
#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    /// Run against a fresh secure `dnsplane up` on the example zone.
    Up,
    /// Run against `dnsplane emulate route53`.
    Route53Emulator,
    /// Run from the repository root; needs nothing running.
    Plain,
    /// Run by the test named.
    Elsewhere(&'static str),
    /// Checked, not run, for the reason given.
    Check(&'static str),
}

const CLUSTER: &str =
    "needs a Kubernetes cluster (the manifests are validated by tests/e2e/deploy_files.rs)";
const DOCKER: &str = "needs a Docker engine (the compose file and Dockerfiles are checked by tests/e2e/deploy_files.rs)";
/// The test that runs docs/dns-as-code.md's blocks in order against a real PowerDNS.
const WALKTHROUGH: &str =
    "dns_as_code::the_walkthrough_of_docs_dns_as_code_runs_against_a_real_powerdns";
const BENCH: &str = "a benchmark of minutes in a release build: its figures are in the docs";

/// (file, how the block's first command line starts, how). Order: blocks that
/// change the running `up` (release) come last in their file.
const TABLE: &[(&str, &str, How)] = &[
    (
        "README.md",
        "cargo run --release --bin dnsplane -- up\n",
        How::Check(
            "the two commands themselves: `up` runs until stopped (tests/e2e/up.rs runs it as the README does), tests/run-all.sh is this very suite",
        ),
    ),
    ("README.md", "dig @127.0.0.1 -p 10053", How::Up),
    (
        "README.md",
        "sed -i 's/192.0.2.10$/192.0.2.20/' deploy/examples/desired/web.yaml",
        How::Up,
    ),
    (
        "README.md",
        "cargo run -q --release --bin dnsplane -- status",
        How::Up,
    ),
    (
        "README.md",
        "cargo run --release --bin dnsplane -- up --route53-emulator",
        How::Elsewhere("up::dnsplane_up_with_the_route53_emulator_is_read_by_the_aws_cli"),
    ),
    (
        "README.md",
        "AWS_ACCESS_KEY_ID=AKIAEMULATOR",
        How::Elsewhere("up::dnsplane_up_with_the_route53_emulator_is_read_by_the_aws_cli"),
    ),
    (
        "docs/grpc.md",
        "S=.dnsplane-state",
        How::Elsewhere("cookbook::every_grpcurl_command_in_docs_grpc_runs_against_dnsplane_up"),
    ),
    (
        "README.md",
        "cargo build --release",
        How::Check(
            "a release build of minutes; the same binaries run in debug throughout this suite",
        ),
    ),
    (
        "docs/safety.md",
        "PROPTEST_CASES=100000",
        How::Check("100,000 cases take an hour; the suite runs the same properties with 256"),
    ),
    (
        "docs/cli.md",
        "cargo run -q --bin dnsplane -- completions bash",
        How::Plain,
    ),
    (
        "docs/dns-as-code.md",
        "dnsplane import example.com --out dns",
        How::Elsewhere(WALKTHROUGH),
    ),
    (
        "docs/dns-as-code.md",
        "dnsplane adopt example.com --dry-run",
        How::Elsewhere(WALKTHROUGH),
    ),
    (
        "docs/dns-as-code.md",
        "git clone -q dns review",
        How::Elsewhere(WALKTHROUGH),
    ),
    (
        "docs/dns-as-code.md",
        "git -C dns pull -q --ff-only ../review move-www",
        How::Elsewhere(WALKTHROUGH),
    ),
    (
        "docs/cli.md",
        "dnsplane plan --desired . -o markdown --detailed-exitcode",
        How::Elsewhere(WALKTHROUGH),
    ),
    (
        "docs/netbox.md",
        "HOOK=$(curl -sf -X POST \"$NETBOX_URL/api/extras/webhooks/\"",
        // dnsplane_testing::netbox::NetBox::hook runs this block against the real
        // NetBox (with the test's name and URL).
        How::Elsewhere("netbox::netbox_addresses_reach_powerdns_and_follow_netbox_webhooks"),
    ),
    (
        "docs/netbox.md",
        "curl -sf -X POST \"$NETBOX_URL/api/extras/custom-fields/\"",
        // dnsplane_testing::netbox::NetBox::status_field runs this block against the
        // real NetBox.
        How::Elsewhere(
            "netbox_plugin::plugin_records_reach_powerdns_beside_addresses_with_outcomes_in_netbox",
        ),
    ),
    ("docs/deploy.md", "docker build", How::Check(DOCKER)),
    ("docs/deploy.md", "docker compose", How::Check(DOCKER)),
    ("docs/deploy.md", "kubectl apply", How::Check(CLUSTER)),
    (
        "docs/emulators.md",
        "dnsplane emulate route53 --listen",
        How::Check("a synopsis ([--config FILE] is a placeholder); the next blocks run against it"),
    ),
    (
        "docs/emulators.md",
        "export AWS_ACCESS_KEY_ID=AKIAEMULATOR",
        How::Route53Emulator,
    ),
    (
        "docs/emulators.md",
        "curl -s -X POST http://127.0.0.1:4566/_emulator/faults",
        How::Route53Emulator,
    ),
    (
        "docs/emulators.md",
        "dnsplane emulate clouddns",
        How::Check("a synopsis ([--config clouddns.toml] is a placeholder)"),
    ),
    (
        "docs/external-dns.md",
        "external-dns \\",
        How::Check(
            "needs external-dns and a cluster (its webhook calls run in tests/e2e/webhook_server.rs)",
        ),
    ),
    ("docs/external-dns.md", "dnsplane status ", How::Up),
    (
        "docs/external-dns.md",
        "cargo bench -p dnsplane-planner --bench webhook",
        How::Check(BENCH),
    ),
    (
        "docs/external-dns.md",
        "dnsplane plan --zone example.com.",
        How::Up,
    ),
    (
        "docs/external-dns.md",
        "dnsplane release example.com.",
        How::Elsewhere(
            "external_dns_takeover::takes_over_one_external_dns_owners_records_without_changing_a_value",
        ),
    ),
    ("docs/observability.md", "curl -s --cacert", How::Up),
    ("docs/observability.md", "promtool check rules", How::Plain),
    (
        "docs/providers.md",
        "pdnsutil set-meta",
        How::Check(
            "changes an operator's existing PowerDNS (zones the tests create through the API have the metadata already)",
        ),
    ),
    (
        "docs/providers.md",
        "tsig-keygen",
        How::Check("writes the system's /etc/bind of an operator's BIND"),
    ),
    (
        "docs/providers.md",
        "gcloud iam roles create",
        How::Check("needs a Google Cloud project"),
    ),
    (
        "docs/providers.md",
        "cargo build --release --bins && target/release/dnsplane-bench-providers",
        How::Check(BENCH),
    ),
    (
        "docs/reliability.md",
        "cargo bench -p dnsplane-applier --bench isolation",
        How::Check(BENCH),
    ),
    (
        "docs/reliability.md",
        "cargo build --release --bins && target/release/dnsplane-bench-soak",
        How::Check(BENCH),
    ),
    (
        "docs/scale.md",
        "cargo build --release --bins && cargo bench -p dnsplane-e2e --bench scale",
        How::Check(BENCH),
    ),
    (
        "docs/scale.md",
        "cargo bench -p dnsplane-planner --bench desired",
        How::Check(BENCH),
    ),
    (
        "docs/scale.md",
        "cargo bench -p dnsplane-planner --bench file_source",
        How::Check(BENCH),
    ),
    (
        "docs/scale.md",
        "cargo bench -p dnsplane-applier --bench store",
        How::Check(BENCH),
    ),
    (
        "docs/observability.md",
        "cargo bench -p dnsplane-planner --bench audit",
        How::Check(BENCH),
    ),
    (
        "docs/scale.md",
        "cargo build --release --bins && target/release/dnsplane-bench-linear",
        How::Check(BENCH),
    ),
    (
        "docs/scale.md",
        "grpcurl -plaintext 127.0.0.1:50052",
        How::Check("the plaintext applier of that section's benchmark setup"),
    ),
    (
        "docs/scale.md",
        "cargo build --release --bins && target/release/dnsplane-bench-scaling",
        How::Check(BENCH),
    ),
    (
        "docs/security.md",
        "grpcurl -cacert .dnsplane-state/ca.pem",
        How::Up,
    ),
    (
        "docs/security.md",
        "TOKEN=$(openssl rand -hex 32)",
        How::Plain,
    ),
];

#[derive(Debug, Clone)]
struct Block {
    file: String,
    line: usize,
    text: String,
}

fn root() -> PathBuf {
    crate::deploy_files::root()
}

fn doc_files() -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| format!("docs/{}", p.file_name().expect("name").to_string_lossy()))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Every fenced block marked sh, bash, shell or console.
fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(root().join(&file)).expect("doc");
        let mut open: Option<(usize, bool, String)> = None;
        for (i, line) in text.lines().enumerate() {
            let fence = line.trim_start().strip_prefix("```");
            match (&mut open, fence) {
                (None, Some(lang)) => {
                    let shell = matches!(lang.trim(), "sh" | "bash" | "shell" | "console");
                    open = Some((i + 1, shell, String::new()));
                }
                (Some((start, shell, body)), Some(_)) => {
                    if *shell {
                        out.push(Block {
                            file: file.clone(),
                            line: *start,
                            text: std::mem::take(body),
                        });
                    }
                    open = None;
                }
                (Some((_, _, body)), None) => {
                    body.push_str(line);
                    body.push('\n');
                }
                (None, None) => {}
            }
        }
        assert!(open.is_none(), "{file} ends inside a code block");
    }
    out
}

/// The block's first line that is a command (not blank, not a comment).
fn first_command(b: &Block) -> String {
    b.text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_default()
        .to_string()
}

fn how(b: &Block) -> How {
    let first = format!("{}\n", first_command(b));
    let found: Vec<How> = TABLE
        .iter()
        .filter(|(f, start, _)| *f == b.file && first.starts_with(start))
        .map(|(_, _, h)| *h)
        .collect();
    assert!(
        found.len() == 1,
        "{}:{}: {} entries of the docs test's table match this block (first command {:?}); \
         say in tests/e2e/docs_commands.rs how it is made true",
        b.file,
        b.line,
        found.len(),
        first.trim()
    );
    found[0]
}

#[test]
fn cargo_run_becomes_the_built_binary() {
    assert_eq!(
        cargo_run_as_built("cargo run -q --bin dnsplane -- man /tmp/m && ls /tmp/m\nx\n"),
        "dnsplane man /tmp/m && ls /tmp/m\nx\n"
    );
    assert_eq!(
        cargo_run_as_built("cargo run --release --bin dnsplane -- up\n"),
        "dnsplane up\n"
    );
}

#[test]
fn every_command_block_is_run_or_checked() {
    let all = blocks();
    assert!(all.len() >= 30, "only {} blocks found", all.len());
    let mut used = BTreeSet::new();
    for b in &all {
        let h = how(b);
        used.insert(
            TABLE
                .iter()
                .position(|(f, start, _)| {
                    *f == b.file && format!("{}\n", first_command(b)).starts_with(start)
                })
                .expect("matched"),
        );
        // Every block, run or not, passes the static checks.
        check_block(b);
        if let How::Elsewhere(test) = h {
            let (module, name) = test.split_once("::").expect("module::test");
            let source = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("e2e/{module}.rs")),
            )
            .unwrap_or_else(|e| panic!("{test}: {e}"));
            assert!(
                source.contains(&format!("fn {name}()")),
                "{}:{}: the test {test} does not exist",
                b.file,
                b.line
            );
        }
    }
    for (i, (file, start, _)) in TABLE.iter().enumerate() {
        assert!(
            used.contains(&i),
            "the docs test's table names a block that is gone: {file} {start:?}"
        );
    }
}

// --- the static checks --------------------------------------------------------------

/// Logical command lines: continuations joined, comments and `$ ` prompts dropped.
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        let line = line.strip_prefix("$ ").unwrap_or(line);
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(strip_comment(line));
        out.push(std::mem::take(&mut pending));
    }
    out
}

/// `line` without a trailing ` # comment` (outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        prev = c;
    }
    line
}

/// Words of a command line, split on blanks, `&&`, `|` and `;` (quotes kept whole).
fn commands_of(line: &str) -> Vec<Vec<String>> {
    split_words(line, true).0
}

/// The words of a shell command line: blanks separate, '…' and "…" quote (the quotes
/// removed). With `separators`, `&&`, `|` and `;` also end a command: one list of
/// words per command. Also whether every quote was closed.
pub(crate) fn split_words(line: &str, separators: bool) -> (Vec<Vec<String>>, bool) {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '|' | ';' | '&') if separators => {
                commands.last_mut().expect("one").extend(word.take());
                if !commands.last().expect("one").is_empty() {
                    commands.push(Vec::new());
                }
            }
            (None, c) if c.is_whitespace() => commands.last_mut().expect("one").extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    commands.last_mut().expect("one").extend(word);
    commands.retain(|c| !c.is_empty());
    (commands, quote.is_none())
}

/// The workspace's packages: name → (bin targets, bench targets).
type Packages = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn packages() -> &'static Packages {
    static P: std::sync::OnceLock<Packages> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(root())
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--offline",
            ])
            .output()
            .expect("cargo metadata");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("metadata json");
        let mut map = BTreeMap::new();
        for p in v["packages"].as_array().expect("packages") {
            let mut bins = BTreeSet::new();
            let mut benches = BTreeSet::new();
            for t in p["targets"].as_array().expect("targets") {
                let name = t["name"].as_str().expect("name").to_string();
                for k in t["kind"].as_array().expect("kind") {
                    match k.as_str() {
                        Some("bin") => {
                            bins.insert(name.clone());
                        }
                        Some("bench") => {
                            benches.insert(name.clone());
                        }
                        _ => {}
                    }
                }
            }
            map.insert(
                p["name"].as_str().expect("name").to_string(),
                (bins, benches),
            );
        }
        map
    })
}

fn is_workspace_bin(name: &str) -> bool {
    packages().values().any(|(bins, _)| bins.contains(name))
}

/// What `bin [sub…] --help` prints, if it knows the subcommand.
fn help_of(bin: &str, sub: &[String]) -> Option<String> {
    let out = Command::new(binary(bin))
        .args(sub)
        .arg("--help")
        .output()
        .expect("run --help");
    let text = crate::stack::combined(&out);
    // The bench binaries print their usage and exit non-zero.
    (out.status.success() || text.starts_with("usage:")).then_some(text)
}

/// Checks one invocation of a workspace binary: its subcommand and flags exist.
fn check_invocation(at: &str, bin: &str, args: &[String]) {
    assert!(
        is_workspace_bin(bin),
        "{at}: no binary {bin} in the workspace"
    );
    // `dnsplane` has subcommands (possibly two deep: `emulate route53`).
    let mut sub = Vec::new();
    if bin == "dnsplane" {
        for a in args.iter().take_while(|a| !a.starts_with('-')) {
            let mut next = sub.clone();
            next.push(a.clone());
            let help = help_of(bin, &next);
            if help.is_none() {
                break;
            }
            let parent = help_of(bin, &sub).unwrap_or_default();
            // Only words the parent lists as subcommands (or enum values) descend.
            if !parent.contains(&format!("  {a}"))
                && !parent.contains(&format!("[possible values: {a}"))
                && !parent.contains(&format!(", {a}"))
            {
                break;
            }
            sub = next;
        }
        assert!(
            !sub.is_empty() || args.is_empty(),
            "{at}: `dnsplane {}`: no such subcommand",
            args.join(" ")
        );
    }
    let help = help_of(bin, &sub)
        .unwrap_or_else(|| panic!("{at}: `{bin} {}` --help fails", sub.join(" ")));
    for a in args {
        let flag = a.trim_start_matches('[').trim_end_matches(']');
        if let Some(name) = flag.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or_default();
            assert!(
                help.contains(&format!("--{name}")),
                "{at}: `{bin} {}` has no flag --{name}",
                sub.join(" ")
            );
        }
    }
}

fn check_block(b: &Block) {
    let at = format!("{}:{}", b.file, b.line);
    // It parses as shell.
    let out = Command::new("bash")
        .args([
            "-n",
            "-c",
            &b.text
                .lines()
                .map(|l| l.strip_prefix("$ ").unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n"),
        ])
        .output()
        .expect("bash -n");
    if !b.text.lines().any(|l| l.trim_start().starts_with("$ ")) {
        assert!(
            out.status.success(),
            "{at}: not valid shell: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for line in command_lines(&b.text) {
        for words in commands_of(&line) {
            // Skip leading VAR=value assignments and `export`.
            let words: Vec<&String> = words
                .iter()
                .skip_while(|w| *w == "export" || (w.contains('=') && !w.starts_with('-')))
                .collect();
            let Some(cmd) = words.first() else { continue };
            let rest: Vec<String> = words[1..].iter().map(|s| s.to_string()).collect();
            for w in &rest {
                check_path_word(&at, w);
            }
            let program = cmd.as_str();
            if let Some(bin) = program.strip_prefix("target/release/") {
                check_invocation(&at, bin, &rest);
            } else if program.starts_with("dnsplane") {
                check_invocation(&at, program, &rest);
            } else if program == "cargo" {
                check_cargo(&at, &rest);
            } else if program.starts_with("tests/") || program.starts_with("./") {
                check_path_word(&at, program);
            }
        }
    }
}

/// `cargo run --bin X -- args`, `cargo bench -p P --bench B`, `cargo test -p P`.
fn check_cargo(at: &str, args: &[String]) {
    let mut package = None;
    let mut bench = None;
    let mut bin = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-p" | "--package" => package = args.get(i + 1).cloned(),
            "--bench" => bench = args.get(i + 1).cloned(),
            "--bin" => bin = args.get(i + 1).cloned(),
            "--" => break,
            _ => {}
        }
        i += 1;
    }
    if let Some(p) = &package {
        let (_, benches) = packages()
            .get(p)
            .unwrap_or_else(|| panic!("{at}: no package {p} in the workspace"));
        if let Some(b) = &bench {
            assert!(benches.contains(b), "{at}: package {p} has no bench {b}");
        }
    }
    if let Some(b) = &bin {
        let after: Vec<String> = args
            .iter()
            .skip_while(|a| *a != "--")
            .skip(1)
            .cloned()
            .collect();
        check_invocation(at, b, &after);
    }
}

/// A word naming a file of the repository must name one that exists.
fn check_path_word(at: &str, word: &str) {
    const TOP: [&str; 8] = [
        "deploy/", "docs/", "tests/", "planner/", "applier/", "common/", "proto/", ".ci/",
    ];
    let w = word.trim_end_matches([',', '.', ')']);
    if TOP.iter().any(|t| w.starts_with(t)) && !w.contains('*') && !w.contains('$') {
        assert!(root().join(w).exists(), "{at}: {w} does not exist");
    }
}

// --- the runs ---------------------------------------------------------------------

/// A directory of the tools the docs call by name: the workspace's binaries, grpcurl,
/// the AWS CLI, promtool; put first on PATH.
fn tool_path(tools: &Tools) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("bin dir");
    for name in ["dnsplane", "dnsplane-planner", "dnsplane-applier"] {
        std::os::unix::fs::symlink(binary(name), dir.path().join(name)).expect("symlink");
    }
    std::os::unix::fs::symlink(&tools.grpcurl, dir.path().join("grpcurl")).expect("symlink");
    for (var, name) in [
        ("DNSPLANE_AWS_CLI", "aws"),
        ("DNSPLANE_PROMTOOL", "promtool"),
    ] {
        if let Some(p) = dnsplane_e2e::tool(var, name) {
            std::os::unix::fs::symlink(p, dir.path().join(name)).expect("symlink");
        }
    }
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

/// Runs `text` with bash (`set -euo pipefail`), `ports` replaced, and checks it
/// succeeded; a `dig` line's trailing comment is the answer it must print.
fn run_block(b: &Block, cwd: &Path, env: &[(&str, String)], ports: &[(&str, u16)]) -> String {
    let mut text = cargo_run_as_built(&b.text);
    for (from, to) in ports {
        text = text.replace(from, &to.to_string());
    }
    let out = Command::new("bash")
        .args(["-c", &format!("set -euo pipefail\n{text}")])
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}:{}: the block failed ({}):\n{text}\nstdout:\n{stdout}\nstderr:\n{}",
        b.file,
        b.line,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for line in b.text.lines().filter(|l| l.starts_with("dig ")) {
        if let Some((_, want)) = line.split_once(" # ") {
            assert!(
                stdout.contains(want.trim()),
                "{}:{}: `{line}` did not print {want}:\n{stdout}",
                b.file,
                b.line
            );
        }
    }
    stdout
}

/// `cargo run [-q] [--release] --bin X -- args` as the built `X` (on PATH): the
/// suite's binaries are the ones just built, and a nested cargo would build again.
fn cargo_run_as_built(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_string();
        while let Some(at) = line.find("cargo run ") {
            let rest = &line[at..];
            let Some(bin_at) = rest.find("--bin ") else {
                break;
            };
            let after_bin = &rest[bin_at + 6..];
            let name_end = after_bin.find(' ').unwrap_or(after_bin.len());
            let name = after_bin[..name_end].to_string();
            let tail = after_bin[name_end..]
                .strip_prefix(" --")
                .unwrap_or(&after_bin[name_end..])
                .to_string();
            line = format!("{}{name}{tail}", &line[..at]);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn blocks_run_by(h: How) -> Vec<Block> {
    blocks().into_iter().filter(|b| how(b) == h).collect()
}

#[test]
fn blocks_needing_nothing_run() {
    let Some(tools) = Tools::find() else { return };
    let (_bin, path) = tool_path(&tools);
    let home = tempfile::tempdir().expect("home");
    let run = blocks_run_by(How::Plain);
    assert!(!run.is_empty());
    for b in &run {
        run_block(
            b,
            &root(),
            &[
                ("PATH", path.clone()),
                ("HOME", home.path().display().to_string()),
            ],
            &[],
        );
    }
}

#[test]
fn blocks_against_dnsplane_up_run() {
    let Some(tools) = Tools::find() else { return };
    let (_bin, path) = tool_path(&tools);
    let cwd = tempfile::tempdir().expect("cwd");
    let state = cwd.path().join(".dnsplane-state");
    let (planner, applier, dns, admin) = (free_port(), free_port(), free_port(), free_port());
    let log = cwd.path().join("up.log");
    let listen = [
        ("planner", planner),
        ("applier", applier),
        ("dns", dns),
        ("admin", admin),
    ];
    // A copy of the example desired state at the path the README's edit names, so
    // that the blocks edit it as a reader does, and the repository stays as it is.
    let desired = cwd.path().join("deploy/examples/desired");
    std::fs::create_dir_all(&desired).expect("desired dir");
    for e in std::fs::read_dir(root().join("deploy/examples/desired")).expect("examples") {
        let from = e.expect("entry").path();
        std::fs::copy(&from, desired.join(from.file_name().expect("name"))).expect("copy");
    }
    let _up = crate::up::spawn_up(&[], &desired, &listen, &state, log.clone());
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();
    let served = wait_for(Duration::from_secs(60), || {
        (dnsplane_e2e::dig(&tools.dig, dns, "www.example.com", "A", false) == ["192.0.2.10"])
            .then_some(())
    });
    assert!(
        served.is_some(),
        "dnsplane up did not serve the example zone:\n{}",
        logs()
    );
    let env = [
        ("PATH", path),
        ("HOME", cwd.path().display().to_string()),
        ("DNSPLANE_PLANNER_ADDR", format!("127.0.0.1:{planner}")),
    ];
    let ports = [
        ("50051", planner),
        ("50052", applier),
        ("10053", dns),
        ("9451", admin),
    ];
    let run = blocks_run_by(How::Up);
    assert!(run.len() >= 5, "{} blocks", run.len());
    for b in &run {
        run_block(b, cwd.path(), &env, &ports);
    }
}

#[test]
fn blocks_against_the_route53_emulator_run() {
    let Some(tools) = Tools::find() else { return };
    let (_bin, path) = tool_path(&tools);
    let dir = tempfile::tempdir().expect("dir");
    let port = free_port();
    let _emulator = Proc::spawn(
        "dnsplane emulate route53",
        &binary("dnsplane"),
        &[
            "emulate",
            "route53",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ],
        dir.path().join("emulator.log"),
    );
    let up = wait_for(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "the emulator did not listen");
    let run = blocks_run_by(How::Route53Emulator);
    assert!(!run.is_empty());
    for b in &run {
        run_block(
            b,
            dir.path(),
            &[
                ("PATH", path.clone()),
                ("HOME", dir.path().display().to_string()),
            ],
            &[("4566", port)],
        );
    }
}

// --- names in the prose ------------------------------------------------------------

/// The `dnsplane_*` metric names the services' sources register.
fn registered_metrics() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stack = vec![
        root().join("planner"),
        root().join("applier"),
        root().join("common"),
    ];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("target") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for part in text.split('"').skip(1).step_by(2) {
                    if part.starts_with("dnsplane_")
                        && part
                            .bytes()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
                    {
                        names.insert(part.to_string());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn every_metric_and_path_the_docs_name_exists() {
    let metrics = registered_metrics();
    assert!(metrics.contains("dnsplane_planner_records"));
    let known = |name: &str| {
        metrics.contains(name)
            || ["_total", "_bucket", "_sum", "_count", "_info", "_created"]
                .iter()
                .any(|s| {
                    name.strip_suffix(s)
                        .is_some_and(|base| metrics.contains(base))
                })
    };
    let mut problems = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(root().join(&file)).expect("doc");
        for (i, line) in text.lines().enumerate() {
            // Metric names: dnsplane_ followed by [a-z0-9_], not a Rust path or a crate.
            let mut rest = line;
            while let Some(at) = rest.find("dnsplane_") {
                let tail = &rest[at..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(tail.len());
                let name = &tail[..end];
                let before = rest[..at].chars().last();
                let prefixed =
                    before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
                let path_like = tail[end..].starts_with("::") || tail[end..].starts_with('-');
                if !prefixed
                    && !path_like
                    && (name.starts_with("dnsplane_planner_")
                        || name.starts_with("dnsplane_applier_")
                        || name.starts_with("dnsplane_build")
                        || name.starts_with("dnsplane_process"))
                    && !name.ends_with('_')
                    && !known(name)
                {
                    problems.push(format!(
                        "{file}:{}: metric {name} is not registered anywhere",
                        i + 1
                    ));
                }
                rest = &tail[end.max(1)..];
            }
            // Repository paths in backticks or links.
            for piece in line.split(['`', '(', ')', ' ', '[', ']']) {
                let p = piece.split('#').next().unwrap_or_default();
                let p = p
                    .trim_start_matches("../")
                    .trim_end_matches([',', '.', ':', ';']);
                let top = [
                    "deploy/", "tests/", "planner/", "applier/", "common/", "proto/", ".ci/",
                    "docs/",
                ];
                let exists = root().join(p).exists()
                    || (file.starts_with("docs/") && root().join("docs").join(p).exists());
                if top.iter().any(|t| p.starts_with(t))
                    && !p.contains(['*', '<', '{', '$', '…'])
                    && !exists
                {
                    problems.push(format!("{file}:{}: {p} does not exist", i + 1));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the docs name what is not there:\n{}",
        problems.join("\n")
    );
}
