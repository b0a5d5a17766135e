//! The file source: external-dns `DNSEndpoint` manifests read from files and directories.
//!
//! ```yaml
//! apiVersion: externaldns.k8s.io/v1alpha1
//! kind: DNSEndpoint
//! metadata: {name: web, namespace: default}
//! spec:
//!   endpoints:
//!     - dnsName: app.example.com
//!       recordType: A
//!       recordTTL: 300          # optional; 0 or absent: the zone's default TTL
//!       targets: [192.0.2.10]
//! ```
//!
//! Files may hold several documents (`---`); documents of other kinds are skipped, and a
//! `List` (or `DNSEndpointList`) is read item by item. `labels` and `providerSpecific` are
//! ignored; `setIdentifier` (routing policies) is not supported and makes that endpoint
//! an error.
//!
//! **A typo never deletes a record that was accepted before.** The source remembers, per
//! file, what it last accepted:
//! - a file that cannot be read or parsed keeps all of its last accepted entries;
//! - a document that is recognisably a DNSEndpoint but is broken as a whole (`spec` or
//!   `spec.endpoints` missing, a misspelt `kind` beside `spec.endpoints`) keeps that
//!   resource's last accepted entries;
//! - an invalid endpoint keeps the last accepted entry with the same (name, type) from the
//!   same file; when its name or type itself is unreadable, the entry that sat at the same
//!   position (resource, endpoint index) is kept instead.
//!
//! Every such problem is reported in the snapshot with its file and line. Entries are only
//! dropped by a valid change: an endpoint removed from a valid document, or a file deleted.
use super::{DesiredEntry, Origin, Snapshot, SourceError};
use dnsplane_common::rrset::{MAX_TTL, MAX_VALUES};
use dnsplane_common::{ModelError, Name, RecordType, rdata::canonicalize};
use marked_yaml::types::{MarkedMappingNode, MarkedScalarNode, Node, Span};
use marked_yaml::{LoadError, LoaderOptions};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The `source` written into every origin and error of this source.
pub const SOURCE_KIND: &str = "file";

/// A file whose modification time is closer than this to the moment it was hashed may
/// still change without its (mtime, size) changing (coarse timestamps): it is re-hashed
/// on the next poll. Older files are only re-read when their metadata changes.
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Desired state from `DNSEndpoint` manifests in files and directories.
///
/// Each path is a file (read whatever its name) or a directory, scanned recursively for
/// `*.yaml` and `*.yml` files in sorted order. Entries whose name starts with `.` are
/// skipped while scanning: that keeps the `..data` / `..2024_…` directories of a
/// Kubernetes ConfigMap mount from being read twice, and hides editors' temporary files.
#[derive(Debug)]
pub struct FileSource {
    paths: Vec<PathBuf>,
    /// Per file: what the last load accepted (including entries kept from before).
    last_good: BTreeMap<PathBuf, Vec<Accepted>>,
    /// Per file: the metadata and content hash seen by the last fingerprint.
    stamps: HashMap<PathBuf, Stamp>,
    /// Hash of the snapshot the last `load` returned: `watch` does not send it again.
    last_loaded: Option<u64>,
}

impl FileSource {
    pub fn new<I, P>(paths: I) -> FileSource
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        FileSource {
            paths: paths.into_iter().map(Into::into).collect(),
            last_good: BTreeMap::new(),
            stamps: HashMap::new(),
            last_loaded: None,
        }
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Reads every file now and returns the complete desired state of this source.
    ///
    /// Entries are ordered by file path, then by their place in the file. Problems never
    /// panic or abort the load: they become errors in the snapshot, and the last accepted
    /// entries are kept as described in the module documentation.
    pub fn load(&mut self) -> Snapshot {
        let scan = scan(&self.paths);
        let mut errors = scan.errors;
        let mut good: BTreeMap<PathBuf, Vec<Accepted>> = BTreeMap::new();
        for path in &scan.files {
            let label = path.display().to_string();
            let old = self.last_good.get(path);
            let text = std::fs::read(path)
                .map_err(|e| format!("cannot read: {e}"))
                .and_then(|b| String::from_utf8(b).map_err(|e| format!("not valid UTF-8: {e}")));
            let kept = match text {
                Err(message) => {
                    errors.push(file_error(&label, None, with_kept_note(message, old)));
                    old.cloned().unwrap_or_default()
                }
                Ok(text) => {
                    let mut parsed = parse_file(&label, &text);
                    let kept = if parsed.fatal.is_empty() {
                        merge(&mut parsed, old)
                    } else {
                        for &i in &parsed.fatal {
                            let e = &mut parsed.errors[i];
                            e.message = with_kept_note(std::mem::take(&mut e.message), old);
                        }
                        old.cloned().unwrap_or_default()
                    };
                    errors.append(&mut parsed.errors);
                    kept
                }
            };
            good.insert(path.clone(), kept);
        }
        // Files below a directory (or root path) that could not be listed this time:
        // their existence is unknown, so they keep what they had.
        for (path, accepted) in &self.last_good {
            if !good.contains_key(path) && scan.unlisted.iter().any(|d| path.starts_with(d)) {
                good.insert(path.clone(), accepted.clone());
            }
        }
        self.last_good = good;
        let snapshot = Snapshot {
            entries: self
                .last_good
                .values()
                .flatten()
                .map(|a| a.entry.clone())
                .collect(),
            errors,
        };
        self.last_loaded = Some(hash_of(&snapshot));
        snapshot
    }

    /// Polls the paths every `poll` and sends a snapshot on `tx`: one at once (unless
    /// it equals the one the last [`load`](Self::load) returned), then one whenever the
    /// files changed and the snapshot with them. Stops when `cancel` fires
    /// or the receiver is dropped. Must be called inside a Tokio runtime; file I/O runs
    /// on the blocking pool.
    ///
    /// Polling, not inotify, is deliberate: it works the same on every filesystem (NFS,
    /// FUSE, overlay, network volumes), and with the atomic symlink swap by which
    /// Kubernetes updates a mounted ConfigMap (`web.yaml -> ..data/web.yaml`, `..data`
    /// re-pointed to a new timestamped directory), which event-based watchers miss or
    /// report on the wrong path. A poll costs one directory walk and one `stat` per file;
    /// a file's content is hashed again only when its metadata changed or it was
    /// modified in the last two seconds, so same-size rewrites within one timestamp tick
    /// are seen too.
    pub fn watch(
        mut self,
        poll: Duration,
        tx: mpsc::Sender<Snapshot>,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut last_fingerprint: Option<u64> = None;
            // Compared by hash: a snapshot can be large.
            let mut last_sent: Option<u64> = self.last_loaded.take();
            loop {
                let polled = tokio::task::spawn_blocking(move || {
                    let fingerprint = self.fingerprint();
                    let snapshot = (Some(fingerprint) != last_fingerprint).then(|| self.load());
                    (self, fingerprint, snapshot)
                })
                .await;
                let (source, fingerprint, snapshot) = match polled {
                    Ok(polled) => polled,
                    Err(e) => {
                        tracing::error!(error = %e, "file source poll failed; the file source stops");
                        return;
                    }
                };
                self = source;
                last_fingerprint = Some(fingerprint);
                if let Some(snapshot) = snapshot.filter(|s| last_sent != Some(hash_of(s))) {
                    tracing::debug!(
                        entries = snapshot.entries.len(),
                        errors = snapshot.errors.len(),
                        "file source changed"
                    );
                    last_sent = Some(hash_of(&snapshot));
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => return,
                        sent = tx.send(snapshot) => if sent.is_err() { return },
                    }
                }
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(poll) => {}
                }
            }
        })
    }

    /// A hash of the set of files and of each file's (mtime, size, inode, content hash),
    /// plus the scan's errors. Updates the per-file stamps.
    fn fingerprint(&mut self) -> u64 {
        let scan = scan(&self.paths);
        let mut h = DefaultHasher::new();
        for e in &scan.errors {
            e.location.hash(&mut h);
            e.message.hash(&mut h);
        }
        let now = SystemTime::now();
        let mut stamps = HashMap::with_capacity(scan.files.len());
        for path in scan.files {
            path.hash(&mut h);
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    e.kind().hash(&mut h);
                    continue;
                }
            };
            let (modified, len, inode) = (meta.modified().ok(), meta.len(), inode(&meta));
            let content = match self.stamps.get(&path) {
                Some(s)
                    if s.modified == modified
                        && s.len == len
                        && s.inode == inode
                        && s.settled() =>
                {
                    s.content
                }
                _ => hash_content(&path),
            };
            (modified, len, inode, content).hash(&mut h);
            stamps.insert(
                path,
                Stamp {
                    modified,
                    len,
                    inode,
                    content,
                    hashed_at: now,
                },
            );
        }
        self.stamps = stamps;
        h.finish()
    }
}

#[derive(Debug, Clone)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
    content: u64,
    hashed_at: SystemTime,
}

impl Stamp {
    /// True when the file was last modified well before it was hashed.
    fn settled(&self) -> bool {
        self.modified
            .and_then(|m| self.hashed_at.duration_since(m).ok())
            .is_some_and(|age| age >= RACY_WINDOW)
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.ino()
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

fn hash_of<T: Hash>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

fn hash_content(path: &Path) -> u64 {
    let mut h = DefaultHasher::new();
    match std::fs::read(path) {
        Ok(bytes) => bytes.hash(&mut h),
        Err(e) => e.kind().hash(&mut h),
    }
    h.finish()
}

// ---------------------------------------------------------------------------------------
// Scanning

#[derive(Debug, Default)]
struct Scan {
    /// Files to read, sorted, without duplicates.
    files: Vec<PathBuf>,
    errors: Vec<SourceError>,
    /// Paths that exist but could not be listed or inspected: files below them keep
    /// their last accepted entries.
    unlisted: Vec<PathBuf>,
}

fn scan(paths: &[PathBuf]) -> Scan {
    let mut scan = Scan::default();
    let mut visited = HashSet::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => walk(path, &mut scan, &mut visited),
            Ok(_) => scan.files.push(path.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                scan.errors.push(file_error(
                    &path.display().to_string(),
                    None,
                    "path does not exist".into(),
                ));
            }
            Err(e) => {
                scan.errors.push(file_error(
                    &path.display().to_string(),
                    None,
                    format!("cannot read: {e}"),
                ));
                scan.unlisted.push(path.clone());
            }
        }
    }
    scan.files.sort();
    scan.files.dedup();
    scan
}

fn walk(dir: &Path, scan: &mut Scan, visited: &mut HashSet<PathBuf>) {
    // Symlinked directories are followed, once each (no loops).
    if let Ok(real) = std::fs::canonicalize(dir)
        && !visited.insert(real)
    {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            scan.errors.push(file_error(
                &dir.display().to_string(),
                None,
                format!("cannot list directory: {e}"),
            ));
            scan.unlisted.push(dir.to_path_buf());
            return;
        }
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        match std::fs::metadata(&child) {
            Ok(m) if m.is_dir() => walk(&child, scan, visited),
            Ok(_) if is_manifest(&child) => scan.files.push(child),
            Ok(_) => {}
            // A dangling symlink, e.g. in the middle of a ConfigMap update.
            Err(e) if is_manifest(&child) => {
                scan.errors.push(file_error(
                    &child.display().to_string(),
                    None,
                    format!("cannot read: {e}"),
                ));
                scan.unlisted.push(child);
            }
            Err(_) => {}
        }
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

// ---------------------------------------------------------------------------------------
// Last-good retention

/// An accepted entry and the slot it came from.
#[derive(Debug, Clone)]
struct Accepted {
    entry: DesiredEntry,
    slot: Slot,
}

/// Where an endpoint sits: its resource and its index in `spec.endpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Slot {
    resource: String,
    index: usize,
}

/// Something that was in the file but could not be accepted.
#[derive(Debug)]
struct Rejected {
    what: RejectedWhat,
    /// Its errors, as indices into `ParsedFile::errors`.
    errors: Range<usize>,
}

#[derive(Debug)]
enum RejectedWhat {
    /// One endpoint; `key` when its name and type could be read.
    Endpoint {
        key: Option<(Name, RecordType)>,
        slot: Slot,
    },
    /// A whole resource.
    Resource(String),
}

/// The entries of the new load, plus the last accepted entries that rejected inputs of
/// this load stand for (see the module documentation).
fn merge(parsed: &mut ParsedFile, old: Option<&Vec<Accepted>>) -> Vec<Accepted> {
    let mut result = std::mem::take(&mut parsed.accepted);
    let Some(old) = old.filter(|o| !o.is_empty()) else {
        return result;
    };
    let present: HashSet<(&Name, RecordType)> = result
        .iter()
        .map(|a| (&a.entry.name, a.entry.rtype))
        .collect();
    // Indices of the old entries that no new entry replaces, by key, slot and resource.
    let mut by_key: HashMap<(&Name, RecordType), Vec<usize>> = HashMap::new();
    let mut by_slot: HashMap<&Slot, Vec<usize>> = HashMap::new();
    let mut by_resource: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, o) in old.iter().enumerate() {
        let key = (&o.entry.name, o.entry.rtype);
        if !present.contains(&key) {
            by_key.entry(key).or_default().push(i);
            by_slot.entry(&o.slot).or_default().push(i);
            by_resource
                .entry(o.slot.resource.as_str())
                .or_default()
                .push(i);
        }
    }
    let mut keep = BTreeSet::new();
    for rejected in &parsed.rejected {
        let matching = match &rejected.what {
            RejectedWhat::Endpoint {
                key: Some((name, rtype)),
                ..
            } => by_key.get(&(name, *rtype)),
            RejectedWhat::Endpoint { key: None, slot } => by_slot.get(slot),
            RejectedWhat::Resource(resource) => by_resource.get(resource.as_str()),
        };
        let Some(matching) = matching else { continue };
        if matching.is_empty() {
            continue;
        }
        let note = match &rejected.what {
            RejectedWhat::Endpoint { .. } => {
                "keeping the last accepted version of this record".to_string()
            }
            RejectedWhat::Resource(_) => format!(
                "keeping this resource's {} last accepted record(s)",
                matching.len()
            ),
        };
        for e in &mut parsed.errors[rejected.errors.clone()] {
            e.message = format!("{}; {note}", e.message);
        }
        keep.extend(matching.iter().copied());
    }
    result.extend(keep.into_iter().map(|i| old[i].clone()));
    result
}

fn with_kept_note(message: String, old: Option<&Vec<Accepted>>) -> String {
    match old.map(Vec::len) {
        Some(n) if n > 0 => format!("{message}; keeping this file's {n} last accepted record(s)"),
        _ => message,
    }
}

// ---------------------------------------------------------------------------------------
// Parsing

/// Parses the `DNSEndpoint` manifests in `text`, without any last-good retention.
/// `label` names the input in locations (`label:line`), e.g. a path.
pub fn parse_manifests(label: &str, text: &str) -> (Vec<DesiredEntry>, Vec<SourceError>) {
    let parsed = parse_file(label, text);
    if parsed.fatal.is_empty() {
        (
            parsed.accepted.into_iter().map(|a| a.entry).collect(),
            parsed.errors,
        )
    } else {
        (Vec::new(), parsed.errors)
    }
}

#[derive(Debug, Default)]
struct ParsedFile {
    accepted: Vec<Accepted>,
    rejected: Vec<Rejected>,
    errors: Vec<SourceError>,
    /// Indices of errors that make the whole file unusable (YAML syntax).
    fatal: Vec<usize>,
}

fn parse_file(label: &str, text: &str) -> ParsedFile {
    let mut out = ParsedFile::default();
    // The parser reports errors at the end of input one line past the last one.
    let last_line = text.lines().count().max(1);
    for (number, doc) in split_documents(text).into_iter().enumerate() {
        if is_blank(&doc.text) {
            continue;
        }
        let options = LoaderOptions::default().error_on_duplicate_keys(true);
        match marked_yaml::parse_yaml_with_options(0, &doc.text, options) {
            Ok(node) => {
                let cx = Doc {
                    label,
                    offset: doc.offset,
                    number: number + 1,
                };
                if let Some(map) = node.as_mapping() {
                    parse_object(&cx, map, None, &mut out);
                }
            }
            Err(e) => {
                let (line, message) = describe_load_error(&e);
                out.fatal.push(out.errors.len());
                out.errors.push(file_error(
                    label,
                    line.map(|l| (l + doc.offset).min(last_line)),
                    message,
                ));
            }
        }
    }
    out
}

/// One YAML document of a file: its text, and the number of lines before it.
#[derive(Debug)]
struct Document {
    offset: usize,
    text: String,
}

/// Splits a multi-document stream at `---` and `...` lines. Each document keeps its
/// lines' columns (the marker is blanked, not removed), and `offset` maps its line
/// numbers back to the file's. (`marked-yaml` loads one document per call.)
fn split_documents(text: &str) -> Vec<Document> {
    let is_marker = |line: &str, m: &str| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    };
    let mut docs = vec![Document {
        offset: 0,
        text: String::new(),
    }];
    for (i, line) in text.lines().enumerate() {
        if is_marker(line, "---") {
            docs.push(Document {
                offset: i,
                text: format!("   {}\n", &line[3..]),
            });
        } else if is_marker(line, "...") {
            docs.push(Document {
                offset: i + 1,
                text: String::new(),
            });
        } else if let Some(doc) = docs.last_mut() {
            doc.text.push_str(line);
            doc.text.push('\n');
        }
    }
    docs
}

/// True when a document holds nothing but blank lines, comments and directives.
fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || l.starts_with('%')
    })
}

fn describe_load_error(e: &LoadError) -> (Option<usize>, String) {
    match e {
        LoadError::ScanError(m, se) => (Some(m.line()), format!("invalid YAML: {}", se.info())),
        LoadError::TopLevelMustBeMapping(m) | LoadError::TopLevelMustBeSequence(m) => (
            Some(m.line()),
            "a document must be a mapping (apiVersion, kind, metadata, spec)".into(),
        ),
        LoadError::UnexpectedAnchor(m) => (
            Some(m.line()),
            "YAML anchors and aliases are not supported".into(),
        ),
        LoadError::MappingKeyMustBeScalar(m) => {
            (Some(m.line()), "mapping keys must be plain scalars".into())
        }
        LoadError::UnexpectedTag(m) => (Some(m.line()), "YAML tags are not supported".into()),
        LoadError::DuplicateKey(inner) => {
            let first = inner.prev_key.span().start().map(|m| m.line());
            let at = first
                .map(|l| format!(" (first at line {l})"))
                .unwrap_or_default();
            (
                inner.key.span().start().map(|m| m.line()),
                format!("duplicate key {:?}{at}", inner.key.as_str()),
            )
        }
    }
}

/// Where a document sits in its file.
#[derive(Debug)]
struct Doc<'a> {
    label: &'a str,
    offset: usize,
    /// 1-based document number in the file.
    number: usize,
}

impl Doc<'_> {
    /// The file line (1-based) of a node, if the parser recorded one.
    fn line(&self, span: &Span) -> Option<usize> {
        span.start().map(|m| m.line() + self.offset)
    }
}

fn file_error(label: &str, line: Option<usize>, message: String) -> SourceError {
    SourceError {
        source: SOURCE_KIND.into(),
        location: location(label, line),
        record: String::new(),
        message,
    }
}

fn location(label: &str, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{label}:{l}"),
        None => label.to_string(),
    }
}

fn scalar<'n>(map: &'n MarkedMappingNode, key: &str) -> Option<&'n MarkedScalarNode> {
    map.get_scalar(key).filter(|s| !is_null(s))
}

fn missing_or_not_text(map: &MarkedMappingNode, key: &str) -> String {
    match map.get_node(key) {
        None | Some(Node::Scalar(_)) => format!("{key} is missing"),
        Some(_) => format!("{key} must be a string"),
    }
}

fn is_null(s: &MarkedScalarNode) -> bool {
    matches!(s.as_str().trim(), "" | "~" | "null" | "Null" | "NULL")
}

/// One Kubernetes object: a DNSEndpoint, a list of objects, or something skipped.
/// `item` is the index within a list.
fn parse_object(cx: &Doc<'_>, map: &MarkedMappingNode, item: Option<usize>, out: &mut ParsedFile) {
    let kind_node = map.get_scalar("kind");
    let kind = kind_node.map(|k| k.as_str().trim()).unwrap_or("");
    let doc_line = cx.line(map.span());
    let metadata = map.get_mapping("metadata");
    let meta = |key: &str| {
        metadata
            .and_then(|m| scalar(m, key))
            .map(|s| s.as_str().trim().to_string())
    };
    let resource = match meta("name") {
        Some(name) => format!(
            "DNSEndpoint {}/{name}",
            meta("namespace").unwrap_or_else(|| "default".into())
        ),
        None => match item {
            None => format!("DNSEndpoint {}#{}", cx.label, cx.number),
            Some(i) => format!("DNSEndpoint {}#{}.{}", cx.label, cx.number, i + 1),
        },
    };

    if item.is_none() && (kind == "List" || kind == "DNSEndpointList") {
        match map.get_node("items") {
            Some(Node::Sequence(items)) => {
                for (i, it) in items.iter().enumerate() {
                    match it.as_mapping() {
                        Some(m) => parse_object(cx, m, Some(i), out),
                        None => out.errors.push(file_error(
                            cx.label,
                            cx.line(it.span()),
                            format!("{kind} item {} is not an object", i + 1),
                        )),
                    }
                }
            }
            Some(Node::Scalar(s)) if is_null(s) => {}
            None => {}
            Some(other) => out.errors.push(file_error(
                cx.label,
                cx.line(other.span()),
                "items must be a list".into(),
            )),
        }
        return;
    }

    let spec_endpoints = map
        .get_mapping("spec")
        .and_then(|s| s.get_node("endpoints"))
        .is_some();
    if kind != "DNSEndpoint" {
        if spec_endpoints {
            // Most likely a misspelt kind: say so, and keep what this resource had.
            let line = kind_node.and_then(|k| cx.line(k.span())).or(doc_line);
            let start = out.errors.len();
            let shown = if kind.is_empty() {
                "missing".to_string()
            } else {
                format!("{kind:?}")
            };
            out.errors.push(file_error(
                cx.label,
                line,
                format!("the document has spec.endpoints but its kind is {shown}, not \"DNSEndpoint\"; its endpoints are not used"),
            ));
            out.rejected.push(Rejected {
                what: RejectedWhat::Resource(resource),
                errors: start..out.errors.len(),
            });
        } else {
            tracing::debug!(
                file = cx.label,
                document = cx.number,
                kind,
                "skipping a document that is not a DNSEndpoint"
            );
        }
        return;
    }

    let broken = |out: &mut ParsedFile, line: Option<usize>, message: String| {
        let start = out.errors.len();
        out.errors.push(file_error(cx.label, line, message));
        out.rejected.push(Rejected {
            what: RejectedWhat::Resource(resource.clone()),
            errors: start..out.errors.len(),
        });
    };
    let spec = match map.get_node("spec") {
        Some(Node::Mapping(spec)) => spec,
        None => return broken(out, doc_line, format!("{resource}: spec is missing")),
        Some(other) => {
            return broken(
                out,
                cx.line(other.span()),
                format!("{resource}: spec must be a mapping"),
            );
        }
    };
    let endpoints = match spec.get_node("endpoints") {
        Some(Node::Sequence(eps)) => eps,
        Some(Node::Scalar(s)) if is_null(s) => return,
        None => {
            return broken(
                out,
                cx.line(spec.span()).or(doc_line),
                format!("{resource}: spec.endpoints is missing (write `endpoints: []` for none)"),
            );
        }
        Some(other) => {
            return broken(
                out,
                cx.line(other.span()),
                format!("{resource}: spec.endpoints must be a list"),
            );
        }
    };
    for (index, node) in endpoints.iter().enumerate() {
        let slot = Slot {
            resource: resource.clone(),
            index,
        };
        parse_endpoint(cx, node, slot, out);
    }
}

fn parse_endpoint(cx: &Doc<'_>, node: &Node, slot: Slot, out: &mut ParsedFile) {
    let start = out.errors.len();
    let ep_line = cx.line(node.span());
    let Some(ep) = node.as_mapping() else {
        out.errors.push(file_error(
            cx.label,
            ep_line,
            "an endpoint must be a mapping (dnsName, recordType, targets)".into(),
        ));
        out.rejected.push(Rejected {
            what: RejectedWhat::Endpoint { key: None, slot },
            errors: start..out.errors.len(),
        });
        return;
    };
    let line_of = |key: &str| ep.get_node(key).and_then(|n| cx.line(n.span())).or(ep_line);
    let mut problems: Vec<(Option<usize>, String)> = Vec::new();

    let raw_name = scalar(ep, "dnsName").map(|s| s.as_str().trim());
    let name = match raw_name {
        None => {
            problems.push((line_of("dnsName"), missing_or_not_text(ep, "dnsName")));
            None
        }
        Some(raw) => match Name::parse(raw) {
            Ok(n) => Some(n),
            Err(e) => {
                problems.push((line_of("dnsName"), e.to_string()));
                None
            }
        },
    };
    let raw_type = scalar(ep, "recordType").map(|s| s.as_str().trim());
    let rtype = match raw_type {
        None => {
            problems.push((line_of("recordType"), missing_or_not_text(ep, "recordType")));
            None
        }
        Some(raw) => match RecordType::parse(raw) {
            Ok(t) => Some(t),
            Err(e) => {
                problems.push((line_of("recordType"), e.to_string()));
                None
            }
        },
    };
    let record = match (&name, raw_name) {
        (Some(n), _) => n.to_string(),
        (None, Some(raw)) => raw.to_string(),
        (None, None) => String::new(),
    };
    let record = match (rtype, raw_type) {
        (Some(t), _) => format!("{record} {t}"),
        (None, Some(raw)) => format!("{record} {raw}"),
        (None, None) => record,
    }
    .trim()
    .to_string();

    if let Some(id) = scalar(ep, "setIdentifier") {
        problems.push((
            cx.line(id.span()).or(ep_line),
            "setIdentifier (routing policies) is not supported; the endpoint is not used".into(),
        ));
    }

    let ttl = match scalar(ep, "recordTTL") {
        None => None,
        Some(s) => match s.as_str().trim().parse::<i64>() {
            Ok(0) => None,
            Ok(t) if t < 0 => {
                problems.push((cx.line(s.span()), format!("recordTTL {t} is negative")));
                None
            }
            Ok(t) => match u32::try_from(t).ok().filter(|t| *t <= MAX_TTL) {
                Some(t) => Some(t),
                None => {
                    problems.push((
                        cx.line(s.span()),
                        format!("recordTTL {t} is above the maximum of {MAX_TTL} seconds"),
                    ));
                    None
                }
            },
            Err(_) => {
                problems.push((
                    cx.line(s.span()),
                    format!(
                        "recordTTL {:?} is not a whole number of seconds",
                        s.as_str()
                    ),
                ));
                None
            }
        },
    };

    let mut values = Vec::new();
    match ep.get_node("targets") {
        None => problems.push((
            ep_line,
            "targets is missing: an endpoint needs at least one target".into(),
        )),
        Some(Node::Scalar(s)) if is_null(s) => {
            problems.push((
                cx.line(s.span()).or(ep_line),
                "targets is empty: an endpoint needs at least one target".into(),
            ));
        }
        Some(Node::Sequence(targets)) if targets.is_empty() => {
            problems.push((
                line_of("targets"),
                "targets is empty: an endpoint needs at least one target".into(),
            ));
        }
        Some(Node::Sequence(targets)) => {
            for t in targets.iter() {
                let line = cx.line(t.span()).or(ep_line);
                let Some(raw) = t.as_scalar() else {
                    problems.push((line, "a target must be a string".into()));
                    continue;
                };
                let Some(rtype) = rtype else { continue };
                match canonicalize(rtype, raw.as_str()) {
                    Ok(v) => values.push(v),
                    Err(ModelError::Value { value, problem, .. }) => {
                        problems.push((line, format!("target {value:?}: {problem}")));
                    }
                    Err(e) => problems.push((line, format!("target {:?}: {e}", raw.as_str()))),
                }
            }
            values.sort();
            values.dedup();
            if rtype == Some(RecordType::Cname) && values.len() > 1 {
                problems.push((
                    line_of("targets"),
                    format!("a CNAME holds exactly one target, not {}", values.len()),
                ));
            }
            if values.len() > MAX_VALUES {
                problems.push((
                    line_of("targets"),
                    format!("{} targets, above the limit of {MAX_VALUES}", values.len()),
                ));
            }
        }
        Some(other) => problems.push((
            cx.line(other.span()).or(ep_line),
            "targets must be a list of strings".into(),
        )),
    }

    match (name, rtype) {
        (Some(name), Some(rtype)) if problems.is_empty() => out.accepted.push(Accepted {
            entry: DesiredEntry {
                name,
                rtype,
                ttl,
                values,
                origin: Origin {
                    source: SOURCE_KIND.into(),
                    location: location(cx.label, ep_line),
                    resource: slot.resource.clone(),
                },
            },
            slot,
        }),
        (name, rtype) => {
            for (line, message) in problems {
                out.errors.push(SourceError {
                    source: SOURCE_KIND.into(),
                    location: location(cx.label, line),
                    record: record.clone(),
                    message,
                });
            }
            let key = name.zip(rtype);
            out.rejected.push(Rejected {
                what: RejectedWhat::Endpoint { key, slot },
                errors: start..out.errors.len(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    /// (name, type, values) of each entry, for compact assertions.
    fn keys(entries: &[DesiredEntry]) -> Vec<(String, &'static str, Vec<String>)> {
        entries
            .iter()
            .map(|e| (e.name.to_string(), e.rtype.as_str(), e.values.clone()))
            .collect()
    }

    fn entry(
        name: &str,
        rtype: &'static str,
        values: &[&str],
    ) -> (String, &'static str, Vec<String>) {
        (
            name.to_string(),
            rtype,
            values.iter().map(|v| v.to_string()).collect(),
        )
    }

    fn endpoint_file(endpoints: &[(&str, &str, &str)]) -> String {
        let mut s = String::from(
            "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: web\nspec:\n  endpoints:\n",
        );
        for (name, rtype, target) in endpoints {
            s.push_str(&format!("    - dnsName: {name}\n      recordType: {rtype}\n      targets:\n        - \"{target}\"\n"));
        }
        s
    }

    const MULTI: &str = "\
# not a DNSEndpoint
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
data: {a: b}
---
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSEndpoint
metadata:
  name: web
  namespace: prod
spec:
  endpoints:
    - dnsName: WWW.Example.com
      recordType: a
      recordTTL: 300
      targets: [\"192.0.2.2\", \" 192.0.2.1\", \"192.0.2.2\"]
      labels: {owner: x}
      providerSpecific: [{name: a, value: b}]
    - dnsName: shop.example.com
      recordType: CNAME
      targets: [www.example.com]
---
kind: DNSEndpoint
metadata: {name: txt}
spec:
  endpoints:
  - dnsName: example.com
    recordType: TXT
    recordTTL: 0
    targets: [\"v=spf1 -all\"]
...
";

    #[test]
    fn parses_multi_document_files_and_skips_other_kinds() {
        let (entries, errors) = parse_manifests("web.yaml", MULTI);
        assert_eq!(errors, vec![]);
        assert_eq!(
            keys(&entries),
            vec![
                entry("www.example.com.", "A", &["192.0.2.1", "192.0.2.2"]),
                entry("shop.example.com.", "CNAME", &["www.example.com."]),
                entry("example.com.", "TXT", &["\"v=spf1 -all\""]),
            ]
        );
        assert_eq!(entries[0].ttl, Some(300));
        assert_eq!(entries[1].ttl, None);
        assert_eq!(
            entries[2].ttl, None,
            "recordTTL 0 means unset, as in external-dns"
        );
        let origins: Vec<(&str, &str, &str)> = entries
            .iter()
            .map(|e| {
                (
                    e.origin.source.as_str(),
                    e.origin.location.as_str(),
                    e.origin.resource.as_str(),
                )
            })
            .collect();
        assert_eq!(
            origins,
            vec![
                ("file", "web.yaml:15", "DNSEndpoint prod/web"),
                ("file", "web.yaml:21", "DNSEndpoint prod/web"),
                ("file", "web.yaml:29", "DNSEndpoint default/txt"),
            ]
        );
    }

    #[test]
    fn list_objects_are_read_item_by_item() {
        let text = "kind: List\nitems:\n  - kind: DNSEndpoint\n    metadata: {name: a}\n    spec:\n      endpoints:\n        - {dnsName: a.example.com, recordType: AAAA, targets: [\"2001:DB8::1\"]}\n  - kind: Service\n    metadata: {name: s}\n";
        let (entries, errors) = parse_manifests("l.yaml", text);
        assert_eq!(errors, vec![]);
        assert_eq!(
            keys(&entries),
            vec![entry("a.example.com.", "AAAA", &["2001:db8::1"])]
        );
        assert_eq!(entries[0].origin.location, "l.yaml:7");
        assert_eq!(entries[0].origin.resource, "DNSEndpoint default/a");
    }

    #[test]
    fn malformed_yaml_reports_the_parsers_line_in_the_file() {
        // The error is in the second document, so its line must be mapped back.
        let text = "\
kind: DNSEndpoint
metadata: {name: a}
spec:
  endpoints:
    - dnsName: a.example.com
      recordType: A
      targets: [192.0.2.1]
---
kind: DNSEndpoint
metadata: {name: b}
spec:
  endpoints:
    - dnsName: b.example.com
      recordType: A: B
      targets: [192.0.2.2]
";
        let (entries, errors) = parse_manifests("bad.yaml", text);
        assert_eq!(entries, vec![], "a file with a YAML error is not used");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].location, "bad.yaml:14");
        assert_eq!(errors[0].record, "");
        assert!(
            errors[0]
                .message
                .starts_with("invalid YAML: mapping values are not allowed"),
            "{}",
            errors[0]
        );

        let (_, errors) = parse_manifests(
            "dup.yaml",
            "kind: DNSEndpoint\nmetadata: {name: a}\nkind: Other\n",
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].location, "dup.yaml:3");
        assert!(
            errors[0]
                .message
                .contains("duplicate key \"kind\" (first at line 1)"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn bad_target_reports_its_own_line() {
        let text = "\
kind: DNSEndpoint
metadata: {name: web}
spec:
  endpoints:
    - dnsName: app.example.com
      recordType: A
      targets:
        - 192.0.2.10
        - 300.1.1.1
    - dnsName: www.example.com
      recordType: A
      targets: [192.0.2.20]
";
        let (entries, errors) = parse_manifests("deploy/examples/desired/web.yaml", text);
        assert_eq!(
            keys(&entries),
            vec![entry("www.example.com.", "A", &["192.0.2.20"])]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "deploy/examples/desired/web.yaml:9: app.example.com. A: target \"300.1.1.1\": not a valid IPv4 address"
        );
        assert_eq!(errors[0].source, "file");
        assert_eq!(errors[0].record, "app.example.com. A");
    }

    #[test]
    fn every_problem_names_its_line() {
        let text = "\
kind: DNSEndpoint
metadata: {name: web}
spec:
  endpoints:
    - recordType: A
      targets: [192.0.2.1]
    - dnsName: a.example.com
      targets: [192.0.2.1]
    - dnsName: b.example.com
      recordType: PTR
      targets: [x.example.com]
    - dnsName: c.example.com
      recordType: A
      recordTTL: 4294967296
      targets: [192.0.2.1]
    - dnsName: d.example.com
      recordType: A
      targets: []
    - dnsName: e.example.com
      recordType: A
      setIdentifier: eu
      targets: [192.0.2.1]
    - dnsName: f.example.com
      recordType: CNAME
      targets: [x.example.com, y.example.com]
    - dnsName: g..example.com
      recordType: A
      targets: [192.0.2.1]
    - dnsName: h.example.com
      recordType: MX
      targets: [\"10 mail.example.com\"]
      recordTTL: -5
    - dnsName: ok.example.com
      recordType: MX
      targets: [\"10 Mail.Example.com\"]
";
        let (entries, errors) = parse_manifests("e.yaml", text);
        assert_eq!(
            keys(&entries),
            vec![entry("ok.example.com.", "MX", &["10 mail.example.com."])]
        );
        let got: Vec<(&str, &str)> = errors
            .iter()
            .map(|e| (e.location.as_str(), e.record.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("e.yaml:5", "A"),
                ("e.yaml:7", "a.example.com."),
                ("e.yaml:10", "b.example.com. PTR"),
                ("e.yaml:14", "c.example.com. A"),
                ("e.yaml:18", "d.example.com. A"),
                ("e.yaml:21", "e.example.com. A"),
                ("e.yaml:25", "f.example.com. CNAME"),
                ("e.yaml:26", "g..example.com A"),
                ("e.yaml:32", "h.example.com. MX"),
            ]
        );
        let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(messages[0], "dnsName is missing");
        assert_eq!(messages[1], "recordType is missing");
        assert!(
            messages[2].starts_with("unsupported record type \"PTR\""),
            "{}",
            messages[2]
        );
        assert_eq!(
            messages[3],
            "recordTTL 4294967296 is above the maximum of 2147483647 seconds"
        );
        assert_eq!(
            messages[4],
            "targets is empty: an endpoint needs at least one target"
        );
        assert!(messages[5].starts_with("setIdentifier"), "{}", messages[5]);
        assert_eq!(messages[6], "a CNAME holds exactly one target, not 2");
        assert!(messages[7].contains("empty label"), "{}", messages[7]);
        assert_eq!(messages[8], "recordTTL -5 is negative");
    }

    #[test]
    fn wrong_shapes_are_errors_and_null_endpoints_are_none() {
        let text = "kind: DNSEndpoint\nmetadata: {name: a}\nspec:\n  endpoints:\n    - dnsName: {x: 1}\n      recordType: A\n      targets: 192.0.2.1\n---\nkind: DNSEndpoint\nmetadata: {name: b}\nspec:\n  endpoints: ~\n";
        let (entries, errors) = parse_manifests("s.yaml", text);
        assert_eq!(entries, vec![]);
        let got: Vec<(&str, &str)> = errors
            .iter()
            .map(|e| (e.location.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("s.yaml:5", "dnsName must be a string"),
                ("s.yaml:7", "targets must be a list of strings")
            ]
        );
    }

    #[test]
    fn misspelt_kind_is_an_error_other_kinds_are_skipped() {
        let text = "kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n---\nkind: DNSEndpoints\nmetadata: {name: web}\nspec:\n  endpoints: []\n";
        let (entries, errors) = parse_manifests("k.yaml", text);
        assert_eq!(entries, vec![]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].location, "k.yaml:5");
        assert!(
            errors[0].message.contains("kind is \"DNSEndpoints\""),
            "{}",
            errors[0]
        );
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
        let first = src.load();
        assert_eq!(first.errors, vec![]);
        assert_eq!(first.entries.len(), 2);

        fs::write(&path, format!("{good}    - dnsName: [unclosed\n")).unwrap();
        let broken = src.load();
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
        assert_eq!(src.load().entries, first.entries);

        fs::write(
            &path,
            endpoint_file(&[("app.example.com", "A", "192.0.2.11")]),
        )
        .unwrap();
        let fixed = src.load();
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
        assert_eq!(src.load().errors, vec![]);

        // A bad IP for app, a valid change for www.
        fs::write(
            &path,
            endpoint_file(&[
                ("app.example.com", "A", "300.1.1.1"),
                ("www.example.com", "A", "192.0.2.21"),
            ]),
        )
        .unwrap();
        let snap = src.load();
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
        let snap = src.load();
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
        let snap = src.load();
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
        let snap = src.load();
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
        let snap = FileSource::new([dir.path()]).load();
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
        let snap = src.load();
        assert_eq!(snap.entries.len(), 2);
        assert_eq!(snap.errors.len(), 1);
        assert_eq!(snap.errors[0].location, missing.display().to_string());
        assert_eq!(snap.errors[0].message, "path does not exist");

        fs::remove_file(&a).unwrap();
        let snap = src.load();
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
        let snap = FileSource::new([d.to_path_buf(), explicit]).load();
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
        let snap = FileSource::new([dir]).load();
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

    async fn next_matching(
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
        let handle =
            FileSource::new([dir.path()]).watch(Duration::from_millis(20), tx, cancel.clone());

        let initial = next_matching(&mut rx, "the initial snapshot", |_| true).await;
        assert_eq!(initial, Snapshot::default());

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

        fs::remove_file(&path).unwrap();
        let removed = next_matching(&mut rx, "no entries", |s| s.entries.is_empty()).await;
        assert_eq!(removed.errors, vec![]);

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
        assert_eq!(src.load().entries.len(), 1);
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
}
