//! The append-only JSONL audit file (`[audit] file`), rotated by size: when the next
//! events would take it past `max_bytes`, `file` becomes `file.1`, `file.1` becomes
//! `file.2`, … and `file.<keep>` is dropped. The events of one call go into one file
//! whole (never split by a rotation), each on its own line, written before the call
//! returns. Reading goes newest first: `file` from its end, then `file.1`, ….
use super::AuditEvent;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why the audit file cannot be opened, written, rotated or read (the path named).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditFileError {
    #[error("audit.file {path}: cannot open for appending: {source}")]
    Open {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("audit file {path}: cannot write: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("audit file {path}: cannot rotate: {source}")]
    Rotate {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("audit file {path}: cannot read: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The open audit file and its rotation settings.
#[derive(Debug)]
pub struct AuditFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    /// `None` after a failed rotation: the next append opens it again.
    file: Option<File>,
    size: u64,
}

impl AuditFile {
    /// Opens (or creates) `path` for appending: an error here is a configuration
    /// problem (a missing or unwritable directory).
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> Result<AuditFile, AuditFileError> {
        let file = open_append(path).map_err(|source| AuditFileError::Open {
            path: path.display().to_string(),
            source,
        })?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(AuditFile {
            path: path.to_path_buf(),
            max_bytes,
            keep,
            file: Some(file),
            size,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `file.n` (`n` = 0: the current file).
    pub fn rotated(&self, n: usize) -> PathBuf {
        rotated(&self.path, n)
    }

    /// Appends `events`, one JSON object a line, rotating first when they would take
    /// the file past `max_bytes` (a file that is still empty takes them however many).
    pub fn append(&mut self, events: &[AuditEvent]) -> Result<(), AuditFileError> {
        let mut buf = Vec::with_capacity(events.len() * 256);
        for e in events {
            // An event of strings always serializes.
            if serde_json::to_writer(&mut buf, e).is_ok() {
                buf.push(b'\n');
            }
        }
        if self.file.is_none() {
            // A failed write or rotation before: open again, as the file is now.
            let f = open_append(&self.path).map_err(|source| AuditFileError::Write {
                path: self.path.display().to_string(),
                source,
            })?;
            self.size = f.metadata().map(|m| m.len()).unwrap_or(0);
            self.file = Some(f);
        }
        if self.size > 0 && self.size + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let file = self.file.as_mut().expect("opened above");
        file.write_all(&buf)
            .map_err(|source| AuditFileError::Write {
                path: self.path.display().to_string(),
                source,
            })?;
        self.size += buf.len() as u64;
        Ok(())
    }

    /// `file` → `file.1` → … → `file.<keep>`; the oldest beyond `keep` is dropped.
    fn rotate(&mut self) -> Result<(), AuditFileError> {
        let err = |source| AuditFileError::Rotate {
            path: self.path.display().to_string(),
            source,
        };
        // A file that is gone (removed by hand) has nothing to move.
        let gone = |r: std::io::Result<()>| match r {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        self.file = None;
        if self.keep == 0 {
            gone(std::fs::remove_file(&self.path)).map_err(err)?;
        } else {
            for n in (1..self.keep).rev() {
                let from = rotated(&self.path, n);
                gone(std::fs::rename(&from, rotated(&self.path, n + 1))).map_err(err)?;
            }
            gone(std::fs::rename(&self.path, rotated(&self.path, 1))).map_err(err)?;
        }
        self.file = Some(open_append(&self.path).map_err(err)?);
        self.size = 0;
        Ok(())
    }

    /// The events `wanted` keeps, newest first, at most `limit`: the current file from
    /// its end, then the rotated ones. A line that is not an event (one cut short by a
    /// crash) is skipped and counted in the second value.
    pub fn read_newest_first(
        &self,
        wanted: impl Fn(&AuditEvent) -> bool,
        limit: usize,
    ) -> Result<(Vec<AuditEvent>, usize), AuditFileError> {
        let mut out = Vec::new();
        let mut skipped = 0;
        for n in 0..=self.keep {
            let path = rotated(&self.path, n);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(AuditFileError::Read {
                        path: path.display().to_string(),
                        source,
                    });
                }
            };
            for line in text.lines().rev().filter(|l| !l.trim().is_empty()) {
                match serde_json::from_str::<AuditEvent>(line) {
                    Ok(e) if wanted(&e) => {
                        out.push(e);
                        if out.len() >= limit {
                            return Ok((out, skipped));
                        }
                    }
                    Ok(_) => {}
                    Err(_) => skipped += 1,
                }
            }
        }
        Ok((out, skipped))
    }
}

fn rotated(path: &Path, n: usize) -> PathBuf {
    if n == 0 {
        return path.to_path_buf();
    }
    let mut s = path.as_os_str().to_os_string();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: usize) -> AuditEvent {
        AuditEvent {
            time: format!("t{i}"),
            event: super::super::OUTCOME.into(),
            zone: "example.com".into(),
            account: String::new(),
            name: format!("r{i}.example.com"),
            rtype: "A".into(),
            old: String::new(),
            new: "300 192.0.2.1".into(),
            change: "create".into(),
            outcome: "APPLIED".into(),
            reason: String::new(),
            batch_id: format!("b{i}"),
            trace_id: String::new(),
            source: "file:0".into(),
            caller: String::new(),
        }
    }

    fn line_len() -> u64 {
        serde_json::to_string(&event(0)).unwrap().len() as u64 + 1
    }

    fn lines(p: &Path) -> Vec<AuditEvent> {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a whole event a line"))
            .collect()
    }

    #[test]
    fn rotates_at_max_bytes_and_keeps_keep_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        // Room for 3 events a file.
        let mut f = AuditFile::open(&path, line_len() * 3, 2).unwrap();
        for i in 0..10 {
            f.append(&[event(i)]).unwrap();
        }
        // 10 events: current holds 9, .1 holds 6..8, .2 holds 3..5; 0..2 dropped.
        let names = |p: &Path| lines(p).into_iter().map(|e| e.time).collect::<Vec<_>>();
        assert_eq!(names(&path), ["t9"]);
        assert_eq!(names(&f.rotated(1)), ["t6", "t7", "t8"]);
        assert_eq!(names(&f.rotated(2)), ["t3", "t4", "t5"]);
        assert!(!f.rotated(3).exists(), "keep = 2 keeps two rotated files");
        for n in 0..=2 {
            let size = std::fs::metadata(f.rotated(n)).unwrap().len();
            assert!(size <= line_len() * 3, "file.{n} is {size} bytes");
        }
    }

    #[test]
    fn no_event_is_lost_or_split_across_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = AuditFile::open(&path, line_len() * 4, 10).unwrap();
        let mut n = 0;
        // Calls of 1, 2, 3 events: a call that does not fit goes whole to a new file.
        for size in [1, 2, 3, 1, 2, 3, 3] {
            let batch: Vec<_> = (n..n + size).map(event).collect();
            n += size;
            f.append(&batch).unwrap();
        }
        let mut all = Vec::new();
        for k in (0..=10).rev() {
            all.extend(lines(&f.rotated(k)));
        }
        let times: Vec<_> = all.iter().map(|e| e.time.clone()).collect();
        let want: Vec<_> = (0..n).map(|i| format!("t{i}")).collect();
        assert_eq!(times, want, "every event once, in order");
        // [0] [1,2] fit 3 lines; [3,4,5] rotates; [6] fits; [7,8] rotates...
        assert_eq!(lines(&f.rotated(0)).len(), 3, "the last call alone");
    }

    #[test]
    fn reads_newest_first_across_rotated_files_with_a_filter_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = AuditFile::open(&path, line_len() * 2, 5).unwrap();
        for i in 0..9 {
            f.append(&[event(i)]).unwrap();
        }
        // A line cut short by a crash is skipped, not fatal.
        std::fs::OpenOptions::new()
            .append(true)
            .open(f.rotated(1))
            .unwrap()
            .write_all(b"{\"time\":\"cut")
            .unwrap();
        let (all, skipped) = f.read_newest_first(|_| true, 100).unwrap();
        let times: Vec<_> = all.iter().map(|e| e.time.as_str()).collect();
        assert_eq!(
            times,
            ["t8", "t7", "t6", "t5", "t4", "t3", "t2", "t1", "t0"]
        );
        assert_eq!(skipped, 1);
        let (even, _) = f
            .read_newest_first(
                |e| e.name.trim_start_matches('r').starts_with(['0', '2', '4']),
                2,
            )
            .unwrap();
        let times: Vec<_> = even.iter().map(|e| e.time.as_str()).collect();
        assert_eq!(times, ["t4", "t2"], "the filter, then the limit");
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_key_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("audit.jsonl");
        let err = AuditFile::open(&path, 100, 1).unwrap_err().to_string();
        assert!(err.starts_with("audit.file "), "{err}");
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn keep_zero_starts_the_file_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut f = AuditFile::open(&path, line_len(), 0).unwrap();
        f.append(&[event(0)]).unwrap();
        f.append(&[event(1)]).unwrap();
        assert_eq!(lines(&path).len(), 1);
        assert!(!f.rotated(1).exists());
    }
}
