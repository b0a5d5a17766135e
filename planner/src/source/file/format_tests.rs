//! Zone files and octoDNS YAML in the file source: the same readiness, last-good and
//! error positions as DNSEndpoint manifests (issue 31). Never delete on doubt holds
//! whatever the format: a broken file keeps what it had, one broken record keeps its
//! own last good version, an emptied file or one of only comments is not "no records".
use super::*;
use crate::source::testing::entry;
use std::fs;

/// (name, type, values) of each entry, sorted (files give them in their own order).
fn keys(entries: &[crate::source::DesiredEntry]) -> Vec<(String, &'static str, Vec<String>)> {
    let mut k = crate::source::testing::keys(entries);
    k.sort();
    k
}

/// `src`'s load, which must have no errors.
fn clean_load(src: &mut FileSource) -> Snapshot {
    let loaded = src.load().unwrap();
    assert_eq!(loaded.errors, vec![], "{:?}", loaded.errors);
    loaded
}

/// The first of `errors` is located in the file at `path`.
fn assert_first_error_in(errors: &[crate::source::SourceError], path: &std::path::Path) {
    let at = format!("{}:", path.display());
    assert!(errors[0].location.starts_with(&at), "{}", errors[0]);
}

const ZONE_FILE: &str = "$ORIGIN example.com.\n$TTL 300\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n@ IN NS ns1.example.net.\nwww IN A 192.0.2.10\napi 60 IN A 192.0.2.11\n    IN A 192.0.2.12\n";

const OCTODNS: &str = "---\n'':\n  type: MX\n  value:\n    exchange: mail.example.com.\n    preference: 10\napi:\n  ttl: 60\n  type: A\n  values:\n  - 192.0.2.11\n  - 192.0.2.12\nwww:\n  type: A\n  value: 192.0.2.10\n";

#[test]
fn auto_reads_zone_files_beside_manifests_and_keeps_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("example.com.zone");
    fs::write(&path, ZONE_FILE).unwrap();
    let mut src = FileSource::new([dir.path()]);
    let first = clean_load(&mut src);
    assert_eq!(
        keys(&first.entries),
        vec![
            entry("api.example.com.", "A", &["192.0.2.11", "192.0.2.12"]),
            entry("www.example.com.", "A", &["192.0.2.10"]),
        ],
        "the SOA and apex NS are the provider's: never desired"
    );
    let ttl = |name: &str| {
        first
            .entries
            .iter()
            .find(|e| e.name.as_str() == name)
            .and_then(|e| e.ttl)
    };
    assert_eq!(ttl("api.example.com."), Some(60));
    assert_eq!(ttl("www.example.com."), Some(300));

    // Unbalanced parentheses: the whole file keeps its last good records, the error
    // names the file and line.
    fs::write(
        &path,
        format!("{ZONE_FILE}mail IN MX ( 10 mx.example.net.\n"),
    )
    .unwrap();
    let broken = src.load().unwrap();
    assert_eq!(broken.entries, first.entries, "nothing accepted is lost");
    assert!(!broken.errors.is_empty());
    assert_first_error_in(&broken.errors, &path);
    assert!(
        broken.errors.iter().any(|e| e
            .message
            .contains("keeping this file's 2 last accepted record(s)")),
        "{:?}",
        broken.errors
    );

    // One bad value: only that record keeps its last good version.
    fs::write(
        &path,
        ZONE_FILE
            .replace("www IN A 192.0.2.10", "www IN A 300.1.1.1")
            .replace("192.0.2.12", "192.0.2.13"),
    )
    .unwrap();
    let one = src.load().unwrap();
    assert_eq!(
        keys(&one.entries),
        vec![
            entry("api.example.com.", "A", &["192.0.2.11", "192.0.2.13"]),
            entry("www.example.com.", "A", &["192.0.2.10"]),
        ]
    );
    assert_eq!(one.errors.len(), 1, "{:?}", one.errors);
    assert!(one.errors[0].location.contains(":5"), "{}", one.errors[0]);

    // Emptied, or only comments: doubt, not deletion.
    for doubt in ["", "; all gone?\n"] {
        fs::write(&path, doubt).unwrap();
        let kept = src.load().unwrap();
        assert_eq!(kept.entries.len(), 2, "{doubt:?}: {:?}", kept.errors);
        assert!(!kept.errors.is_empty(), "{doubt:?}");
    }
}

#[test]
fn octodns_files_are_read_when_asked_for_and_named_for_their_zone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("example.com.yaml");
    fs::write(&path, OCTODNS).unwrap();
    // `auto` reads YAML as DNSEndpoint manifests: none here, so nothing and not ready.
    let auto = FileSource::new([dir.path()]).load().unwrap();
    assert!(auto.entries.is_empty());
    let mut src = FileSource::new([dir.path()]).with_format(FileFormat::Octodns);
    let first = clean_load(&mut src);
    assert_eq!(
        keys(&first.entries),
        vec![
            entry("api.example.com.", "A", &["192.0.2.11", "192.0.2.12"]),
            entry("example.com.", "MX", &["10 mail.example.com."]),
            entry("www.example.com.", "A", &["192.0.2.10"]),
        ]
    );
    // A YAML error keeps the file's records and names its line.
    fs::write(&path, format!("{OCTODNS}www2: [unclosed\n")).unwrap();
    let broken = src.load().unwrap();
    assert_eq!(broken.entries, first.entries);
    assert_first_error_in(&broken.errors, &path);
    // `{}` says "no records" explicitly; an empty file does not.
    fs::write(&path, "").unwrap();
    assert_eq!(src.load().unwrap().entries.len(), 3);
    fs::write(&path, "--- {}\n").unwrap();
    let none = src.load().unwrap();
    assert!(none.entries.is_empty(), "{:?}", none.errors);
    assert_eq!(none.errors, vec![]);
}
