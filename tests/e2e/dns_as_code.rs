//! docs/dns-as-code.md, run as written against a real PowerDNS: every ```sh block of
//! the page, in order (the zone, file names and nothing else replaced), with the
//! checks a user would make between them. A live zone with records nobody wrote down
//! (and one external-dns owns) is imported as files, read by the planner's file
//! source, adopted without one value changing; a pull request's plan is shown as
//! Markdown (and held, and refused when broken); merging it is applied.
use crate::stack::{pdns_of, start_pdns};
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// (relative name, type, content) as PowerDNS's API takes it and AXFR shows it.
type Rec = (&'static str, &'static str, &'static str);

/// The records of [`LIVE`] external-dns owns (the record and its registry mark).
pub(crate) const LIVE_EXTERNAL: &[(&str, &str)] = &[("web", "A"), ("a-web", "TXT")];

/// The live zone: what an operator made by hand over the years.
const LIVE: &[Rec] = &[
    ("www", "A", "192.0.2.10"),
    ("api", "A", "192.0.2.11"),
    ("api", "AAAA", "2001:db8::11"),
    ("docs", "CNAME", "www.pdns.test."),
    ("@", "MX", "10 mail.pdns.test."),
    ("mail", "A", "192.0.2.25"),
    ("@", "TXT", "\"v=spf1 mx -all\""),
    ("_sip._tcp", "SRV", "10 60 5060 sip.pdns.test."),
    ("sip", "A", "192.0.2.30"),
    ("@", "CAA", "0 issue \"letsencrypt.org\""),
    ("old", "A", "192.0.2.40"),
    ("legacy", "A", "192.0.2.41"),
    // external-dns's, with its mark (new format, default naming): never imported.
    ("web", "A", "198.51.100.7"),
    (
        "a-web",
        "TXT",
        "\"heritage=external-dns,external-dns/owner=cluster-a,external-dns/resource=ingress/default/web\"",
    ),
];

/// Records the import writes: the live zone less external-dns's record and mark.
const IMPORTED: usize = 12;

/// PATCHes `body` (`{"rrsets": […]}`) into PowerDNS's `zone`, which must take it.
pub(crate) fn patch_zone(
    pdns: &dnsplane_e2e::servers::PowerDns,
    zone: &str,
    body: &serde_json::Value,
) {
    let (status, answer) = pdns.api(
        "PATCH",
        &format!("/api/v1/servers/localhost/zones/{zone}"),
        &body.to_string(),
    );
    assert_eq!(status, 204, "{answer}");
}

/// [`LIVE`] as PowerDNS's API takes it (one RRSet per name and type).
/// A private PowerDNS whose zone holds [`rrsets_json`]'s records, or `None` to skip.
pub(crate) fn pdns_with_data() -> Option<dnsplane_e2e::servers::RealServer> {
    let server = start_pdns()?;
    let zone = server.zone().to_string();
    patch_zone(pdns_of(&server), &zone, &rrsets_json(&zone));
    Some(server)
}

pub(crate) fn rrsets_json(zone: &str) -> serde_json::Value {
    let mut by_key: std::collections::BTreeMap<(String, &str), Vec<&str>> = Default::default();
    for (name, rtype, content) in LIVE {
        let fqdn = match *name {
            "@" => zone.to_string(),
            n => format!("{n}.{zone}"),
        };
        by_key.entry((fqdn, rtype)).or_default().push(content);
    }
    let rrsets: Vec<serde_json::Value> = by_key
        .into_iter()
        .map(|((name, rtype), contents)| {
            serde_json::json!({
                "name": name, "type": rtype, "ttl": 300, "changetype": "REPLACE",
                "records": contents.iter().map(|c| serde_json::json!({"content": c, "disabled": false})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "rrsets": rrsets })
}

/// The ```sh blocks of a docs page, in order, with `example.com`'s names replaced.
fn blocks(page: &str, zone: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(page))
        .expect("read page");
    let zone = zone.trim_end_matches('.');
    let slug = zone.replace('.', "-");
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```sh" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            out.push(
                block
                    .join("\n")
                    .replace("example-com", &slug)
                    .replace("example.com", zone),
            );
        }
    }
    out
}

/// Runs one block with bash (`-euo pipefail`) in `dir`, `dnsplane` first on PATH and
/// the planner's address in the environment; returns its output, asserting success.
fn run_block(block: &str, dir: &Path, addr: &str) -> String {
    let (ok, text) = try_block(block, dir, addr);
    assert!(ok, "block failed:\n{block}\n---\n{text}");
    text
}

/// [`run_block`] without the assertion: (succeeded, output).
fn try_block(block: &str, dir: &Path, addr: &str) -> (bool, String) {
    let bin = dnsplane_testing::binary("dnsplane");
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", block])
        .current_dir(dir)
        .env("PATH", path)
        .env("DNSPLANE_PLANNER_ADDR", addr)
        .env("NO_COLOR", "1")
        .output()
        .expect("run bash");
    let text = crate::stack::combined(&out);
    (out.status.success(), text)
}

/// The zone's data lines as AXFR shows them, without SOA and dnsplane's marks.
fn data_lines(s: &RealStack) -> BTreeSet<String> {
    s.axfr()
        .into_iter()
        .filter(|l| !l.contains(" SOA ") && !l.starts_with("_dnsplane-"))
        .collect()
}

#[test]
fn the_walkthrough_of_docs_dns_as_code_runs_against_a_real_powerdns() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = pdns_with_data() else {
        return;
    };
    let zone = server.zone().to_string();
    // A guard that weighs this small zone: a pull request deleting most of it is held.
    let opts = Options {
        planner_extra: "[safety]\nmin_zone_records = 5\n".into(),
        ..Options::default()
    };
    let mut s = RealStack::start(server, tools, opts);
    let addr = s.planner_addr();
    let work = tempfile::tempdir().expect("work dir");
    let steps = blocks("docs/dns-as-code.md", &zone);
    assert_eq!(steps.len(), 4, "the page's steps: {steps:#?}");
    let live = data_lines(&s);

    // 1. Import: every record but external-dns's, which is listed with its owner.
    let out = run_block(&steps[0], work.path(), &addr);
    assert!(
        out.contains(&format!("wrote {IMPORTED} record(s) in 1 file(s)")),
        "{out}"
    );
    assert!(
        out.contains("web.pdns.test. A (owned by external-dns \"cluster-a\")"),
        "{out}"
    );
    assert!(out.contains("left out: the apex NS"), "{out}");
    let file = work.path().join("dns/pdns-test-0001.yaml");
    let text = std::fs::read_to_string(&file).expect("imported file");
    assert!(text.contains("\"www.pdns.test\""), "{text}");
    assert!(
        !text.contains("198.51.100.7"),
        "external-dns's record imported:\n{text}"
    );
    // Never into a directory that is not empty.
    let (code, again) = s.cli(&[
        "import",
        &zone,
        "--out",
        work.path().join("dns").to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{again}");
    assert!(again.contains("is not empty"), "{again}");

    // 2. The planner reads the files: each record desired, equal, and nobody's.
    let dns = work.path().join("dns");
    let config = s.dir().join("planner.toml");
    s.restart_planner_with(|| {
        let mut toml = std::fs::read_to_string(&config).expect("planner.toml");
        toml.push_str(&format!(
            "\n[[sources]]\ntype = \"file\"\npaths = [\"{}\"]\n",
            dns.display()
        ));
        std::fs::write(&config, toml).expect("planner.toml");
    });
    let (code, plan) = s.cli(&["plan", "-o", "json"]);
    assert_eq!(code, 0, "{plan}");
    let plan: serde_json::Value = serde_json::from_str(&plan).expect("plan json");
    assert_eq!(plan["changes"], 0, "the round trip plans no change: {plan}");
    assert_eq!(
        plan["blocked"], IMPORTED,
        "each imported record waits for adoption: {plan}"
    );
    let out = run_block(&steps[1], work.path(), &addr);
    assert!(
        out.contains(&format!("{IMPORTED} record(s) to take")),
        "the adopt plan is every imported record: {out}"
    );
    assert!(
        out.contains(&format!("adopted {IMPORTED} of {IMPORTED}")),
        "{out}"
    );
    assert_eq!(data_lines(&s), live, "adopting changed no value");
    let marks = s
        .axfr()
        .iter()
        .filter(|l| l.starts_with("_dnsplane-"))
        .count();
    assert_eq!(marks, IMPORTED, "one mark per adopted record");

    // The round trip is exact in every format: the zone imported as a zone file or
    // as octoDNS YAML, planned as the desired state, plans nothing.
    for (format, read_as) in [
        ("zone", "auto"),
        ("octodns", "octodns"),
        ("dnsendpoint", "auto"),
    ] {
        let dir = work.path().join(format!("as-{format}"));
        let (code, out) = s.cli(&[
            "import",
            &zone,
            "--out",
            dir.to_str().unwrap(),
            "--format",
            format,
        ]);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains(&format!("wrote {IMPORTED} record(s)")),
            "{format}: {out}"
        );
        let (code, plan) = s.cli(&[
            "plan",
            "--desired",
            dir.to_str().unwrap(),
            "--format",
            read_as,
            "-o",
            "json",
        ]);
        assert_eq!(code, 0, "{plan}");
        let plan: serde_json::Value = serde_json::from_str(&plan).expect("plan json");
        assert_eq!(
            (plan["changes"].as_u64(), plan["blocked"].as_u64()),
            (Some(0), Some(0)),
            "{format}: {plan}"
        );
    }

    // `--per-file` splits DNSEndpoint files (12 records: 5, 5 and 2), each re-read.
    let split = work.path().join("split");
    let (code, out) = s.cli(&[
        "import",
        &zone,
        "--out",
        split.to_str().unwrap(),
        "--per-file",
        "5",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("wrote {IMPORTED} record(s) in 3 file(s)")),
        "{out}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&split)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "pdns-test-0001.yaml",
            "pdns-test-0002.yaml",
            "pdns-test-0003.yaml"
        ]
    );
    let (code, plan) = s.cli(&["plan", "--desired", split.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 0, "{plan}");
    assert!(plan.contains("\"changes\": 0"), "{plan}");

    // 3. A pull request: its Markdown plan names the one change.
    let out = run_block(&steps[2], work.path(), &addr);
    assert!(
        out.contains("**1 change(s)** in 1 zone(s): 0 create, 1 update"),
        "{out}"
    );
    assert!(
        out.contains("| update | www.pdns.test. | A | 300 192.0.2.10 | 300 192.0.2.20 |"),
        "{out}"
    );
    assert!(!out.contains("HELD"), "{out}");
    // A broken file plans nothing and names the file and line.
    let broken = work.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(
        broken.join("a.yaml"),
        text.replace("recordType: A\n", "recordType: [A\n"),
    )
    .unwrap();
    let (code, out) = s.cli(&["plan", "--desired", broken.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("a.yaml:") && out.contains("nothing planned"),
        "{out}"
    );
    // Deleting most of the zone: the guard's verdict, before anything merges.
    let most = work.path().join("most");
    std::fs::create_dir(&most).unwrap();
    let kept: String = text
        .split("    - dnsName:")
        .take(3)
        .collect::<Vec<_>>()
        .join("    - dnsName:");
    std::fs::write(most.join("a.yaml"), kept).unwrap();
    let (code, out) = s.cli(&[
        "plan",
        "--desired",
        most.to_str().unwrap(),
        "-o",
        "markdown",
        "--detailed-exitcode",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("**Would be HELD** by the mass-change guard: 10 deletes"),
        "{out}"
    );
    assert_eq!(data_lines(&s), live, "plans changed nothing");
    // docs/cli.md's CI job: passes on the pull request, fails on a held or broken one.
    let ci = blocks("docs/cli.md", &zone)
        .into_iter()
        .find(|b| b.starts_with("dnsplane plan --desired ."))
        .expect("docs/cli.md's CI job");
    let review = work.path().join("review");
    let (ok, out) = try_block(&ci, &review, &addr);
    assert!(ok && out.contains("| update | www.pdns.test."), "{out}");
    let (ok, out) = try_block(&ci, &most, &addr);
    assert!(
        !ok && out.contains("would be held by the mass-change guard"),
        "{out}"
    );
    let (ok, out) = try_block(&ci, &broken, &addr);
    assert!(
        !ok && out.contains("cannot be planned") && out.contains("a.yaml:"),
        "{out}"
    );

    // 4. Merged: the planner reads it and applies it.
    run_block(&steps[3], work.path(), &addr);
    let after = data_lines(&s);
    assert!(
        after.contains(&format!("www.{zone} 300 A 192.0.2.20")),
        "{after:?}"
    );
    assert!(
        after.contains(&format!("web.{zone} 300 A 198.51.100.7")),
        "external-dns's record untouched: {after:?}"
    );
    assert_eq!(after.len(), live.len(), "{after:?}");

    // Export: the desired state reads back as the files say.
    let (code, out) = s.cli(&["export", &zone, "--format", "dnsendpoint"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("\"192.0.2.20\"") && !out.contains("\"192.0.2.10\""),
        "{out}"
    );
}
