//! A file that loses records is believed only once it has stayed that way.
//!
//! Most tools write a file in place: truncate, then write (`>` in a shell, `kubectl
//! get -o yaml > f`, many editors). A poll that falls between the two sees a file
//! with fewer documents, or none, and each record it lacks would be deleted, to be
//! created again at the next poll: about a second of NXDOMAIN for names nobody meant
//! to remove (issue 35). So when a poll finds that a file now yields fewer entries
//! than it last had accepted (or is gone), the file keeps its last accepted entries
//! until the same content (or absence) has been seen for the settle window; a file
//! that grows back meanwhile was never shrunk. Growth and edits are taken at once:
//! only removals wait, by one window. Writing aside and renaming (atomic) never shows
//! a partial file, and is still what the docs recommend.
use super::Old;
use super::scan::Stamp;
use crate::source::dnsendpoint::Accepted;
use crate::store::StoreError;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The least time a shrunk file must stay as it is before its removals count.
pub const SHRINK_SETTLE: Duration = Duration::from_secs(1);

/// The files whose shrink is not believed yet.
#[derive(Debug, Default)]
pub(super) struct Shrinks {
    /// How long a shrink must hold; `None`: believed at once (a single `load`, as at
    /// start and in tests that read once).
    window: Option<Duration>,
    /// Per file: the content it shrank to (`None`: gone) and when that was first seen.
    pending: HashMap<PathBuf, (Option<u64>, Instant)>,
}

impl Shrinks {
    /// Shrinks must hold for `window` from now on, unless a window was set before.
    pub(super) fn settle_unless_set(&mut self, window: Duration) {
        self.window.get_or_insert(window);
    }

    /// Whether a shrink is waiting: the files must be read again at the next poll even
    /// if they do not change, for the window to run out.
    pub(super) fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Puts back, in `good`, the last accepted entries of every file that now yields
    /// fewer (or is gone) and has not stayed so for the window. Returns the paths held.
    pub(super) fn hold(
        &mut self,
        good: &mut BTreeMap<PathBuf, Vec<Accepted>>,
        old: &Old<'_>,
        stamps: &HashMap<PathBuf, Stamp>,
    ) -> Result<Vec<PathBuf>, StoreError> {
        let Some(window) = self.window else {
            return Ok(Vec::new());
        };
        let now = Instant::now();
        let mut pending = HashMap::new();
        let mut held = Vec::new();
        for path in old.last.files.keys() {
            let after = good.get(path).map_or(0, Vec::len);
            if after >= old.count(path) {
                continue;
            }
            let content = good
                .contains_key(path)
                .then(|| stamps.get(path).map(|s| s.content))
                .flatten();
            let since = match self.pending.get(path) {
                Some(&(seen, since)) if seen == content => since,
                _ => now,
            };
            if now.duration_since(since) >= window {
                continue;
            }
            pending.insert(path.clone(), (content, since));
            good.insert(path.clone(), old.kept(path)?);
            held.push(path.clone());
        }
        self.pending = pending;
        Ok(held)
    }
}
