//! The desired state coming in: each source's snapshot, pushes and patches (persisted
//! before they are acknowledged, [`crate::store`]), restored at start, and each
//! source's readiness (no zone plans before every source has loaded once).
use super::patch::{Patch, Patched};
use super::pushes::PushStore;
use super::{Engine, lock};
use crate::desired::{Checked, DesiredIndex};
use crate::events;
use crate::source::{DesiredEntry, SourceError};
use crate::store::{DesiredStore, StoreError};
use dnsplane_common::RecordKey;
use std::collections::BTreeSet;

impl Engine {
    /// Replaces one source's snapshot in the desired state and wakes the zones whose
    /// desired records changed, telling each which names to re-plan. Costs
    /// O(size of this source), whatever the size of the world.
    pub fn set_source(&self, name: &str, entries: Vec<DesiredEntry>, errors: Vec<SourceError>) {
        events::DesiredRecordsRejected { errors: &errors }.emit();
        if self.views_apply(name, &entries) {
            self.set_source_in_views(name, &entries, errors);
            return;
        }
        let touched = Engine::cpu(|| {
            self.desired
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .update_source(name, &entries, errors)
        });
        self.wake(touched);
    }

    /// Tells the zones which of their names' desired records changed: every target
    /// of the zone without a view, since they share its desired state.
    pub(super) fn wake(&self, touched: crate::desired::Touched) {
        self.wake_view(None, touched);
    }

    /// Persists accepted pushes in `store` from now on (set once, before serving).
    pub fn set_store(&self, store: DesiredStore) {
        let _ = self.pushes.set(PushStore::Dir(store.clone()));
        let _ = self.store.set(store);
    }

    /// Persists accepted pushes in `pushes` rather than the state directory (`[lease]
    /// redis`: Redis); before [`Engine::set_store`].
    pub fn set_push_store(&self, pushes: PushStore) {
        let _ = self.pushes.set(pushes);
    }

    /// Replaces a pushed source's desired state, persisted first: an `Err` means
    /// nothing changed (the push must not be acknowledged). Off the runtime
    /// ([`Engine::cpu`]): persisting and indexing a large push take seconds.
    /// `checked`: the entries as the push's validation placed them, so that the index
    /// does not place them again.
    pub fn put_source(
        &self,
        name: &str,
        entries: Vec<DesiredEntry>,
        checked: Checked,
    ) -> Result<(), StoreError> {
        Engine::cpu(|| {
            let _one = lock(&self.push_lock);
            if let Some(store) = self.pushes.get() {
                store.put(self.writer().as_ref().map(|w| w.get()), name, &entries)?;
            }
            if self.views_apply(name, &entries) {
                self.set_source_in_views(name, &entries, Vec::new());
                return Ok(());
            }
            let touched = self
                .desired
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .update_source_checked(name, checked, &entries, Vec::new());
            self.wake(touched);
            Ok(())
        })
    }

    /// Source `name`'s records that another source's, with other values, holds back:
    /// (name, type, the source in force), for a push's answer.
    pub fn shadowed(&self, name: &str) -> Vec<(RecordKey, String)> {
        self.desired()
            .shadowed(name)
            .into_iter()
            .map(|(key, by)| (key, by.to_string()))
            .collect()
    }

    /// Replaces what source `name` reports about input it took no entry from (shown
    /// with the source errors in status).
    pub fn set_source_refusals(&self, name: &str, refusals: Vec<SourceError>) {
        self.desired
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .set_refusals(name, refusals);
    }

    /// The first record that source `name` holds in force and `refused` refuses:
    /// what a push, which replaces the whole source, would take from under a caller
    /// that may not touch it.
    pub fn source_key_where(
        &self,
        name: &str,
        refused: impl Fn(&RecordKey) -> bool,
    ) -> Option<RecordKey> {
        Engine::cpu(|| {
            self.desired()
                .source_keys(name)
                .find(|k| refused(k))
                .cloned()
        })
    }

    /// Every record source `name` declares, as it declares it, with its labels: in
    /// every view (a record fed to one view is only in that view's index).
    pub fn source_records(
        &self,
        name: &str,
    ) -> Vec<(dnsplane_common::RRSet, crate::source::Labels)> {
        Engine::cpu(|| {
            let mut out = self.desired().source_records(name);
            if self.views.is_empty() {
                return out;
            }
            let mut seen: std::collections::HashSet<dnsplane_common::RecordKey> =
                out.iter().map(|(r, _)| r.key.clone()).collect();
            for v in self.views.values() {
                let index = v
                    .index
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for (r, labels) in index.source_records(name) {
                    if seen.insert(r.key.clone()) {
                        out.push((r, labels));
                    }
                }
            }
            out
        })
    }

    /// Changes part of a pushed source, in O(patch): `check` sees the upserts with
    /// the source's other records at their names (all that the rules across records,
    /// duplicates and CNAMEs, can involve: the rest of the source was checked when it
    /// was accepted); the patch is then appended to the source's journal in the store
    /// (a whole new snapshot only once the journal outgrows the last one, or when this
    /// run has not seen the source's snapshot yet), and the index changes only at the
    /// patched keys. An `Err` (from `check`, or the store) means nothing changed.
    pub fn patch_source<E: From<StoreError>>(
        &self,
        name: &str,
        patch: Patch,
        check: impl FnOnce(&[DesiredEntry]) -> Result<(), E>,
    ) -> Result<Patched, E> {
        Engine::cpu(|| {
            let _one = lock(&self.push_lock);
            self.patch_locked(name, patch, check)
        })
    }

    /// Replaces a pushed source's desired state by the patch `diff` finds between the
    /// push and what the source holds, when it finds one (`None`: the caller puts the
    /// push in force whole). A push that repeats the source but for one record then
    /// costs what a `PatchDesired` of that record does (a journal line, the index at
    /// one key), plus comparing the push with the index, instead of checking,
    /// persisting and indexing every record again. Under the push lock, so that no
    /// other push of the source comes between the comparison and the patch.
    pub fn put_source_by_patch<E: From<StoreError>>(
        &self,
        name: &str,
        diff: impl FnOnce(&DesiredIndex) -> Option<Patch>,
        check: impl FnOnce(&[DesiredEntry]) -> Result<(), E>,
    ) -> Option<Result<Patched, E>> {
        Engine::cpu(|| {
            let _one = lock(&self.push_lock);
            let patch = diff(&self.desired())?;
            Some(self.patch_locked(name, patch, check))
        })
    }

    /// [`patch_source`](Self::patch_source), with the push lock held.
    fn patch_locked<E: From<StoreError>>(
        &self,
        name: &str,
        patch: Patch,
        check: impl FnOnce(&[DesiredEntry]) -> Result<(), E>,
    ) -> Result<Patched, E> {
        let deleted = {
            let desired = self.desired();
            check(&desired.with_kept_records(name, &patch.upserts))?;
            patch
                .deletes
                .iter()
                .filter(|k| desired.holds(name, &k.name, k.rtype, k.set))
                .count()
        };
        if let Some(store) = self.pushes.get() {
            store.patch(self.writer().as_ref().map(|w| w.get()), name, &patch)?;
        }
        if self.views_apply(name, &patch.upserts) {
            self.patch_source_in_views(name, &patch.upserts, &patch.deletes);
        } else {
            let touched = self
                .desired
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .patch_source(name, &patch.upserts, &patch.deletes);
            self.wake(touched);
        }
        let records = self.desired().source_len(name);
        Ok(Patched { deleted, records })
    }

    /// Puts every persisted push (`push:*`) back in force; before the first plan, so
    /// that a restart deletes nothing that was pushed. Returns the records restored.
    pub fn restore_pushes(&self) -> Result<usize, StoreError> {
        let Some(store) = self.pushes.get() else {
            return Ok(0);
        };
        Engine::cpu(|| {
            let mut n = 0;
            for (name, entries) in store.read_all()? {
                n += entries.len();
                self.set_source(&name, entries, Vec::new());
            }
            Ok(n)
        })
    }

    /// Shows the parts of source `name` (a Kubernetes source's kinds) in status, as
    /// `parts` holds them at each read.
    pub fn set_source_parts(&self, name: &str, parts: crate::source::SourceParts) {
        lock(&self.source_parts).insert(name.to_string(), parts);
    }

    /// Records whether source `name` is ready: `unready` holds why not (a path that
    /// vanished, a directory that emptied). A source that is not ready keeps its last
    /// accepted state; this only makes it visible.
    pub fn set_source_readiness(&self, name: &str, unready: Vec<String>) {
        let mut readiness = lock(&self.readiness);
        let before = readiness.get(name);
        if before != Some(&unready) && (before.is_some() || !unready.is_empty()) {
            events::SourceReadinessChanged {
                source: name,
                unready: &unready,
            }
            .emit();
        }
        if unready.is_empty() {
            self.first_loads.send_if_modified(|s| s.remove(name));
        }
        readiness.insert(name.to_string(), unready);
    }

    /// Holds every zone's syncs until source `name` is first ready (its first
    /// [`set_source_readiness`](Self::set_source_readiness) with nothing unready): for
    /// a source with nothing to restore at start (the Kubernetes API), whose records
    /// are unknown until its first complete list. Called before [`Engine::start`].
    pub fn await_first_load(&self, name: &str) {
        self.first_loads.send_modify(|s| {
            s.insert(name.to_string());
        });
    }

    /// Waits until no source's first load is outstanding (at once when none is).
    pub(super) async fn first_loads_done(&self) {
        let mut rx = self.first_loads.subscribe();
        let _ = rx.wait_for(BTreeSet::is_empty).await;
    }
}
