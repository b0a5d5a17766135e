//! A file rewritten in place (truncated, then written) deletes nothing while it is
//! briefly short; a file that stays short is believed once the window has passed.
use super::tests::{endpoint_file, next_matching, write};
use super::*;
use std::fs;

fn three() -> String {
    endpoint_file(&[
        ("a.example.com", "A", "192.0.2.1"),
        ("b.example.com", "A", "192.0.2.2"),
        ("c.example.com", "A", "192.0.2.3"),
    ])
}

fn names(s: &Snapshot) -> Vec<String> {
    let mut n: Vec<String> = s.entries.iter().map(|e| e.name.to_string()).collect();
    n.sort();
    n
}

/// A watcher of `dir` (holding web.yaml's three records) whose shrinks must hold for
/// `settle`, once it has sent the three.
async fn watching(
    dir: &std::path::Path,
    settle: Duration,
) -> (
    PathBuf,
    mpsc::Receiver<Snapshot>,
    CancellationToken,
    JoinHandle<()>,
) {
    let path = write(dir, "web.yaml", &three());
    let (tx, mut rx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let source = FileSource::new([dir]).with_shrink_settle(settle);
    let handle = source.watch(Duration::from_millis(20), tx, cancel.clone());
    next_matching(&mut rx, "the three records", |s| s.entries.len() == 3).await;
    (path, rx, cancel, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_caught_half_written_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A window no test run outlasts: a shrink seen here is never believed.
    let (path, mut rx, cancel, handle) = watching(dir.path(), Duration::from_secs(3600)).await;

    // Truncated: an empty file (kept as doubt anyway) ...
    fs::write(&path, "").unwrap();
    // ... then the first document written, the rest not yet: a valid, shorter file.
    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.1")])).unwrap();
    // Another file changes, so that a snapshot is sent after the short one was read.
    write(
        dir.path(),
        "other.yaml",
        &endpoint_file(&[("o.example.com", "A", "192.0.2.9")]),
    );
    let seen = next_matching(&mut rx, "other.yaml", |s| {
        s.entries
            .iter()
            .any(|e| e.name.to_string() == "o.example.com.")
    })
    .await;
    assert_eq!(
        names(&seen),
        [
            "a.example.com.",
            "b.example.com.",
            "c.example.com.",
            "o.example.com."
        ],
        "the half-written file lost records: {seen:?}"
    );
    // The write completes: the same three, nothing ever deleted.
    fs::write(&path, three()).unwrap();
    fs::write(dir.path().join("other.yaml"), endpoint_file(&[])).unwrap();
    cancel.cancel();
    handle.await.unwrap();
    while let Ok(s) = rx.try_recv() {
        for name in ["a.example.com.", "b.example.com.", "c.example.com."] {
            assert!(names(&s).iter().any(|n| n == name), "{name} deleted: {s:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_stays_short_is_believed_after_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut rx, cancel, handle) = watching(dir.path(), Duration::from_millis(200)).await;

    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.1")])).unwrap();
    let shrunk = next_matching(&mut rx, "one record", |s| s.entries.len() == 1).await;
    assert_eq!(names(&shrunk), ["a.example.com."]);
    // A file removed beside another is believed too, after its window.
    write(
        dir.path(),
        "keep.yaml",
        &endpoint_file(&[("k.example.com", "A", "192.0.2.7")]),
    );
    next_matching(&mut rx, "keep.yaml", |s| s.entries.len() == 2).await;
    fs::remove_file(&path).unwrap();
    let gone = next_matching(&mut rx, "web.yaml gone", |s| s.entries.len() == 1).await;
    assert_eq!(names(&gone), ["k.example.com."]);
    cancel.cancel();
    handle.await.unwrap();
}

/// The planner's first load, of a file found short against what the store restored
/// (a restart in the middle of a rewrite), holds too; without a window it is believed.
#[test]
fn a_first_load_with_a_window_holds_a_short_file_against_the_restored_state() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "web.yaml", &three());
    let store = crate::store::DesiredStore::open(state.path()).unwrap();
    let mut first = FileSource::new([dir.path()]);
    first.with_store(store.clone()).unwrap();
    assert_eq!(first.load().unwrap().entries.len(), 3);
    drop(first);

    fs::write(&path, endpoint_file(&[("a.example.com", "A", "192.0.2.1")])).unwrap();
    let mut held = FileSource::new([dir.path()]).with_shrink_settle(Duration::from_secs(3600));
    assert_eq!(held.with_store(store.clone()).unwrap(), 3);
    assert_eq!(
        held.load().unwrap().entries.len(),
        3,
        "the short file was believed"
    );
    drop(held);
    let mut believed = FileSource::new([dir.path()]);
    believed.with_store(store).unwrap();
    assert_eq!(believed.load().unwrap().entries.len(), 1);
}
