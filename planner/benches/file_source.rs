//! What a one-record edit costs a large file source with a state directory: N records
//! in files of 100, loaded once, then one record of one file changed and the source
//! loaded again (what the watcher does at its next poll). Printed: the load after the
//! edit, the same load with nothing changed (reading and parsing every file, which
//! the edit costs too), and the bytes written to the state directory by the edit;
//! then, for comparison, what persisting the same state cost before issue 28: the
//! whole source as one JSON file (written, `fsync`ed and renamed by the store).
//!
//! `cargo bench -p dnsplane-planner --bench file_source -- 160000`
use dnsplane_planner::source::FileSource;
use dnsplane_planner::store::DesiredStore;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

const PER_FILE: usize = 100;

fn manifest(file: usize, changed: Option<usize>) -> String {
    let mut s = format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: f{file}\nspec:\n  endpoints:\n"
    );
    for i in 0..PER_FILE {
        let last = if changed == Some(i) { 254 } else { i % 250 + 1 };
        s.push_str(&format!(
            "    - dnsName: h{i}.f{file}.z{}.example.com\n      recordType: A\n      targets: [\"10.{}.{}.{last}\"]\n",
            file % 100,
            (file >> 8) & 255,
            file & 255
        ));
    }
    s
}

/// Every file under `dir` with its modification time and length.
fn files(dir: &Path, out: &mut BTreeMap<PathBuf, (Option<SystemTime>, u64)>) {
    for e in std::fs::read_dir(dir).expect("state dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if let Ok(m) = e.metadata() {
            out.insert(p, (m.modified().ok(), m.len()));
        }
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![16_000, 160_000]
    } else {
        sizes
    };
    println!(
        "| records | files | load, nothing changed | load after a one-record edit | written by the edit | before: the whole source written |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let top = tempfile::tempdir().expect("tempdir");
        let src = top.path().join("desired");
        std::fs::create_dir_all(&src).expect("desired");
        let nfiles = n.div_ceil(PER_FILE);
        for f in 0..nfiles {
            std::fs::write(src.join(format!("f{f:05}.yaml")), manifest(f, None)).expect("write");
        }
        let state = top.path().join("state");
        let mut source = FileSource::new([&src]);
        source
            .with_store(DesiredStore::open(&state).expect("store"))
            .expect("restore");
        let first = source.load().expect("load");
        assert_eq!(first.entries.len(), nfiles * PER_FILE);

        let t = Instant::now();
        source.load().expect("load");
        let unchanged = t.elapsed().as_secs_f64() * 1e3;

        let mut before = BTreeMap::new();
        files(&state, &mut before);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let edited = nfiles / 2;
        std::fs::write(
            src.join(format!("f{edited:05}.yaml")),
            manifest(edited, Some(7)),
        )
        .expect("edit");
        let t = Instant::now();
        let after_edit = source.load().expect("load");
        let edit = t.elapsed().as_secs_f64() * 1e3;
        assert!(after_edit.errors.is_empty(), "{:?}", after_edit.errors);
        let mut after = BTreeMap::new();
        files(&state, &mut after);
        let written: u64 = after
            .iter()
            .filter(|(p, v)| before.get(*p) != Some(v))
            .map(|(_, (_, len))| len)
            .sum();
        // Before: every file's entries in one state, replaced whole on every edit.
        let parts = after
            .keys()
            .find(|p| p.ends_with("index.json"))
            .and_then(|p| p.parent())
            .expect("the per-file state")
            .to_path_buf();
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(parts.join("index.json")).expect("index"))
                .expect("index json");
        let mut whole = BTreeMap::new();
        for (path, r) in index["files"].as_object().expect("files") {
            let part = parts.join(r["part"].as_str().expect("part"));
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(part).expect("part")).expect("part json");
            whole.insert(path.clone(), v);
        }
        let before_dir = top.path().join("before");
        let store = DesiredStore::open(&before_dir).expect("store");
        let t = Instant::now();
        store.put("file:before", &whole).expect("put");
        let before_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut before_files = BTreeMap::new();
        files(&before_dir, &mut before_files);
        let before_bytes: u64 = before_files.values().map(|(_, len)| len).sum();
        println!(
            "| {n} | {nfiles} | {unchanged:.0} ms | {edit:.0} ms | {:.1} KB | {:.1} MB in {before_ms:.0} ms |",
            written as f64 / 1e3,
            before_bytes as f64 / 1e6
        );
    }
}
