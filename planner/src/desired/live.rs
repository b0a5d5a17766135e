//! A live source's change as a patch: a source that is read whole (Kubernetes,
//! NetBox) hands the planner every record at every change, yet one webhook changes one
//! object. Placing a whole snapshot again costs O(source) in the index (at 50,000
//! records, most of a rename's time); the patch between two snapshots costs O(change).
use super::{DesiredIndex, Touched};
use crate::source::{DesiredEntry, EntryKey, SourceError};

impl DesiredIndex {
    /// Changes part of what the live source `source` declares, as
    /// [`patch_source`](Self::patch_source) does, and replaces its own `errors`: the
    /// index then holds what [`update_source`](Self::update_source) with the whole new
    /// snapshot would give. `None`, with nothing changed, where a patch cannot stand for
    /// the snapshot: the source is unknown, some of its entries were refused (their
    /// errors belong to the whole snapshot), or some of the upserts are. The caller
    /// then updates the source whole. `entries`: the whole snapshot, which errors
    /// point into as the whole update's would.
    pub fn patch_live(
        &mut self,
        source: &str,
        (upserts, deletes): (&[DesiredEntry], &[EntryKey]),
        entries: &[DesiredEntry],
        errors: Vec<SourceError>,
    ) -> Option<Touched> {
        let source = self.interner.str(source);
        let held = self.sources.get(&source)?;
        if held.errors.len() != held.own_errors {
            return None;
        }
        let claims = self.claims(&source, upserts);
        if !claims.2.is_empty() {
            return None;
        }
        let touched = self.patch_claims(source.clone(), claims, entries, deletes);
        let contribution = self.sources.get_mut(&source)?;
        contribution.own_errors = errors.len();
        contribution.errors = errors;
        Some(touched)
    }
}
