//! The accepted state on disk ([`super::states`]): per file, converted from the
//! single file of before, nothing left behind by a failed write, and a change that
//! could not be persisted applied once a write succeeds.
use super::tests::next_matching;
use super::*;
use crate::source::testing::{entry, keys};
use crate::store::DesiredStore;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;

fn endpoint_file(endpoints: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: web\nspec:\n  endpoints:\n",
    );
    for (name, target) in endpoints {
        s.push_str(&format!(
            "    - dnsName: {name}\n      recordType: A\n      targets:\n        - \"{target}\"\n"
        ));
    }
    s
}

/// Every file under `dir`, with its modification time and length.
fn files(dir: &Path) -> BTreeSet<(PathBuf, Option<SystemTime>, u64)> {
    let mut out = BTreeSet::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            let m = e.metadata().unwrap();
            out.insert((p, m.modified().ok(), m.len()));
        }
    }
    out
}

fn temporaries(dir: &Path) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

/// Three files of records; `(source dir, state dir, source)` loaded once.
fn setup(top: &Path) -> (PathBuf, PathBuf, FileSource) {
    let src = top.join("files");
    fs::create_dir_all(&src).unwrap();
    for f in ["a", "b", "c"] {
        fs::write(
            src.join(format!("{f}.yaml")),
            endpoint_file(&[
                (&format!("{f}1.example.com"), "192.0.2.1"),
                (&format!("{f}2.example.com"), "192.0.2.2"),
            ]),
        )
        .unwrap();
    }
    let state = top.join("state");
    let mut source = FileSource::new([&src]);
    source
        .with_store(DesiredStore::open(&state).unwrap())
        .unwrap();
    assert_eq!(source.load().unwrap().entries.len(), 6);
    (src, state, source)
}

#[test]
fn a_one_record_edit_writes_its_files_part_and_the_index_only() {
    let top = tempfile::tempdir().unwrap();
    let (src, state, mut source) = setup(top.path());
    let before = files(&state);
    std::thread::sleep(Duration::from_millis(20));
    fs::write(
        src.join("b.yaml"),
        endpoint_file(&[
            ("b1.example.com", "192.0.2.9"),
            ("b2.example.com", "192.0.2.2"),
        ]),
    )
    .unwrap();
    let loaded = source.load().unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let after = files(&state);
    let written: Vec<String> = after
        .difference(&before)
        .map(|(p, _, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written.len(), 2, "one part and the index: {written:?}");
    assert!(written.contains(&"index.json".to_string()), "{written:?}");
    assert!(temporaries(&state).is_empty());

    // A restart reads back exactly what was accepted.
    let mut restarted = FileSource::new([&src]);
    assert_eq!(
        restarted
            .with_store(DesiredStore::open(&state).unwrap())
            .unwrap(),
        6
    );
    fs::write(src.join("b.yaml"), "").unwrap();
    let kept = restarted.load().unwrap();
    assert!(keys(&kept.entries).contains(&entry("b1.example.com.", "A", &["192.0.2.9"])));
    assert_eq!(kept.entries.len(), 6, "the emptied file keeps its records");
}

#[test]
fn the_single_file_state_of_before_is_converted() {
    let top = tempfile::tempdir().unwrap();
    let (src, state, source) = setup(top.path());
    // Written as a planner of before did: the whole source in one file.
    let stored = source.store.as_ref().unwrap().all().unwrap();
    drop(source);
    fs::remove_dir_all(state.join("desired")).unwrap();
    let store = DesiredStore::open(&state).unwrap();
    let key = FileSource::new([&src]).store_key();
    store.put(&key, &stored).unwrap();
    let whole = store.path_of(&key);
    assert!(whole.exists());

    let mut restarted = FileSource::new([&src]);
    assert_eq!(restarted.with_store(store.clone()).unwrap(), 6);
    assert!(!whole.exists(), "the old file is removed once converted");
    assert!(whole.with_extension("files").join("index.json").exists());
    assert_eq!(
        restarted.store.as_ref().unwrap().count(&src.join("a.yaml")),
        2
    );
    let again = FileSource::new([&src]).with_store(store).unwrap();
    assert_eq!(again, 6);
}

#[test]
fn a_failed_write_leaves_nothing_behind_and_keeps_the_previous_state() {
    let top = tempfile::tempdir().unwrap();
    let (src, state, mut source) = setup(top.path());
    let fail = source.store.as_ref().unwrap().fail_writes.clone();
    fail.store(true, Ordering::Relaxed);
    fs::write(
        src.join("a.yaml"),
        endpoint_file(&[("a1.example.com", "192.0.2.7")]),
    )
    .unwrap();
    let refused = source.load().unwrap();
    assert!(
        refused
            .errors
            .iter()
            .any(|e| e.message.contains("cannot persist")),
        "{:?}",
        refused.errors
    );
    assert_eq!(
        refused.entries.len(),
        6,
        "the previous state stays in force"
    );
    assert!(source.unpersisted);
    assert!(temporaries(&state).is_empty(), "{:?}", temporaries(&state));

    fail.store(false, Ordering::Relaxed);
    let accepted = source.load().unwrap();
    assert!(accepted.errors.is_empty(), "{:?}", accepted.errors);
    assert_eq!(accepted.entries.len(), 5);
    assert!(!source.unpersisted);
}

/// The change made while writes fail is applied by the watcher once they succeed
/// again, although the file is not touched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_applies_an_unpersisted_change_once_a_write_succeeds() {
    let top = tempfile::tempdir().unwrap();
    let (src, _state, source) = setup(top.path());
    let fail = source.store.as_ref().unwrap().fail_writes.clone();
    let (tx, mut rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let handle = source.watch(Duration::from_millis(20), tx, cancel.clone());
    fail.store(true, Ordering::Relaxed);
    fs::write(
        src.join("c.yaml"),
        endpoint_file(&[("c1.example.com", "192.0.2.8")]),
    )
    .unwrap();
    let refused = next_matching(&mut rx, "the persist error", |s| {
        s.errors
            .iter()
            .any(|e| e.message.contains("cannot persist"))
    })
    .await;
    assert_eq!(refused.entries.len(), 6);
    fail.store(false, Ordering::Relaxed);
    let applied = next_matching(&mut rx, "the change", |s| {
        s.entries.len() == 5 && s.errors.is_empty()
    })
    .await;
    assert!(keys(&applied.entries).contains(&entry("c1.example.com.", "A", &["192.0.2.8"])));
    cancel.cancel();
    handle.await.unwrap();
}
