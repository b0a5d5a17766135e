//! A patch of a pushed source, and how it applies: the one rule that the engine's
//! intake and the push stores (state directory, Redis) both follow, so that a journal
//! replayed after a restart or a takeover gives what was acknowledged.
use crate::source::{DesiredEntry, EntryKey};

/// A change of part of a pushed source: `upserts` replace or add the entries at their
/// (name, type), `deletes` withdraw them; the rest of the source stays.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Patch {
    pub upserts: Vec<DesiredEntry>,
    pub deletes: Vec<EntryKey>,
}

/// What a patch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patched {
    /// Deletes that matched an entry of the source.
    pub deleted: usize,
    /// Entries of the source after the patch.
    pub records: usize,
}

/// A pushed source's snapshot with its journaled patches applied, in order.
pub(super) fn replay(entries: Vec<DesiredEntry>, patches: &[Patch]) -> Vec<DesiredEntry> {
    patches
        .iter()
        .fold(entries, |entries, patch| merge(entries, patch).0)
}

/// `current` with `patch` applied, in order (an upsert of a new key goes last), and
/// how many deletes matched. A patch names each key once (the service checks that).
pub(super) fn merge(current: Vec<DesiredEntry>, patch: &Patch) -> (Vec<DesiredEntry>, usize) {
    use std::collections::HashMap;
    let mut upserts: HashMap<EntryKey, &DesiredEntry> =
        patch.upserts.iter().map(|e| (e.entry_key(), e)).collect();
    let deletes: std::collections::HashSet<&EntryKey> = patch.deletes.iter().collect();
    let mut deleted = 0;
    let mut out = Vec::with_capacity(current.len() + upserts.len());
    for e in current {
        let key = e.entry_key();
        if deletes.contains(&key) {
            deleted += 1;
            continue;
        }
        match upserts.remove(&key) {
            Some(u) => out.push(u.clone()),
            None => out.push(e),
        }
    }
    // The new keys, in the order the patch gave them.
    out.extend(
        patch
            .upserts
            .iter()
            .filter(|e| upserts.contains_key(&e.entry_key()))
            .cloned(),
    );
    (out, deleted)
}
