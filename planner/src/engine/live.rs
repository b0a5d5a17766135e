//! Live sources (Kubernetes, NetBox) put in force by what changed: each hands over its
//! whole state at every change, and its task keeps a fingerprint of each entry it last
//! put in force, so that a one-object change costs the index O(change) instead of
//! O(source). A fingerprint, not the entry: a copy of every entry cost about 480 bytes
//! an entry (24 MiB at NetBox's 50,000 addresses); a key and 128 bits cost 2 MiB there.
use super::Engine;
use super::patch::Patch;
use crate::events;
use crate::source::{DesiredEntry, EntryKey, SourceError};
use std::collections::{HashMap, HashSet};

/// What a live source last put in force: each key's entry's fingerprint (the
/// source's task keeps it).
#[derive(Debug, Default)]
pub struct LastPut {
    entries: Option<HashMap<EntryKey, Fingerprint>>,
}

/// 128 bits of an entry (all of it: data, labels, origin): two entries that differ
/// have the same one by chance with odds of 2^-128, where the patch would miss the
/// change.
pub(crate) type Fingerprint = u128;

/// `entry`'s [`Fingerprint`]: two SipHashes of it under different prefixes.
pub(crate) fn fingerprint(entry: &DesiredEntry) -> Fingerprint {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let half = |prefix: u8| {
        let mut h = DefaultHasher::new();
        prefix.hash(&mut h);
        entry.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

impl LastPut {
    /// Nothing put in force yet: the next snapshot is the source's first.
    pub fn is_empty(&self) -> bool {
        self.entries.is_none()
    }
}

/// How a snapshot went into force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// Whole: the first, a large change, one the index could not take as a patch,
    /// or any in an engine with views.
    Whole,
    /// As the patch of what changed: `changed` upserts and deletes.
    Patch { changed: usize },
}

impl Engine {
    /// Puts a live source's new snapshot in force: as the patch from what it last put
    /// in force (`last`) where that is small and the index can take it as one
    /// ([`crate::desired::DesiredIndex::patch_live`]), whole otherwise. The index ends
    /// the same either way.
    pub fn put_live_source(
        &self,
        name: &str,
        entries: Vec<DesiredEntry>,
        errors: Vec<SourceError>,
        last: &mut LastPut,
    ) -> Put {
        let patched = Engine::cpu(|| {
            let held = last.entries.as_ref()?;
            if self.views_apply(name, &entries) {
                return None;
            }
            let patch = live_patch(held, &entries)?;
            let changed = patch.upserts.len() + patch.deletes.len();
            let touched = self
                .desired
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .patch_live(
                    name,
                    (&patch.upserts, &patch.deletes),
                    &entries,
                    errors.clone(),
                )?;
            events::DesiredRecordsRejected { errors: &errors }.emit();
            self.wake(touched);
            Some((patch, changed))
        });
        match patched {
            Some((patch, changed)) => {
                let held = last.entries.get_or_insert_with(HashMap::new);
                for key in patch.deletes {
                    held.remove(&key);
                }
                for e in &patch.upserts {
                    held.insert(e.entry_key(), fingerprint(e));
                }
                Put::Patch { changed }
            }
            None => {
                last.entries = Some(by_key(&entries));
                self.set_source(name, entries, errors);
                Put::Whole
            }
        }
    }
}

/// The fingerprints of `entries` by key, the first of each key: the one the index
/// holds ([`crate::desired::DesiredIndex::update_source`] keeps the first and reports
/// the others).
pub(crate) fn by_key(entries: &[DesiredEntry]) -> HashMap<EntryKey, Fingerprint> {
    let mut out = HashMap::with_capacity(entries.len());
    for e in entries {
        out.entry(e.entry_key()).or_insert_with(|| fingerprint(e));
    }
    out
}

/// The patch that takes a live source from `last` (what it put in force, by key) to
/// `entries`; `None` where it is larger than a quarter of the source (the whole update
/// is then about as cheap), or where `entries` declare a key twice (the whole update
/// keeps the first and reports the others).
pub(crate) fn live_patch(
    last: &HashMap<EntryKey, Fingerprint>,
    entries: &[DesiredEntry],
) -> Option<Patch> {
    let most = entries.len().max(last.len()) / 4 + 1;
    let mut seen = HashSet::with_capacity(entries.len());
    let mut patch = Patch::default();
    for e in entries {
        let key = e.entry_key();
        if last.get(&key) != Some(&fingerprint(e)) {
            patch.upserts.push(e.clone());
        }
        if !seen.insert(key) || patch.upserts.len() > most {
            return None;
        }
    }
    for key in last.keys() {
        if !seen.contains(key) {
            patch.deletes.push(key.clone());
            if patch.upserts.len() + patch.deletes.len() > most {
                return None;
            }
        }
    }
    Some(patch)
}
