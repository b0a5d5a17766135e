//! What a broken disk, a bad deploy or a hostile user can put in a watched directory:
//! nothing of it is read as "delete these records", nothing blocks or exhausts the
//! source, and every case is reported with the file.
use super::*;
use crate::source::SourceError;
use crate::source::testing::{entry, keys};
use load::MAX_ERRORS_PER_FILE;
use std::fs;
use std::path::Path;
use std::sync::mpsc as std_mpsc;

fn endpoints(list: &[(&str, &str, &str)]) -> String {
    let mut s = String::from(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: web\nspec:\n  endpoints:\n",
    );
    for (name, rtype, target) in list {
        s.push_str(&format!(
            "    - dnsName: {name}\n      recordType: {rtype}\n      targets: [\"{target}\"]\n"
        ));
    }
    s
}

/// Loads on another thread and fails (instead of hanging the test run) when the load
/// blocks: a FIFO opened for reading waits for a writer forever.
fn load_bounded(src: FileSource) -> (FileSource, Snapshot) {
    let (tx, rx) = std_mpsc::channel();
    std::thread::spawn(move || {
        let mut src = src;
        let snap = src.load().unwrap();
        let _ = tx.send((src, snap));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the load finished (a blocked open of a FIFO would hang here)")
}

fn error_for<'a>(snap: &'a Snapshot, path: &Path) -> &'a SourceError {
    let p = path.display().to_string();
    snap.errors
        .iter()
        .find(|e| e.location == p || e.location.starts_with(&format!("{p}:")))
        .unwrap_or_else(|| panic!("no error for {p}: {:#?}", snap.errors))
}

/// A source over `dir` that has accepted one record from `a.yaml`.
fn loaded(dir: &Path) -> (FileSource, PathBuf) {
    let a = dir.join("a.yaml");
    fs::write(&a, endpoints(&[("a.example.com", "A", "192.0.2.1")])).unwrap();
    let mut src = FileSource::new([dir]);
    let snap = src.load().unwrap();
    assert_eq!(snap.errors, vec![]);
    assert_eq!(snap.entries.len(), 1);
    (src, a)
}

pub(super) fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A FIFO is never opened (that would block the source), whether it appears in a
/// directory or is named in the config, and whether it is new or replaces a file.
#[cfg(unix)]
#[test]
fn fifos_are_skipped_without_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let (src, a) = loaded(dir.path());
    let new = dir.path().join("new.yaml");
    mkfifo(&new);
    fs::remove_file(&a).unwrap();
    mkfifo(&a);
    let (src, snap) = load_bounded(src);
    assert_eq!(
        keys(&snap.entries),
        vec![entry("a.example.com.", "A", &["192.0.2.1"])],
        "a file replaced by a FIFO keeps its records"
    );
    assert_eq!(
        error_for(&snap, &a).message,
        "a FIFO, not a regular file; skipped; keeping this file's 1 last accepted record(s)"
    );
    assert_eq!(
        error_for(&snap, &new).message,
        "a FIFO, not a regular file; skipped"
    );
    drop(src);
    // Named in the config, too; and the fingerprint (which hashes content) never
    // opens it either.
    let mut explicit = FileSource::new([new.clone()]);
    let (tx, rx) = std_mpsc::channel();
    std::thread::spawn(move || {
        let _ = explicit.fingerprint();
        let _ = tx.send(explicit.load().unwrap());
    });
    let snap = rx.recv_timeout(Duration::from_secs(20)).expect("no hang");
    assert!(error_for(&snap, &new).message.starts_with("a FIFO"));
}

/// `/dev/zero` never ends: as a symlink in the tree it points outside and is skipped;
/// named in the config it is a character device and is skipped.
#[cfg(unix)]
#[test]
fn devices_and_symlinks_out_of_the_tree_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let foreign = outside.path().join("foreign.yaml");
    fs::write(&foreign, endpoints(&[("f.example.com", "A", "192.0.2.9")])).unwrap();
    let (src, _) = loaded(dir.path());
    let zero = dir.path().join("zero.yaml");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let link = dir.path().join("foreign.yaml");
    std::os::unix::fs::symlink(&foreign, &link).unwrap();
    let sub = dir.path().join("sub");
    std::os::unix::fs::symlink(outside.path(), &sub).unwrap();
    // A link that stays inside is followed (into a hidden directory, as in a
    // ConfigMap mount, so the file is not also read under its own name).
    fs::create_dir(dir.path().join(".real")).unwrap();
    fs::write(
        dir.path().join(".real/in.yml"),
        endpoints(&[("in.example.com", "A", "192.0.2.7")]),
    )
    .unwrap();
    std::os::unix::fs::symlink(".real/in.yml", dir.path().join("inside.yaml")).unwrap();

    let (_, snap) = load_bounded(src);
    assert_eq!(
        keys(&snap.entries),
        vec![
            entry("a.example.com.", "A", &["192.0.2.1"]),
            entry("in.example.com.", "A", &["192.0.2.7"]),
        ]
    );
    assert_eq!(
        error_for(&snap, &zero).message,
        "a symlink to /dev/zero, outside the configured directory; skipped".replace(
            "the configured directory",
            &fs::canonicalize(dir.path()).unwrap().display().to_string()
        )
    );
    assert!(error_for(&snap, &link).message.contains("outside"));
    assert!(error_for(&snap, &sub).message.contains("outside"));
    assert_eq!(snap.errors.len(), 3, "{:#?}", snap.errors);

    let (_, snap) = load_bounded(FileSource::new(["/dev/zero"]));
    assert_eq!(
        error_for(&snap, Path::new("/dev/zero")).message,
        "a character device, not a regular file; skipped"
    );
}

/// Over the size limit: not read, the file keeps its records, the error gives the
/// limit. The read itself never takes more than the limit plus one byte.
#[test]
fn oversized_files_keep_their_records() {
    let dir = tempfile::tempdir().unwrap();
    let (mut src, a) = loaded(dir.path());
    let mut big = endpoints(&[("a.example.com", "A", "192.0.2.2")]);
    big.push_str(&format!("# {}\n", "x".repeat(5 << 20)));
    fs::write(&a, &big).unwrap();
    let snap = src.load().unwrap();
    assert_eq!(
        snap.entries[0].values,
        ["192.0.2.1"],
        "the last good version"
    );
    assert_eq!(
        error_for(&snap, &a).message,
        format!(
            "{} bytes, above the limit of 4 MiB for a manifest file; keeping this file's 1 last accepted record(s)",
            big.len()
        )
    );
    let e = scan::read_manifest(&a, crate::source::dnsendpoint::MAX_MANIFEST_BYTES).unwrap_err();
    assert!(e.contains("above the limit"), "{e}");
}

/// The reported data loss: a file truncated to zero bytes, or overwritten with NUL
/// bytes, or with something that is not a DNSEndpoint, deleted its records.
#[test]
fn truncated_or_replaced_files_keep_their_records() {
    for (what, content) in [
        ("zero bytes", String::new()),
        ("NUL bytes", "\0".repeat(4096)),
        ("NULs after the text", format!("{}\0\0", endpoints(&[]))),
        (
            "another kind",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n".to_string(),
        ),
        ("only a comment", "# emptied\n".to_string()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (mut src, a) = loaded(dir.path());
        fs::write(&a, &content).unwrap();
        let snap = src.load().unwrap();
        assert_eq!(
            keys(&snap.entries),
            vec![entry("a.example.com.", "A", &["192.0.2.1"])],
            "{what}"
        );
        let e = error_for(&snap, &a);
        assert!(
            e.message
                .ends_with("keeping this file's 1 last accepted record(s)"),
            "{what}: {e}"
        );
        // Still so on the next load: the last good version is remembered.
        assert_eq!(src.load().unwrap().entries.len(), 1, "{what}");
    }
}

/// Bytes that are not UTF-8: the file keeps its records, the error names the line.
#[test]
fn invalid_utf8_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (mut src, a) = loaded(dir.path());
    let mut bytes = endpoints(&[("a.example.com", "A", "192.0.2.2")]).into_bytes();
    bytes.extend_from_slice(b"# \xff\xfe\n");
    fs::write(&a, bytes).unwrap();
    let snap = src.load().unwrap();
    assert_eq!(snap.entries[0].values, ["192.0.2.1"]);
    let e = error_for(&snap, &a);
    assert_eq!(e.location, format!("{}:10", a.display()));
    assert!(e.message.starts_with("not valid UTF-8: "), "{e}");
}

/// What does delete: an explicit empty endpoint list, or removing the file.
#[test]
fn an_explicit_empty_list_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut src, a) = loaded(dir.path());
    fs::write(&a, endpoints(&[])).unwrap();
    let snap = src.load().unwrap();
    assert_eq!(snap.entries, vec![]);
    assert_eq!(
        snap.errors,
        vec![],
        "`endpoints:` with nothing is an explicit none"
    );
    fs::write(
        &a,
        endpoints(&[]).replace("endpoints:\n", "endpoints: []\n"),
    )
    .unwrap();
    assert_eq!(src.load().unwrap().errors, vec![]);
}

/// New files with nothing to keep: an empty one is reported, one of another kind is
/// not (directories may hold other manifests).
#[test]
fn new_files_without_records() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("empty.yaml"), "").unwrap();
    fs::write(
        dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let snap = FileSource::new([dir.path()]).load().unwrap();
    assert_eq!(snap.errors.len(), 1, "{:#?}", snap.errors);
    assert!(
        snap.errors[0]
            .message
            .starts_with("the file is empty (0 bytes)")
    );
}

/// A file of thousands of broken endpoints reports a bounded number of errors.
#[test]
fn errors_per_file_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let bad: Vec<(String, &str, &str)> = (0..300)
        .map(|i| (format!("h{i}.example.com"), "A", "300.0.0.1"))
        .collect();
    let bad: Vec<(&str, &str, &str)> = bad.iter().map(|(n, t, v)| (n.as_str(), *t, *v)).collect();
    let path = dir.path().join("bad.yaml");
    fs::write(&path, endpoints(&bad)).unwrap();
    let snap = FileSource::new([dir.path()]).load().unwrap();
    assert_eq!(snap.errors.len(), MAX_ERRORS_PER_FILE + 1);
    assert_eq!(
        snap.errors.last().unwrap().message,
        "200 more error(s) in this file not shown"
    );
}
