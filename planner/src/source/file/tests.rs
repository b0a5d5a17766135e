use super::*;
use crate::source::testing::{entry, keys};
use dnsplane_common::RecordType;
use std::fs;
use std::path::Path;

pub(super) fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

pub(super) fn endpoint_file(endpoints: &[(&str, &str, &str)]) -> String {
    let mut s = String::from(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: web\nspec:\n  endpoints:\n",
    );
    for (name, rtype, target) in endpoints {
        s.push_str(&format!("    - dnsName: {name}\n      recordType: {rtype}\n      targets:\n        - \"{target}\"\n"));
    }
    s
}

#[test]
fn a_file_that_stops_parsing_keeps_its_last_good_entries() {
    let dir = tempfile::tempdir().unwrap();
    let good = endpoint_file(&[
        ("app.example.com", "A", "192.0.2.10"),
        ("www.example.com", "A", "192.0.2.20"),
    ]);
    let path = write(dir.path(), "web.yaml", &good);
    let mut src = FileSource::new([dir.path()]);
    let first = src.load().unwrap();
    assert_eq!(first.errors, vec![]);
    assert_eq!(first.entries.len(), 2);

    fs::write(&path, format!("{good}    - dnsName: [unclosed\n")).unwrap();
    let broken = src.load().unwrap();
    assert_eq!(
        broken.entries, first.entries,
        "nothing accepted is lost by a typo"
    );
    assert_eq!(broken.errors.len(), 1);
    // The parser notices the unclosed `[` at the end of the file: its last line.
    assert!(
        broken.errors[0].location.ends_with("web.yaml:15"),
        "{}",
        broken.errors[0]
    );
    assert!(
        broken.errors[0]
            .message
            .ends_with("keeping this file's 2 last accepted record(s)"),
        "{}",
        broken.errors[0]
    );

    // Still broken: still kept (the last good load is remembered, not the last load).
    assert_eq!(src.load().unwrap().entries, first.entries);

    fs::write(
        &path,
        endpoint_file(&[("app.example.com", "A", "192.0.2.11")]),
    )
    .unwrap();
    let fixed = src.load().unwrap();
    assert_eq!(fixed.errors, vec![]);
    assert_eq!(
        keys(&fixed.entries),
        vec![entry("app.example.com.", "A", &["192.0.2.11"])]
    );
}

#[test]
fn a_record_that_becomes_invalid_keeps_its_last_good_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "web.yaml",
        &endpoint_file(&[
            ("app.example.com", "A", "192.0.2.10"),
            ("www.example.com", "A", "192.0.2.20"),
        ]),
    );
    let mut src = FileSource::new([dir.path()]);
    assert_eq!(src.load().unwrap().errors, vec![]);

    // A bad IP for app, a valid change for www.
    fs::write(
        &path,
        endpoint_file(&[
            ("app.example.com", "A", "300.1.1.1"),
            ("www.example.com", "A", "192.0.2.21"),
        ]),
    )
    .unwrap();
    let snap = src.load().unwrap();
    assert_eq!(
        keys(&snap.entries),
        vec![
            entry("www.example.com.", "A", &["192.0.2.21"]),
            entry("app.example.com.", "A", &["192.0.2.10"]),
        ]
    );
    assert_eq!(snap.errors.len(), 1);
    assert!(
        snap.errors[0].location.ends_with("web.yaml:10"),
        "{}",
        snap.errors[0]
    );
    assert_eq!(
        snap.errors[0].message,
        "target \"300.1.1.1\": not a valid IPv4 address; keeping the last accepted version of this record"
    );

    // A typo in the name itself: the entry at the same place is kept.
    fs::write(
        &path,
        endpoint_file(&[
            ("app..example.com", "A", "192.0.2.10"),
            ("www.example.com", "A", "192.0.2.21"),
        ]),
    )
    .unwrap();
    let snap = src.load().unwrap();
    assert_eq!(
        keys(&snap.entries),
        vec![
            entry("www.example.com.", "A", &["192.0.2.21"]),
            entry("app.example.com.", "A", &["192.0.2.10"]),
        ]
    );
    assert_eq!(snap.errors.len(), 1);

    // `endpoints` misspelt: the whole resource keeps its records.
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace("endpoints:", "endpoint:");
    fs::write(&path, text).unwrap();
    let snap = src.load().unwrap();
    assert_eq!(snap.entries.len(), 2);
    assert!(
        snap.errors[0].message.contains("spec.endpoints is missing"),
        "{}",
        snap.errors[0]
    );
    assert!(
        snap.errors[0]
            .message
            .ends_with("keeping this resource's 2 last accepted record(s)"),
        "{}",
        snap.errors[0]
    );

    // Removing the endpoint from a valid file does delete it.
    fs::write(
        &path,
        endpoint_file(&[("www.example.com", "A", "192.0.2.21")]),
    )
    .unwrap();
    let snap = src.load().unwrap();
    assert_eq!(snap.errors, vec![]);
    assert_eq!(
        keys(&snap.entries),
        vec![entry("www.example.com.", "A", &["192.0.2.21"])]
    );
}

#[test]
fn an_invalid_record_never_accepted_before_is_only_reported() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "web.yaml",
        &endpoint_file(&[("app.example.com", "A", "300.1.1.1")]),
    );
    let snap = FileSource::new([dir.path()]).load().unwrap();
    assert_eq!(snap.entries, vec![]);
    assert_eq!(snap.errors.len(), 1);
    assert_eq!(
        snap.errors[0].message,
        "target \"300.1.1.1\": not a valid IPv4 address"
    );
}

#[test]
fn a_deleted_file_drops_its_entries_and_a_missing_path_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.yaml",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    write(
        dir.path(),
        "b.yaml",
        &endpoint_file(&[("b.example.com", "A", "192.0.2.2")]),
    );
    let missing = dir.path().join("nope.yaml");
    let mut src = FileSource::new([dir.path().to_path_buf(), missing.clone()]);
    let snap = src.load().unwrap();
    assert_eq!(snap.entries.len(), 2);
    assert_eq!(snap.errors.len(), 1);
    assert_eq!(snap.errors[0].location, missing.display().to_string());
    let message = &snap.errors[0].message;
    let says = "path does not exist; the source is not ready";
    assert!(message.starts_with(says), "{message}");
    assert_eq!(snap.unready.len(), 1, "{:?}", snap.unready);

    fs::remove_file(&a).unwrap();
    let snap = src.load().unwrap();
    assert_eq!(
        keys(&snap.entries),
        vec![entry("b.example.com.", "A", &["192.0.2.2"])]
    );
}

#[test]
fn directories_are_scanned_recursively_in_order_skipping_hidden_and_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "b.yaml",
        &endpoint_file(&[("b.example.com", "A", "192.0.2.2")]),
    );
    write(
        d,
        "a.YML",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    write(
        d,
        "sub/c.yaml",
        &endpoint_file(&[("c.example.com", "A", "192.0.2.3")]),
    );
    write(
        d,
        "notes.txt",
        &endpoint_file(&[("txt.example.com", "A", "192.0.2.9")]),
    );
    write(
        d,
        ".hidden/h.yaml",
        &endpoint_file(&[("h.example.com", "A", "192.0.2.9")]),
    );
    // A ConfigMap mount: the file is reachable three ways, and must be read once.
    write(
        d,
        "cm/..2024_01_01/x.yaml",
        &endpoint_file(&[("x.example.com", "A", "192.0.2.4")]),
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("..2024_01_01", d.join("cm/..data")).unwrap();
        std::os::unix::fs::symlink("..data/x.yaml", d.join("cm/x.yaml")).unwrap();
    }
    let explicit = d.join("notes.txt");
    let snap = FileSource::new([d.to_path_buf(), explicit]).load().unwrap();
    assert_eq!(snap.errors, vec![]);
    let names: Vec<String> = snap.entries.iter().map(|e| e.name.to_string()).collect();
    let mut expected = vec!["a.example.com.", "b.example.com."];
    if cfg!(unix) {
        expected.push("x.example.com.");
    }
    expected.extend(["txt.example.com.", "c.example.com."]);
    assert_eq!(names, expected);
}

#[test]
fn fingerprint_changes_with_content_even_at_equal_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "a.yaml",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    let mut src = FileSource::new([dir.path()]);
    let first = src.fingerprint();
    assert_eq!(src.fingerprint(), first);
    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.2")])).unwrap();
    let second = src.fingerprint();
    assert_ne!(second, first);
    write(dir.path(), "b.yaml", "");
    assert_ne!(src.fingerprint(), second);
}

#[test]
fn the_deployed_examples_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/examples/desired");
    let snap = FileSource::new([dir]).load().unwrap();
    assert_eq!(snap.errors, vec![]);
    let mut got: Vec<String> = snap
        .entries
        .iter()
        .map(|e| format!("{} {}", e.name, e.rtype))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            "_sip._tcp.example.com. SRV",
            "api.example.com. A",
            "api.example.com. AAAA",
            "app.example.com. A",
            "example.com. CAA",
            "example.com. MX",
            "example.com. TXT",
            "mail.example.com. A",
            "shop.example.com. CNAME",
            "sip.example.com. A",
            "www.example.com. A",
            "www.example.com. AAAA",
        ]
    );
    let caa = snap
        .entries
        .iter()
        .find(|e| e.rtype == RecordType::Caa)
        .unwrap();
    assert_eq!(
        caa.values,
        [
            "0 iodef \"mailto:hostmaster@example.com\"",
            "0 issue \"letsencrypt.org\""
        ]
    );
}

/// The first snapshot from the watcher that `pred` accepts (`what` it shows), within
/// 20 s.
pub(super) async fn next_matching(
    rx: &mut mpsc::Receiver<Snapshot>,
    what: &str,
    pred: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let wait = async {
        loop {
            let snap = rx.recv().await.expect("watcher stopped");
            if pred(&snap) {
                return snap;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("no snapshot with {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_notices_files_added_changed_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let handle = FileSource::new([dir.path()]).watch(Duration::from_millis(20), tx, cancel.clone());

    // An empty directory is a source that is not ready, not one with no records.
    let initial = next_matching(&mut rx, "the initial snapshot", |_| true).await;
    assert!(initial.entries.is_empty());
    assert_eq!(initial.unready.len(), 1, "{initial:?}");

    let path = write(
        dir.path(),
        "a.yaml",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    let added = next_matching(&mut rx, "a.yaml", |s| !s.entries.is_empty()).await;
    assert_eq!(
        keys(&added.entries),
        vec![entry("a.example.com.", "A", &["192.0.2.1"])]
    );

    // Same size, new content.
    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.2")])).unwrap();
    let changed = next_matching(&mut rx, "the new value", |s| {
        s.entries.iter().any(|e| e.values == ["192.0.2.2"])
    })
    .await;
    assert_eq!(
        keys(&changed.entries),
        vec![entry("a.example.com.", "A", &["192.0.2.2"])]
    );

    // Removing a file beside others is a deliberate deletion of its records.
    let other = write(
        dir.path(),
        "b.yaml",
        &endpoint_file(&[("b.example.com", "A", "192.0.2.9")]),
    );
    next_matching(&mut rx, "b.yaml", |s| s.entries.len() == 2).await;
    fs::remove_file(&path).unwrap();
    let removed = next_matching(&mut rx, "a.yaml gone", |s| s.entries.len() == 1).await;
    assert_eq!(removed.errors, vec![]);
    assert!(removed.unready.is_empty());

    // Removing the last one empties the directory: not ready, nothing is dropped.
    fs::remove_file(&other).unwrap();
    let emptied = next_matching(&mut rx, "not ready", |s| !s.unready.is_empty()).await;
    assert_eq!(
        keys(&emptied.entries),
        vec![entry("b.example.com.", "A", &["192.0.2.9"])]
    );

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("the watcher stops when cancelled")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_after_load_sends_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "a.yaml",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    let mut src = FileSource::new([dir.path()]);
    assert_eq!(src.load().unwrap().entries.len(), 1);
    let (tx, mut rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let handle = src.watch(Duration::from_millis(20), tx, cancel.clone());
    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.3")])).unwrap();
    // The first snapshot sent is the changed one: the loaded one is not sent again.
    let first = next_matching(&mut rx, "any snapshot", |_| true).await;
    assert_eq!(
        keys(&first.entries),
        vec![entry("a.example.com.", "A", &["192.0.2.3"])]
    );
    drop(rx);
    // The watcher also stops when nobody listens any more.
    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.4")])).unwrap();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("the watcher stops when the receiver is gone")
        .unwrap();
    drop(cancel);
}

/// A configured directory that becomes unreadable (here its parent turned into a file,
/// so every look at it fails with ENOTDIR; the tests run as root, where permission
/// bits would not stop a read) keeps its records and marks the source not ready; once
/// it is back, the source is ready again with what it holds.
#[test]
fn an_unreadable_source_path_keeps_its_records_and_is_not_ready() {
    let top = tempfile::tempdir().unwrap();
    let desired = top.path().join("mount").join("desired");
    write(
        &desired,
        "a.yaml",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    let mut src = FileSource::new([desired.clone()]);
    assert_eq!(src.load().unwrap().entries.len(), 1);

    let mount = top.path().join("mount");
    fs::rename(&mount, top.path().join("away")).unwrap();
    fs::write(&mount, "not a directory").unwrap();
    let snap = src.load().unwrap();
    assert_eq!(
        keys(&snap.entries),
        vec![entry("a.example.com.", "A", &["192.0.2.1"])],
        "an unreadable path is not 'no records'"
    );
    assert_eq!(snap.unready.len(), 1, "{:?}", snap.unready);
    assert!(
        snap.unready[0].contains("cannot read"),
        "{:?}",
        snap.unready
    );

    fs::remove_file(&mount).unwrap();
    fs::rename(top.path().join("away"), &mount).unwrap();
    let snap = src.load().unwrap();
    assert!(snap.unready.is_empty(), "{:?}", snap.unready);
    assert_eq!(snap.entries.len(), 1);
}

/// Not yet synced: a source restored from the store whose path is not there yet at
/// the first load (a volume still mounting) serves the restored records, not none.
#[test]
fn a_restored_source_whose_path_is_not_there_yet_keeps_the_restored_records() {
    let top = tempfile::tempdir().unwrap();
    let desired = top.path().join("desired");
    write(
        &desired,
        "a.yaml",
        &endpoint_file(&[("a.example.com", "A", "192.0.2.1")]),
    );
    let store = crate::store::DesiredStore::open(&top.path().join("state")).unwrap();
    let mut first = FileSource::new([desired.clone()]);
    first.with_store(store.clone()).unwrap();
    assert_eq!(first.load().unwrap().entries.len(), 1);

    fs::remove_dir_all(&desired).unwrap();
    let mut restarted = FileSource::new([desired.clone()]);
    assert_eq!(restarted.with_store(store).unwrap(), 1);
    let snap = restarted.load().unwrap();
    assert_eq!(
        keys(&snap.entries),
        vec![entry("a.example.com.", "A", &["192.0.2.1"])]
    );
    assert!(!snap.unready.is_empty());
}

/// With a store, the source keeps only a digest per file in memory and reads the last
/// accepted entries back from the store when a broken file must keep them: every load
/// of a sequence of breakages and fixes (a parse error, a bad record, an emptied or
/// overwritten file, a FIFO in a file's place, the whole directory missing) answers
/// what a source holding them in memory answers, and deletes nothing but the file
/// that was really deleted.
#[test]
fn a_stored_source_reads_back_what_a_broken_file_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    let a = endpoint_file(&[
        ("app.example.com", "A", "192.0.2.10"),
        ("www.example.com", "A", "192.0.2.20"),
    ]);
    let b = endpoint_file(&[("api.example.com", "A", "192.0.2.30")]);
    let path_a = write(&files, "a.yaml", &a);
    let path_b = write(&files, "b.yaml", &b);
    let mut memory = FileSource::new([&files]);
    let mut stored = FileSource::new([&files]);
    let store = crate::store::DesiredStore::open(&dir.path().join("state")).unwrap();
    stored.with_store(store).unwrap();
    let mut step = |what: &str| {
        let (m, s) = (memory.load().unwrap(), stored.load().unwrap());
        assert_eq!(s, m, "{what}");
        assert!(
            stored.last_good.entries.is_none(),
            "{what}: entries held in memory"
        );
        s
    };
    assert_eq!(step("both good").entries.len(), 3);
    fs::write(&path_a, format!("{a}    - dnsName: [unclosed\n")).unwrap();
    assert_eq!(step("a does not parse").entries.len(), 3);
    fs::write(
        &path_a,
        endpoint_file(&[
            ("app.example.com", "A", "300.1.1.1"),
            ("www.example.com", "A", "192.0.2.21"),
        ]),
    )
    .unwrap();
    fs::write(
        &path_b,
        endpoint_file(&[("api.example.com", "A", "192.0.2.31")]),
    )
    .unwrap();
    let s = step("a bad record in a, b changed");
    assert!(keys(&s.entries).contains(&entry("app.example.com.", "A", &["192.0.2.10"])));
    fs::write(&path_a, "").unwrap();
    assert_eq!(step("a emptied").entries.len(), 3);
    fs::write(
        &path_b,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    assert_eq!(step("b overwritten by something else").entries.len(), 3);
    fs::remove_file(&path_b).unwrap();
    super::hostile_tests::mkfifo(&path_b);
    assert_eq!(step("b replaced by a FIFO").entries.len(), 3);
    fs::remove_file(&path_b).unwrap();
    write(&files, "b.yaml", &b);
    assert_eq!(step("b back").entries.len(), 3);
    // The whole directory gone (an unmounted volume): not ready, nothing dropped.
    let away = dir.path().join("away");
    fs::rename(&files, &away).unwrap();
    let gone = step("the directory missing");
    assert_eq!(
        (gone.entries.len(), gone.unready.len()),
        (3, 1),
        "{:?}",
        gone.unready
    );
    fs::rename(&away, &files).unwrap();
    fs::remove_file(&path_a).unwrap();
    assert_eq!(step("a deleted").entries.len(), 1);
}

/// A label that becomes invalid refuses only its endpoint, and the endpoint keeps its
/// last accepted version, labels included: a new rule on labels deletes nothing.
#[test]
fn a_record_whose_labels_become_invalid_keeps_its_last_good_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = |labels: &str| {
        format!(
            "kind: DNSEndpoint\nmetadata: {{name: web}}\nspec:\n  endpoints:\n    - dnsName: app.example.com\n      recordType: A\n      targets: [192.0.2.10]\n      labels: {labels}\n    - dnsName: www.example.com\n      recordType: A\n      targets: [192.0.2.20]\n"
        )
    };
    let path = write(dir.path(), "web.yaml", &file("{resource: ingress/web}"));
    let mut src = FileSource::new([dir.path()]);
    let snap = src.load().unwrap();
    assert_eq!(snap.errors, vec![]);
    assert_eq!(snap.entries.len(), 2);

    fs::write(&path, file("[resource]")).unwrap();
    let snap = src.load().unwrap();
    assert_eq!(snap.entries.len(), 2, "{:?}", snap.entries);
    let app = snap
        .entries
        .iter()
        .find(|e| e.name.as_str() == "app.example.com.")
        .expect("app kept");
    assert_eq!(app.values, ["192.0.2.10"]);
    assert_eq!(
        app.labels.iter().collect::<Vec<_>>(),
        [("resource", "ingress/web")],
        "its last accepted labels"
    );
    assert_eq!(snap.errors.len(), 1, "{:?}", snap.errors);
    assert!(
        snap.errors[0].message.contains("labels")
            && snap.errors[0]
                .message
                .ends_with("keeping the last accepted version of this record"),
        "{}",
        snap.errors[0]
    );
}
