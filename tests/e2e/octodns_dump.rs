//! `dnsplane import --format octodns` checked against what we did not write: on a real
//! PowerDNS zone, octoDNS's own `octodns-dump` (through octodns-powerdns) and dnsplane's
//! import produce the same records, both files loaded by octoDNS's YamlProvider
//! (`planner/tests/octodns/load_zone.py`). What dnsplane leaves out on purpose is
//! taken out of octoDNS's side by name, and checked to be exactly that: the record
//! external-dns owns and its registry mark, and the apex NS.
//!
//! And `export --observed --format zone` passes BIND's `named-checkzone`, which reads
//! from it exactly the records PowerDNS serves by AXFR (the SOA, a placeholder, and
//! external-dns's mark, left out by design, aside).
use crate::dns_as_code::{LIVE_EXTERNAL, patch_zone, pdns_with_data};
use crate::stack::pdns_of;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (name, type, ttl, sorted values) of every record octoDNS loads from `dir`'s
/// `ZONE.yaml`.
fn load(python: &Path, dir: &Path, zone: &str) -> BTreeSet<(String, String, u64, Vec<String>)> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../planner/tests/octodns/load_zone.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(dir)
        .arg(zone)
        .output()
        .expect("run load_zone.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "octoDNS refused {}: {stdout}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            let mut values: Vec<String> = v["values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|x| x.as_str().expect("value").to_string())
                .collect();
            values.sort();
            (
                v["name"].as_str().expect("name").to_string(),
                v["type"].as_str().expect("type").to_string(),
                v["ttl"].as_u64().expect("ttl"),
                values,
            )
        })
        .collect()
}

#[test]
fn import_as_octodns_equals_octodns_dump_of_the_same_powerdns_zone() {
    let Some(python) = dnsplane_testing::tool("DNSPLANE_OCTODNS_PYTHON", "octodns-python") else {
        return;
    };
    let dump_bin: PathBuf = python.with_file_name("octodns-dump");
    let Some(tools) = Tools::find() else { return };
    let Some(server) = pdns_with_data() else {
        return;
    };
    let pdns = pdns_of(&server);
    let zone = server.zone().to_string();
    let work = tempfile::tempdir().expect("dir");
    let config = work.path().join("octodns.yaml");
    let key = std::fs::read_to_string(&pdns.api_key_file).expect("api key");
    std::fs::write(
        &config,
        format!(
            "providers:\n  pdns:\n    class: octodns_powerdns.PowerDnsProvider\n    host: 127.0.0.1\n    port: {}\n    api_key: {}\n    scheme: http\n  config:\n    class: octodns.provider.yaml.YamlProvider\n    directory: ./config\nzones:\n  {zone}:\n    sources: [pdns]\n    targets: [config]\n",
            pdns.api_port,
            key.trim()
        ),
    )
    .expect("octodns.yaml");
    let dump = work.path().join("dump");
    let out = Command::new(&dump_bin)
        .arg("--config-file")
        .arg(&config)
        .arg("--output-dir")
        .arg(&dump)
        .arg(&zone)
        .arg("pdns")
        .current_dir(work.path())
        .output()
        .expect("run octodns-dump");
    assert!(
        out.status.success(),
        "octodns-dump: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let s = RealStack::start(server, tools, Options::default());
    let imported = work.path().join("imported");
    let (code, text) = s.cli(&[
        "import",
        &zone,
        "--out",
        imported.to_str().expect("utf8"),
        "--format",
        "octodns",
    ]);
    assert_eq!(code, 0, "{text}");

    let theirs = load(&python, &dump, &zone);
    let ours = load(&python, &imported, &zone);
    let left_out: BTreeSet<_> = theirs.difference(&ours).cloned().collect();
    let names: BTreeSet<(String, String)> = left_out
        .iter()
        .map(|(n, t, _, _)| (n.clone(), t.clone()))
        .collect();
    let mut expected: BTreeSet<(String, String)> = LIVE_EXTERNAL
        .iter()
        .map(|(n, t)| (format!("{n}.{zone}"), t.to_string()))
        .collect();
    expected.insert((zone.clone(), "NS".to_string()));
    assert_eq!(
        names, expected,
        "dnsplane leaves out exactly external-dns's record, its mark and the apex NS"
    );
    assert!(
        ours.difference(&theirs).next().is_none(),
        "records only dnsplane's import has: {:?}",
        ours.difference(&theirs).collect::<Vec<_>>()
    );
    assert!(ours.len() >= 10, "{ours:?}");
}

#[test]
fn export_as_a_zone_file_passes_named_checkzone() {
    let Some(checkzone) = dnsplane_testing::tool("DNSPLANE_NAMED_CHECKZONE", "named-checkzone")
    else {
        return;
    };
    let Some(tools) = Tools::find() else { return };
    let Some(server) = pdns_with_data() else {
        return;
    };
    let pdns = pdns_of(&server);
    let zone = server.zone().to_string();
    // The zone's own name server needs an address, or BIND refuses the zone (as it
    // would refuse PowerDNS's zone as it stands).
    let glue = serde_json::json!({"rrsets": [{
        "name": format!("ns1.{zone}"), "type": "A", "ttl": 300, "changetype": "REPLACE",
        "records": [{"content": "192.0.2.53", "disabled": false}],
    }]});
    patch_zone(pdns, &zone, &glue);
    let s = RealStack::start(server, tools, Options::default());
    let (code, text) = s.cli(&["export", &zone, "--format", "zone", "--observed"]);
    assert_eq!(code, 0, "{text}");
    let work = tempfile::tempdir().expect("dir");
    let file = work.path().join("zone");
    std::fs::write(&file, &text).expect("write");
    let out = Command::new(&checkzone)
        .args(["-i", "local", "-D", "-o", "-"])
        .arg(zone.trim_end_matches('.'))
        .arg(&file)
        .output()
        .expect("named-checkzone");
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "named-checkzone refused:\n{text}\n---\n{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // BIND reads from the export exactly what PowerDNS serves by AXFR, SOA aside.
    let normal = |l: &str| -> Option<String> {
        let f: Vec<&str> = l.split_whitespace().collect();
        let f: Vec<&str> = f.into_iter().filter(|w| *w != "IN").collect();
        (f.len() >= 4 && f[2] != "SOA").then(|| f.join(" ").to_ascii_lowercase())
    };
    let bind: BTreeSet<String> = printed.lines().filter_map(normal).collect();
    // Ownership marks are left out of an export, by design: external-dns's here.
    let served: BTreeSet<String> = s
        .axfr()
        .iter()
        .filter_map(|l| normal(l))
        .filter(|l| !l.contains("heritage=external-dns"))
        .collect();
    assert_eq!(bind, served, "export:\n{text}");
    assert!(bind.iter().any(|l| l.contains("192.0.2.10")), "{bind:?}");
}
