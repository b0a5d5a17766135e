//! The durable desired state: what each source last had accepted, kept under the
//! planner's `state_dir` so that a restart with a broken file, or after pushes,
//! deletes nothing.
//!
//! One file per source (`<state_dir>/desired/<hash of the source key>.json`), replaced
//! whole on every accepted change by write-to-temporary, `fsync`, `rename`, `fsync` of
//! the directory: a `kill -9` at any point leaves either the previous or the new state,
//! never a torn one. A source's state is only ever replaced whole, so a per-source file
//! is all the transaction this needs; unlike an embedded database (redb, sled) it takes
//! no process-wide lock, so a standby planner sharing the state directory (see the
//! lease) can read it, and it costs no dependency.
//!
//! A write that fails is an error the caller must act on: the new state is then not
//! acknowledged (a push answers `UNAVAILABLE`; a file source keeps its previous state).
use serde::{Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of the store. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a desired-state file this planner can read: {message}")]
    Corrupt { path: PathBuf, message: String },
}

/// The on-disk envelope of one source's state.
#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope<T> {
    version: u32,
    key: String,
    state: T,
}

const VERSION: u32 = 1;

/// The durable desired state of every source.
#[derive(Debug, Clone)]
pub struct DesiredStore {
    dir: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl DesiredStore {
    /// Opens (creating it if needed) the store under `state_dir`, and checks that it
    /// can be written, so that a read-only or missing volume fails at start, not at the
    /// first push.
    pub fn open(state_dir: &Path) -> Result<DesiredStore, StoreError> {
        let dir = state_dir.join("desired");
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let probe = dir.join(".write-probe");
        fs::write(&probe, b"ok").map_err(io(&probe))?;
        fs::remove_file(&probe).map_err(io(&probe))?;
        Ok(DesiredStore { dir })
    }

    fn path(&self, key: &str) -> PathBuf {
        let h = Sha256::digest(key.as_bytes());
        let name: String = h[..10].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// Replaces `key`'s state, durably, before returning.
    pub fn put<T: Serialize>(&self, key: &str, state: &T) -> Result<(), StoreError> {
        let path = self.path(key);
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(&Envelope {
            version: VERSION,
            key: key.to_string(),
            state,
        })
        .map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        {
            let mut f = File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&bytes).map_err(io(&tmp))?;
            f.sync_all().map_err(io(&tmp))?;
        }
        fs::rename(&tmp, &path).map_err(io(&path))?;
        // The rename itself is durable only once the directory is.
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))?;
        Ok(())
    }

    /// `key`'s last stored state, if any.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        let path = self.path(key);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path)(e)),
        };
        let env: Envelope<T> = decode(&path, &bytes)?;
        Ok(Some(env.state))
    }

    /// Every stored state whose key starts with `prefix`, by key.
    pub fn all<T: DeserializeOwned>(&self, prefix: &str) -> Result<Vec<(String, T)>, StoreError> {
        let mut out = Vec::new();
        let mut paths: Vec<PathBuf> = fs::read_dir(&self.dir)
            .map_err(io(&self.dir))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let bytes = fs::read(&path).map_err(io(&path))?;
            // Parsed once; only the states under `prefix` are then read as `T`.
            let env: Envelope<serde_json::Value> = decode(&path, &bytes)?;
            if env.key.starts_with(prefix) {
                let state = T::deserialize(env.state).map_err(|e| StoreError::Corrupt {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                out.push((env.key, state));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

fn decode<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<Envelope<T>, StoreError> {
    let env: Envelope<T> = serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if env.version != VERSION {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            message: format!(
                "format version {} (this planner reads {VERSION})",
                env.version
            ),
        });
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_all_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(store.get::<Vec<String>>("push:a").unwrap(), None);
        store.put("push:a", &vec!["x".to_string()]).unwrap();
        store.put("push:b", &vec!["y".to_string()]).unwrap();
        store.put("file:/p", &7u32).unwrap();
        store.put("push:a", &vec!["z".to_string()]).unwrap();
        assert_eq!(
            store.get::<Vec<String>>("push:a").unwrap(),
            Some(vec!["z".to_string()])
        );
        let pushes: Vec<(String, Vec<String>)> = store.all("push:").unwrap();
        assert_eq!(
            pushes,
            vec![
                ("push:a".to_string(), vec!["z".to_string()]),
                ("push:b".to_string(), vec!["y".to_string()]),
            ]
        );
        // A reopened store sees the same; no temporary files are left behind.
        let again = DesiredStore::open(dir.path()).unwrap();
        assert_eq!(again.get::<u32>("file:/p").unwrap(), Some(7));
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("desired"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn a_torn_temporary_is_ignored_and_a_corrupt_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = DesiredStore::open(dir.path()).unwrap();
        store.put("push:a", &1u32).unwrap();
        // A crash between write and rename leaves only a temporary file.
        fs::write(store.path("push:a").with_extension("json.tmp"), b"{\"vers").unwrap();
        assert_eq!(store.get::<u32>("push:a").unwrap(), Some(1));
        fs::write(store.path("push:b"), b"garbage").unwrap();
        let e = store.get::<u32>("push:b").unwrap_err().to_string();
        assert!(
            e.contains(".json") && e.contains("not a desired-state file"),
            "{e}"
        );
    }

    #[test]
    fn an_unwritable_state_dir_fails_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        fs::write(&file, b"x").unwrap();
        let e = DesiredStore::open(&file).unwrap_err().to_string();
        assert!(e.contains("not-a-dir"), "{e}");
    }
}
