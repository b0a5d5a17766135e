//! dnsplane's octoDNS zone file parser and writer checked against octoDNS itself.
//!
//! Each zone file of octoDNS's own test configuration (`tests/fixtures/octodns/`, see
//! its README) is loaded by octoDNS's YamlProvider (`tests/octodns/load_zone.py`,
//! run with `$DNSPLANE_OCTODNS_PYTHON`) and parsed by
//! `dnsplane_planner::source::octodns::parse`; both must give the same records
//! (name, type, TTL, values in dnsplane's canonical form, octoDNS's rendered as RFC
//! presentation text by its `Record.to_rrset()`). What dnsplane does not plan is
//! taken out of octoDNS's side by one explicit rule ([`not_planned`]), and dnsplane
//! must name exactly those records in skip warnings. Then what `write` writes must
//! load in octoDNS (its default `enforce_order: true`) as the entries written.
//!
//! Without octoDNS the test prints why and passes; under
//! `DNSPLANE_REQUIRE_SERVERS=1` (tests/run-all.sh) it fails.
use dnsplane_common::rdata::canonicalize;
use dnsplane_common::{Name, RecordType};
use dnsplane_planner::source::octodns::{UNMODELLED_TYPES, parse, write};
use dnsplane_planner::source::{DesiredEntry, Origin};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One record: (name, type, ttl, sorted canonical values).
type Record = (String, String, u32, Vec<String>);

/// octoDNS's Python, or `None` (skip) when it is not installed.
fn octodns_python() -> Option<PathBuf> {
    let python = std::env::var_os("DNSPLANE_OCTODNS_PYTHON").map(PathBuf::from);
    let usable = python.as_ref().is_some_and(|p| {
        Command::new(p)
            .args(["-c", "import octodns.provider.yaml"])
            .status()
            .is_ok_and(|s| s.success())
    });
    if !usable {
        assert!(
            !dnsplane_testing::require_servers(),
            "octoDNS is required (DNSPLANE_REQUIRE_SERVERS=1): set $DNSPLANE_OCTODNS_PYTHON to a Python with octodns installed (tests/run-all.sh does)"
        );
        eprintln!(
            "skipping: $DNSPLANE_OCTODNS_PYTHON is not a Python with octoDNS (run tests/run-all.sh)"
        );
        return None;
    }
    python
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/octodns")
}

/// One record as octoDNS loaded it.
struct Loaded {
    record: Record,
    /// Why dnsplane does not plan it, if it does not.
    skip: Option<&'static str>,
}

/// The one rule for what dnsplane does not plan (both sides are checked against it).
fn not_planned(
    zone: &str,
    name: &str,
    rtype: &str,
    json: &serde_json::Value,
) -> Option<&'static str> {
    if UNMODELLED_TYPES.contains(&rtype) {
        Some("a type dnsplane does not model")
    } else if rtype == "NS" && name == zone {
        Some("the apex NS")
    } else if json["geo"] == true {
        Some("geo routing")
    } else if json["dynamic"] == true {
        Some("dynamic routing")
    } else if json["ignored"] == true {
        Some("octodns.ignored")
    } else {
        None
    }
}

/// The zone file `text` of `zone` as octoDNS's YamlProvider loads it, or octoDNS's
/// reason for refusing it.
fn octodns_load(
    python: &Path,
    zone: &str,
    text: &str,
    enforce_order: bool,
) -> Result<Vec<Loaded>, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(format!("{zone}yaml")), text).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/octodns/load_zone.py");
    let mut cmd = Command::new(python);
    cmd.arg(&script).arg(dir.path()).arg(zone);
    if enforce_order {
        cmd.arg("--enforce-order");
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    if out.status.code() == Some(3) {
        let json: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        return Err(json["refused"].as_str().unwrap_or_default().to_string());
    }
    assert!(
        out.status.success(),
        "load_zone.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut loaded = Vec::new();
    for line in stdout.lines() {
        let json: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = json["name"].as_str().unwrap().to_string();
        let rtype = json["type"].as_str().unwrap().to_string();
        let skip = not_planned(zone, &name, &rtype, &json);
        let mut values: Vec<String> = json["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        if skip.is_none() {
            let t = RecordType::parse(&rtype).unwrap();
            values = values
                .iter()
                .map(|v| canonicalize(t, v).unwrap_or_else(|e| panic!("{name} {rtype} {v:?}: {e}")))
                .collect();
            values.sort();
            values.dedup();
        }
        let ttl = json["ttl"].as_u64().unwrap() as u32;
        loaded.push(Loaded {
            record: (name, rtype, ttl, values),
            skip,
        });
    }
    Ok(loaded)
}

fn records(entries: &[DesiredEntry]) -> BTreeSet<Record> {
    entries
        .iter()
        .map(|e| {
            let ttl = e.ttl.expect("octoDNS records always have a TTL");
            (
                e.name.to_string(),
                e.rtype.to_string(),
                ttl,
                e.values.clone(),
            )
        })
        .collect()
}

/// Parses `file` with dnsplane and loads it with octoDNS, and checks that both give
/// the same records and that dnsplane names in a skip warning exactly what the
/// rule leaves out. Returns dnsplane's entries.
fn same_records(python: &Path, file: &str, zone: &str, enforce_order: bool) -> Vec<DesiredEntry> {
    let text = std::fs::read_to_string(fixtures().join(file)).unwrap();
    same_records_of(python, file, &text, zone, enforce_order)
}

/// [`same_records`] of a text.
fn same_records_of(
    python: &Path,
    file: &str,
    text: &str,
    zone: &str,
    enforce_order: bool,
) -> Vec<DesiredEntry> {
    let text = text.to_string();
    let parsed = parse(file, &text, &Name::parse(zone).unwrap());
    assert_eq!(parsed.errors, vec![], "{file}: dnsplane's errors");
    let loaded = octodns_load(python, zone, &text, enforce_order)
        .unwrap_or_else(|e| panic!("{file}: octoDNS refused it: {e}"));
    let planned: BTreeSet<Record> = loaded
        .iter()
        .filter(|l| l.skip.is_none())
        .map(|l| l.record.clone())
        .collect();
    assert_eq!(records(&parsed.entries), planned, "{file}: records");
    let skipped: BTreeSet<String> = loaded
        .iter()
        .filter(|l| l.skip.is_some())
        .map(|l| format!("{} {}", l.record.0, l.record.1))
        .collect();
    let warned: BTreeSet<String> = parsed
        .warnings
        .iter()
        .filter(|w| w.message.contains("skipped"))
        .map(|w| w.record.clone())
        .collect();
    assert_eq!(
        warned, skipped,
        "{file}: what dnsplane skips, with a warning"
    );
    parsed.entries
}

/// What `write` writes loads in octoDNS, with its default key order check, as the
/// entries written; and dnsplane reads it back as the same entries.
fn written_loads_the_same(python: &Path, zone: &str, entries: &[DesiredEntry]) {
    let (text, skipped) = write(&Name::parse(zone).unwrap(), entries);
    assert!(skipped.is_empty(), "{zone}: skipped {skipped:?}");
    let loaded = octodns_load(python, zone, &text, true)
        .unwrap_or_else(|e| panic!("{zone}: octoDNS refused what dnsplane wrote: {e}\n{text}"));
    assert!(loaded.iter().all(|l| l.skip.is_none()), "{text}");
    let loaded: BTreeSet<Record> = loaded.into_iter().map(|l| l.record).collect();
    assert_eq!(
        loaded,
        records(entries),
        "{zone}: octoDNS loads what was written\n{text}"
    );
    let back = parse("written.yaml", &text, &Name::parse(zone).unwrap());
    assert_eq!((back.errors, back.warnings), (vec![], vec![]), "{text}");
    assert_eq!(records(&back.entries), records(entries), "{text}");
}

#[test]
fn octodns_test_zones_read_as_octodns_loads_them() {
    let Some(python) = octodns_python() else {
        return;
    };
    let unit = same_records(&python, "unit.tests.yaml", "unit.tests.", true);
    assert_eq!(unit.len(), 18, "the planned records of unit.tests.");
    written_loads_the_same(&python, "unit.tests.", &unit);

    // Every record of dynamic.tests. has dynamic routing: none is planned.
    let dynamic = same_records(&python, "dynamic.tests.yaml", "dynamic.tests.", true);
    assert!(dynamic.is_empty());

    // Names written as YAML integers (`2:`, `12:`) are names all the same.
    let sub = same_records(
        &python,
        "subzone.unit.tests.yaml",
        "subzone.unit.tests.",
        true,
    );
    assert_eq!(sub.len(), 3);
    written_loads_the_same(&python, "subzone.unit.tests.", &sub);

    for (file, zone) in [
        ("hybrid/one.test.yaml", "one.test."),
        ("split/unit.tests.yaml", "unit.tests."),
    ] {
        let entries = same_records(&python, file, zone, true);
        assert_eq!(entries.len(), 1, "{file}");
        written_loads_the_same(&python, zone, &entries);
    }

    // An empty document: octoDNS loads no records; dnsplane declares nothing
    // (which its file source reads as doubt, not as "delete everything").
    assert!(
        same_records(
            &python,
            "sub.txt.unit.tests.yaml",
            "sub.txt.unit.tests.",
            true
        )
        .is_empty()
    );
}

#[test]
fn where_octodns_refuses_a_fixture() {
    let Some(python) = octodns_python() else {
        return;
    };
    // Keys out of octoDNS's order: its default (enforce_order) refuses the file;
    // dnsplane reads it, as octoDNS does with enforce_order false, and warns.
    let text = std::fs::read_to_string(fixtures().join("unordered.yaml")).unwrap();
    let refused = octodns_load(&python, "unordered.", &text, true)
        .err()
        .expect("octoDNS refuses it");
    assert!(refused.contains("keys out of order"), "{refused}");
    let entries = same_records(&python, "unordered.yaml", "unordered.", false);
    assert_eq!(entries.len(), 2);
    let parsed = parse("unordered.yaml", &text, &Name::parse("unordered.").unwrap());
    assert!(
        parsed
            .warnings
            .iter()
            .any(|w| w.message.contains("enforce_order")),
        "{:?}",
        parsed.warnings
    );

    // An invalid healthcheck protocol: octoDNS refuses the record (this fixture
    // tests that a zone can disable the validator). dnsplane has no health checks:
    // it plans the record and names the setting it leaves out.
    let file = "zone-disable-validators/zone-disable-validators-a.tests.yaml";
    let zone = "zone-disable-validators-a.tests.";
    let text = std::fs::read_to_string(fixtures().join(file)).unwrap();
    let refused = octodns_load(&python, zone, &text, true)
        .err()
        .expect("octoDNS refuses it");
    assert!(
        refused.contains("invalid healthcheck protocol"),
        "{refused}"
    );
    let parsed = parse(file, &text, &Name::parse(zone).unwrap());
    assert_eq!(parsed.errors, vec![]);
    assert_eq!(parsed.entries.len(), 1);
    assert!(
        parsed
            .warnings
            .iter()
            .any(|w| w.message.contains("octodns.healthcheck ignored")),
        "{:?}",
        parsed.warnings
    );
}

/// A name written twice: PyYAML keeps the last silently, so octoDNS loads one of the
/// two; dnsplane refuses the file rather than guess which one was meant.
#[test]
fn a_duplicate_name_octodns_resolves_silently_is_refused() {
    let Some(python) = octodns_python() else {
        return;
    };
    let text = "a:\n  type: A\n  value: 192.0.2.1\na:\n  type: A\n  value: 192.0.2.2\n";
    let loaded = octodns_load(&python, "dup.test.", text, true).expect("octoDNS loads it");
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].record.3, vec!["192.0.2.2".to_string()]);
    let parsed = parse("dup.yaml", text, &Name::parse("dup.test.").unwrap());
    assert!(parsed.entries.is_empty());
    assert_eq!(parsed.errors.len(), 1);
    assert_eq!(parsed.errors[0].location, "dup.yaml:4");
    assert!(
        parsed.errors[0]
            .message
            .contains("duplicate key \"a\" (first at line 1)"),
        "{}",
        parsed.errors[0]
    );
}

fn entry(name: &str, rtype: RecordType, ttl: u32, values: &[&str]) -> DesiredEntry {
    let mut values: Vec<String> = values
        .iter()
        .map(|v| canonicalize(rtype, v).unwrap())
        .collect();
    values.sort();
    DesiredEntry {
        name: Name::parse(name).unwrap(),
        rtype,
        ttl: Some(ttl),
        values,
        set: Default::default(),
        properties: Vec::new(),
        labels: Default::default(),
        origin: Origin {
            source: "test".into(),
            location: "test".into(),
            resource: "test".into(),
        },
    }
}

#[test]
fn every_modelled_type_written_loads_in_octodns() {
    let Some(python) = octodns_python() else {
        return;
    };
    use RecordType::*;
    let long = "k".repeat(300);
    let entries = vec![
        entry(
            "example.com.",
            Mx,
            300,
            &["10 mx1.example.com.", "20 mx2.example.com."],
        ),
        entry(
            "example.com.",
            Txt,
            300,
            &["v=spf1 -all", "\"google-site-verification=abc\""],
        ),
        entry(
            "example.com.",
            Caa,
            3600,
            &[
                "0 issue \"letsencrypt.org\"",
                "128 iodef \"mailto:sec@example.com\"",
            ],
        ),
        entry(
            "example.com.",
            Https,
            60,
            &["1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.1,192.0.2.2"],
        ),
        entry("*.example.com.", A, 60, &["192.0.2.9"]),
        entry("2.example.com.", A, 60, &["192.0.2.2"]),
        entry("12.example.com.", Aaaa, 60, &["2001:db8::12"]),
        entry("www2.example.com.", Cname, 60, &["www.example.com."]),
        entry("www10.example.com.", Cname, 60, &["www.example.com."]),
        entry(
            "_sip._tcp.example.com.",
            Srv,
            60,
            &["10 5 5060 sip.example.com.", "20 0 5060 sip2.example.com."],
        ),
        entry(
            "_sip._udp.example.com.",
            Naptr,
            60,
            &["100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.com."],
        ),
        entry(
            "dkim._domainkey.example.com.",
            Txt,
            60,
            &["v=DKIM1; k=rsa; p=MIGf", &long],
        ),
        entry(
            "quotes.example.com.",
            Txt,
            60,
            &["\"\\\"quoted\\\" and back\\\\slash\""],
        ),
        entry("empty.example.com.", Txt, 60, &["\"\""]),
        entry("tab.example.com.", Txt, 60, &["\"a\\009tab; and \\127\""]),
        entry(
            "sub.example.com.",
            Ns,
            172800,
            &["ns1.example.net.", "ns2.example.net."],
        ),
        entry(
            "sub.example.com.",
            Ds,
            3600,
            &[&format!("12345 13 2 {}", "ab".repeat(32))],
        ),
        entry("svc.example.com.", Svcb, 60, &["0 pool.example.net."]),
        entry(
            "ssh.example.com.",
            Sshfp,
            60,
            &[&format!("4 2 {}", "cd".repeat(32))],
        ),
        entry(
            "_443._tcp.www.example.com.",
            Tlsa,
            60,
            &[&format!("3 1 1 {}", "ef".repeat(32))],
        ),
        entry(
            "1.2.0.192.in-addr.example.com.",
            Ptr,
            60,
            &["host.example.com."],
        ),
        entry("Upper.example.com.", A, 0, &["192.0.2.10"]),
    ];
    written_loads_the_same(&python, "example.com.", &entries);
}

/// An unquoted name PyYAML reads as something other than its text (`yes` is True,
/// `010` is 8, `1.10` is 1.1) means another name to octoDNS: dnsplane refuses
/// exactly those, asking for quotes, and reads every other name as octoDNS does.
/// What dnsplane writes quotes them, so octoDNS loads the names written. (No `0` or
/// `1` here: in Python's dict they are the same key as False and True.)
#[test]
fn unquoted_names_pyyaml_reads_otherwise() {
    let Some(python) = octodns_python() else {
        return;
    };
    let names = [
        "yes", "No", "on", "OFF", "true", "y", "n", "010", "0x1f", "1_000", "0b11", "2", "12",
        "1.5", "1.10", "10.0", "1.2.3", "www", "a1", "1a", "e5", "1.0e+5",
    ];
    let zone = "names.test.";
    let mut text = String::from("---\n");
    for (i, name) in names.iter().enumerate() {
        text.push_str(&format!("{name}: {{type: A, value: 192.0.2.{}}}\n", i + 1));
    }
    let loaded = octodns_load(&python, zone, &text, false).expect("octoDNS loads it");
    let octodns: BTreeSet<(String, String)> = loaded
        .iter()
        .map(|l| (l.record.0.clone(), l.record.3[0].clone()))
        .collect();
    let parsed = parse("names.yaml", &text, &Name::parse(zone).unwrap());
    let dnsplane: BTreeSet<(String, String)> = parsed
        .entries
        .iter()
        .map(|e| (e.name.to_string(), e.values[0].clone()))
        .collect();
    let refused: BTreeSet<String> = parsed
        .errors
        .iter()
        .map(|e| {
            assert!(e.message.contains("quote it"), "{e}");
            e.record.trim_end_matches(" A").to_string()
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let value = format!("192.0.2.{}", i + 1);
        let as_written = (
            format!("{}.{zone}", name.to_ascii_lowercase()),
            value.clone(),
        );
        let octodns_kept = octodns.contains(&as_written);
        if refused.contains(*name) {
            assert!(
                !octodns_kept,
                "{name}: refused, but octoDNS reads it as written"
            );
        } else {
            assert!(
                octodns_kept,
                "{name}: octoDNS reads another name: {octodns:?}"
            );
            assert!(dnsplane.contains(&as_written), "{name}: {dnsplane:?}");
        }
    }
    assert_eq!(
        refused.len(),
        10,
        "yes No on OFF 010 0x1f 1_000 0b11 1.10 1.0e+5 and nothing else (`true` is True, the same name): {refused:?}"
    );

    let entries: Vec<DesiredEntry> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| Name::parse(&format!("{n}.{zone}")).is_ok())
        .map(|(i, n)| {
            entry(
                &format!("{n}.{zone}"),
                RecordType::A,
                60,
                &[&format!("192.0.2.{}", i + 1)],
            )
        })
        .collect();
    written_loads_the_same(&python, zone, &entries);
}

/// The spellings octoDNS accepts that its test zones do not show, read by both.
const SPELLINGS: &str = r#"---
'':
- type: CAA
  values:
  - {tag: issue, value: 'ca.example.net; account=1'}
  - {flags: 128, tag: iodef, value: 'mailto:x@example.com'}
- type: TXT
  values:
  - '"pre" "split" "form"'
  - 'ends with a backslash \'
  - 'semicolon after a space ;here and \; escaped'
  - ''
  - 'exactly-255-ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ'
  - 'two-hundred-fifty-six-YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY'
_443._tcp:
  type: TLSA
  value:
    certificate_association_data: ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB
    certificate_usage: 3
    matching_type: 1
    selector: 1
ds:
  type: DS
  values:
  - {algorithm: 1, flags: 60485, protocol: 5, public_key: 2BB183AF5F22588179A53B0A98631FAD1A292118}
  - {algorithm: 13, digest: 2bb183af5f22588179a53b0a98631fad1a292118, digest_type: 1, key_tag: 60485}
mx:
  type: MX
  value: {priority: 10, value: mx.example.com.}
naptr:
  type: NAPTR
  value: {flags: s, order: 10, preference: 20, regexp: '!^(.*)$!sip:\1@example.com!', replacement: ., service: 'E2U+sip'}
ns-list:
  type: NS
  values: ns1.example.net.
svcb:
  type: SVCB
  values:
  - {svcpriority: 0, targetname: pool.example.net.}
  - svcparams: {alpn: [h2, h3], ipv6hint: ['2001:db8::1'], mandatory: [alpn], port: '8443'}
    svcpriority: 1
    targetname: .
www:
  type: A
  value: [192.0.2.2, 192.0.2.1]
"#;

#[test]
fn the_spellings_octodns_accepts_read_as_octodns_loads_them() {
    let Some(python) = octodns_python() else {
        return;
    };
    let entries = same_records_of(&python, "spellings.yaml", SPELLINGS, "example.com.", true);
    assert_eq!(entries.len(), 9);
    written_loads_the_same(&python, "example.com.", &entries);
}

/// Many TXT values of random printable ASCII (`;` escaped as octoDNS requires,
/// leading quotes, `" "`, backslashes and lengths around 255 included) mean the same
/// data to dnsplane as to octoDNS, and what dnsplane writes of them loads back.
#[test]
fn random_txt_values_mean_the_same_to_both() {
    let Some(python) = octodns_python() else {
        return;
    };
    let mut seed: u64 = 0x5eed_0c70_d115;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let alphabet = b"ab \"\\;=-_.:/+AZ09\t";
    let mut text = String::from("---\n");
    for i in 0..300 {
        let len = match next(4) {
            0 => next(8),
            1 => 250 + next(12),
            _ => next(600),
        };
        let mut value: Vec<u8> = (0..len)
            .map(|_| alphabet[next(alphabet.len() as u64) as usize])
            .collect();
        if next(5) == 0 {
            value.insert(0, b'"');
        }
        // A backslash right before a ';' would be octoDNS's refused `\\;`.
        let mut raw = String::from_utf8(value).unwrap().replace("\\;", ";");
        while raw.contains("\\;") {
            raw = raw.replace("\\;", ";");
        }
        let escaped = raw.replace(';', "\\;");
        let quoted = format!(
            "\"{}\"",
            escaped
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\t', "\\t")
        );
        text.push_str(&format!("t{i}:\n  type: TXT\n  value: {quoted}\n"));
    }
    let entries = same_records_of(&python, "random-txt.yaml", &text, "txt.test.", false);
    assert_eq!(entries.len(), 300);
    let (_, skipped) = write(&Name::parse("txt.test.").unwrap(), &entries);
    let writable: Vec<DesiredEntry> = entries
        .iter()
        .filter(|e| !skipped.iter().any(|s| s.name == e.name))
        .cloned()
        .collect();
    assert!(writable.len() > 200, "{} of 300 writable", writable.len());
    written_loads_the_same(&python, "txt.test.", &writable);
}
