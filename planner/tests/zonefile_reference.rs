//! Zone files checked against the outside reference: for every fixture (octodns-bind's
//! test zones, dnsplane's own hard cases, a generated 100k-record zone), dnsplane's
//! parser reads the same (name, type, TTL, values) as BIND's `named-checkzone -D`
//! prints (`-i local`), and what dnsplane writes passes `named-checkzone` and reads back the same.
//!
//! `named-checkzone` is found through `$DNSPLANE_NAMED_CHECKZONE` or `PATH`; when it is
//! missing the tests skip with a printed reason, or fail under
//! `DNSPLANE_REQUIRE_SERVERS=1`.
use dnsplane_common::{Name, RecordType, rdata::canonicalize};
use dnsplane_planner::source::DesiredEntry;
use dnsplane_planner::source::zonefile::{self, Parsed};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/generated_zone.rs"]
mod generated_zone;
use generated_zone::generated_zone;

/// (name, type) → (TTL, values), every part canonical.
type Sets = BTreeMap<(String, String), (u32, BTreeSet<String>)>;

fn checkzone() -> Option<PathBuf> {
    let found = std::env::var_os("DNSPLANE_NAMED_CHECKZONE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("named-checkzone"))
                .find(|p| p.is_file())
        });
    if found.is_none() {
        let why = "named-checkzone (BIND) is not installed: set DNSPLANE_NAMED_CHECKZONE or install bind9-utils";
        assert!(
            std::env::var("DNSPLANE_REQUIRE_SERVERS").as_deref() != Ok("1"),
            "{why} (DNSPLANE_REQUIRE_SERVERS=1)"
        );
        eprintln!("skipping: {why}");
    }
    found
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zonefiles")
}

/// What BIND reads from `file` for `zone`: its canonical records, or why it refused.
fn bind(
    tool: &Path,
    zone: &str,
    file: &Path,
) -> Result<Vec<(String, u32, String, String)>, String> {
    let out = Command::new(tool)
        // `-i local`: the zone's integrity checked for its own names only; names
        // outside it would be looked up in the DNS, which a test cannot rely on.
        .args(["-i", "local", "-D", "-o", "-", zone])
        .arg(file)
        .output()
        .expect("run named-checkzone");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout));
    }
    let text = String::from_utf8(out.stdout).expect("named-checkzone prints text");
    let mut records = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        // One RR a line: name, TTL, class, type, data (absolute names, explicit TTL).
        let mut rest = line;
        let mut field = || {
            let t = rest.trim_start();
            let end = t.find(char::is_whitespace).unwrap_or(t.len());
            rest = &t[end..];
            t[..end].to_string()
        };
        let (name, ttl, class, rtype) = (field(), field(), field(), field());
        assert_eq!(class, "IN", "{line}");
        records.push((
            name,
            ttl.parse().expect("a TTL"),
            rtype,
            rest.trim().to_string(),
        ));
    }
    Ok(records)
}

/// What BIND read, as dnsplane's entries would be: SOA, the apex NS and the types
/// dnsplane does not model dropped (those returned apart), values canonicalised; an
/// RRSet with a value dnsplane refuses is left out and returned apart too.
struct FromBind {
    sets: Sets,
    unmodelled: BTreeSet<(String, String)>,
    refused: BTreeSet<(String, String)>,
}

fn bind_sets(zone: &str, records: &[(String, u32, String, String)]) -> FromBind {
    let apex = Name::parse(zone).unwrap();
    let mut sets = Sets::new();
    let mut unmodelled = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for (name, ttl, rtype, data) in records {
        let name = Name::parse(name).unwrap();
        let Ok(t) = RecordType::parse(rtype) else {
            if rtype != "SOA" {
                unmodelled.insert((name.to_string(), rtype.clone()));
            }
            continue;
        };
        if t == RecordType::Ns && name == apex {
            continue;
        }
        let Ok(value) = canonicalize(t, data) else {
            refused.insert((name.to_string(), t.to_string()));
            continue;
        };
        let set = sets
            .entry((name.to_string(), t.to_string()))
            .or_insert_with(|| (*ttl, BTreeSet::new()));
        assert_eq!(
            set.0, *ttl,
            "BIND printed one RRSet with two TTLs: {name} {rtype}"
        );
        set.1.insert(value);
    }
    for key in &refused {
        sets.remove(key);
    }
    FromBind {
        sets,
        unmodelled,
        refused,
    }
}

fn dnsplane_sets(entries: &[DesiredEntry]) -> Sets {
    let mut sets = Sets::new();
    for e in entries {
        let values: BTreeSet<String> = e.values.iter().cloned().collect();
        assert_eq!(values.len(), e.values.len(), "values deduplicated");
        let old = sets.insert(
            (e.name.to_string(), e.rtype.to_string()),
            (e.ttl.expect("a zone file always gives a TTL"), values),
        );
        assert!(old.is_none(), "one entry per RRSet: {} {}", e.name, e.rtype);
    }
    sets
}

fn read(path: &Path, zone: &str) -> (String, Parsed) {
    let text = std::fs::read_to_string(path).unwrap();
    let origin = Name::parse(zone).unwrap();
    let parsed = zonefile::parse(&path.display().to_string(), &text, Some(&origin));
    (text, parsed)
}

/// Unmodelled records dnsplane warned about, as (name, TYPE).
fn warned(parsed: &Parsed) -> BTreeSet<(String, String)> {
    parsed
        .warnings
        .iter()
        .filter(|w| w.message.contains("not one dnsplane manages"))
        .map(|w| {
            let (name, rtype) = w.record.rsplit_once(' ').unwrap();
            (name.to_string(), rtype.to_string())
        })
        .collect()
}

/// Writes `entries` as a zone file, checks BIND loads it and reads back the same.
fn check_written(tool: &Path, zone: &str, entries: &[DesiredEntry], dir: &Path) {
    let written = zonefile::write(&Name::parse(zone).unwrap(), entries, &[]);
    assert!(written.skipped.is_empty(), "{:?}", written.skipped);
    let path = dir.join(format!("{zone}written"));
    std::fs::write(&path, &written.text).unwrap();
    let records = bind(tool, zone, &path).unwrap_or_else(|e| {
        panic!(
            "BIND refuses what dnsplane wrote for {zone}: {e}\n{}",
            written.text
        )
    });
    assert_eq!(
        bind_sets(zone, &records).sets,
        dnsplane_sets(entries),
        "{zone} written"
    );
    let (_, again) = read(&path, zone);
    assert!(again.errors.is_empty(), "{:#?}", again.errors);
    assert_eq!(dnsplane_sets(&again.entries), dnsplane_sets(entries));
}

/// A fixture BIND reads as it is: dnsplane reads the same records.
fn same_as_bind(tool: &Path, file: &Path, zone: &str) {
    let records = bind(tool, zone, file).unwrap_or_else(|e| panic!("BIND refuses {file:?}: {e}"));
    let want = bind_sets(zone, &records);
    assert!(want.refused.is_empty(), "{file:?}: {:?}", want.refused);
    let (_, parsed) = read(file, zone);
    assert!(parsed.errors.is_empty(), "{file:?}: {:#?}", parsed.errors);
    assert_eq!(dnsplane_sets(&parsed.entries), want.sets, "{file:?}");
    assert_eq!(
        warned(&parsed),
        want.unmodelled,
        "{file:?}: unmodelled types warned"
    );
    let dir = tempfile::tempdir().unwrap();
    check_written(tool, zone, &parsed.entries, dir.path());
}

#[test]
fn fixtures_read_as_bind_reads_them() {
    let Some(tool) = checkzone() else { return };
    let ob = fixtures().join("octodns-bind");
    for (file, zone) in [
        ("2.0.192.in-addr.arpa.", "2.0.192.in-addr.arpa."),
        ("db.exxampled.com", "exxampled.com."),
        ("db.xn--fa-hia.de.", "xn--fa-hia.de."),
    ] {
        same_as_bind(&tool, &ob.join(file), zone);
    }
    for (file, zone) in [
        ("hard.test.zone", "hard.test."),
        ("ttl.test.zone", "ttl.test."),
    ] {
        same_as_bind(&tool, &fixtures().join("hard").join(file), zone);
    }
}

/// BIND refuses a fixture, and the reason is not one dnsplane shares: BIND checks the
/// whole zone, apex NS included, while dnsplane reads the records a file declares and
/// leaves SOA and the apex NS to the provider. The records themselves are still
/// compared: BIND reads a copy with `fix` applied (`extra` records added, lines
/// holding `drop` removed); `rejected` are records dnsplane is stricter about.
struct Refused<'a> {
    file: &'a str,
    zone: &'a str,
    /// What BIND says when it refuses the fixture as it is.
    because: &'a str,
    extra: &'a str,
    drop: Option<&'a str>,
    rejected: &'a [(&'a str, &'a str)],
}

#[test]
fn fixtures_bind_refuses() {
    let Some(tool) = checkzone() else { return };
    let ob = fixtures().join("octodns-bind");
    let dir = tempfile::tempdir().unwrap();
    let glue = "ns1 3600 IN A 192.0.2.1\nns2 3600 IN A 192.0.2.2\n";
    let cases = [
        // The apex and delegation NS name in-zone servers with no address records:
        // a check of the zone's NS, which dnsplane leaves to the provider.
        Refused {
            file: "invalid.records.tst",
            zone: "invalid.records.",
            because: "has no address records",
            extra: glue,
            drop: None,
            rejected: &[],
        },
        Refused {
            file: "ext.unit.tests.extension",
            zone: "ext.unit.tests.",
            because: "has no address records",
            extra: glue,
            drop: None,
            rejected: &[],
        },
        // A DS at the apex belongs in the parent zone: both refuse it (dnsplane that
        // RRSet only). dnsplane also refuses a TLSA whose SHA-256 digest (matching
        // type 1) is 16 octets, which BIND loads. Its NS need glue, as above.
        Refused {
            file: "unit.tests.tst",
            zone: "unit.tests.",
            because: "DS record at top of zone",
            extra: glue,
            drop: Some("@                 IN DS"),
            rejected: &[("unit.tests.", "DS"), ("_25._tcp.mx1.unit.tests.", "TLSA")],
        },
    ];
    for case in cases {
        let path = ob.join(case.file);
        let refused = bind(&tool, case.zone, &path).expect_err(case.file);
        assert!(refused.contains(case.because), "{}: {refused}", case.file);
        let (text, parsed) = read(&path, case.zone);
        let mut rejected: Vec<(String, String)> = parsed
            .errors
            .iter()
            .map(|e| {
                let (n, t) = e.record.rsplit_once(' ').unwrap();
                (n.to_string(), t.to_string())
            })
            .collect();
        rejected.sort();
        let mut want: Vec<(String, String)> = case
            .rejected
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        want.sort();
        assert_eq!(rejected, want, "{}: {:#?}", case.file, parsed.errors);
        for e in &parsed.errors {
            assert!(e.location.starts_with(&path.display().to_string()), "{e}");
        }
        let mut fixed: String = text
            .lines()
            .filter(|l| case.drop.is_none_or(|d| !l.starts_with(d)))
            .map(|l| format!("{l}\n"))
            .collect();
        fixed.push_str(case.extra);
        let copy = dir.path().join(case.file);
        std::fs::write(&copy, fixed).unwrap();
        let records =
            bind(&tool, case.zone, &copy).unwrap_or_else(|e| panic!("{}: {e}", case.file));
        let FromBind {
            sets: mut want,
            unmodelled,
            refused,
        } = bind_sets(case.zone, &records);
        // What dnsplane refuses of what BIND reads is named in the case.
        for key in &refused {
            assert!(
                case.rejected
                    .iter()
                    .any(|(n, t)| (*n, *t) == (key.0.as_str(), key.1.as_str())),
                "{}: dnsplane refuses {key:?}, which BIND reads",
                case.file
            );
        }
        let apex = case.zone.trim_start_matches('.');
        for n in ["ns1", "ns2"]
            .into_iter()
            .filter(|_| !case.extra.is_empty())
        {
            want.remove(&(format!("{n}.{apex}"), "A".into()));
        }
        for (n, t) in case.rejected {
            want.remove(&(n.to_string(), t.to_string()));
        }
        assert_eq!(dnsplane_sets(&parsed.entries), want, "{}", case.file);
        assert_eq!(warned(&parsed), unmodelled, "{}", case.file);
    }

    // A zone of only a SOA: BIND refuses it for want of NS; dnsplane reads a file that
    // declares no record (the provider owns SOA and NS).
    let path = ob.join("invalid.zone.tst");
    let refused = bind(&tool, "invalid.zone.", &path).expect_err("invalid.zone");
    assert!(refused.contains("has no NS records"), "{refused}");
    let (_, parsed) = read(&path, "invalid.zone.");
    assert!(
        parsed.entries.is_empty() && parsed.errors.is_empty(),
        "{:#?}",
        parsed.errors
    );
}

#[test]
fn syntax_bind_refuses_dnsplane_refuses() {
    let Some(tool) = checkzone() else { return };
    let dir = tempfile::tempdir().unwrap();
    let head = "$TTL 300\n@ SOA ns1.example.net. h.example.net. 1 2 3 4 5\n@ NS ns1.example.net.\n";
    for (i, body) in [
        "a A ( 192.0.2.1\n",
        "a A 192.0.2.1 )\n",
        "a TXT \"open\nb A 192.0.2.1\n",
        "$INCLUDE missing.zone\n",
        "$FOO x\n",
        "a FOO 1\n",
        "a 1h30 A 192.0.2.1\n",
        "$TTL 1x\n",
        "  A 192.0.2.1\n",
    ]
    .into_iter()
    .enumerate()
    {
        let text = if body.starts_with("  ") {
            body.to_string()
        } else {
            format!("{head}{body}")
        };
        let path = dir.path().join(format!("bad{i}.zone"));
        std::fs::write(&path, &text).unwrap();
        assert!(
            bind(&tool, "example.com.", &path).is_err(),
            "BIND reads {text:?}"
        );
        let (_, parsed) = read(&path, "example.com.");
        assert!(parsed.entries.is_empty(), "{text:?}");
        let e = parsed
            .errors
            .last()
            .unwrap_or_else(|| panic!("{text:?}: no error"));
        let location = e.location.rsplit(':').take(2).collect::<Vec<_>>();
        assert!(
            location.len() == 2 && location.iter().all(|p| p.parse::<usize>().is_ok()),
            "{text:?}: {e} names no line and column"
        );
    }
}

#[test]
fn a_generated_100k_record_zone_reads_as_bind_reads_it() {
    let Some(tool) = checkzone() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gen.test.zone");
    std::fs::write(&path, generated_zone(100_000)).unwrap();
    let records = bind(&tool, "gen.test.", &path).unwrap_or_else(|e| panic!("{e}"));
    assert!(records.len() >= 100_000, "{}", records.len());
    let FromBind {
        sets: want,
        unmodelled,
        refused,
    } = bind_sets("gen.test.", &records);
    assert!(unmodelled.is_empty() && refused.is_empty());
    let (_, parsed) = read(&path, "gen.test.");
    assert!(
        parsed.errors.is_empty(),
        "{:#?}",
        &parsed.errors[..parsed.errors.len().min(5)]
    );
    assert_eq!(dnsplane_sets(&parsed.entries), want);
    check_written(&tool, "gen.test.", &parsed.entries, dir.path());
}
