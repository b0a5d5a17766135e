//! Building a [`ZoneView`] page by page, as a zone's records arrive from its applier.
//!
//! Why: a whole zone held as received (every name and value freshly allocated) costs
//! several times what the view keeps once it shares them with the desired index. At
//! start every target of every zone reads at once, so holding whole listings made the
//! planner's peak, and the memory the allocator kept after it, grow with each target
//! (issue 33). Placed page by page, only one page at a time is held as received.
use super::{Seen, SharedMarks, ZoneView};
use crate::config::ExternalDnsConfig;
use crate::desired::DesiredRecord;
use crate::external_dns::{self, Registry};
use dnsplane_common::{RRSet, RecordKey};
use std::collections::BTreeMap;

/// A [`ZoneView`] under construction.
#[derive(Debug)]
pub struct ViewBuilder<'c> {
    /// Placed records, shared with the desired index where equal; sorted and merged by
    /// [`ViewBuilder::finish`].
    seen: Vec<(RecordKey, Seen)>,
    marks: SharedMarks,
    /// Pages that arrived while the desired index was busy, placed at the end.
    deferred: Vec<RRSet>,
    /// external-dns's registry, for a zone with `[zones.external_dns]`.
    registry: Option<Registry<'c>>,
    /// external-dns's marks, by their key: set apart from the data.
    external_marks: BTreeMap<RecordKey, (RRSet, external_dns::Mark)>,
}

impl<'c> ViewBuilder<'c> {
    /// A builder for a zone read with `external` (its `[zones.external_dns]`).
    pub fn new(external: Option<&'c ExternalDnsConfig>) -> Self {
        ViewBuilder {
            seen: Vec::new(),
            marks: SharedMarks::default(),
            deferred: Vec::new(),
            registry: external.map(Registry::new),
            external_marks: BTreeMap::new(),
        }
    }

    /// Places `rrsets`, sharing names and values with `desired` where they are equal.
    /// `None` (the desired index was busy) keeps them as they are until
    /// [`ViewBuilder::finish`], which places them: sharing only saves memory, so a
    /// page is never lost nor wrong for it.
    pub fn add(
        &mut self,
        rrsets: impl IntoIterator<Item = RRSet>,
        desired: Option<&BTreeMap<RecordKey, DesiredRecord>>,
    ) {
        for r in rrsets {
            if let Some(mark) = self.registry.as_ref().and_then(|reg| reg.parse(&r)) {
                self.external_marks.insert(r.key.clone(), (r, mark));
                continue;
            }
            match desired {
                Some(d) => self.seen.push(ZoneView::place(r, Some(d), &mut self.marks)),
                None => self.deferred.push(r),
            }
        }
    }

    /// The view, the deferred records placed against `desired` first. Where
    /// `sibling` (another target's view of the zone) holds the same entries, the view
    /// holds them with it.
    pub fn finish(
        mut self,
        desired: Option<&BTreeMap<RecordKey, DesiredRecord>>,
        sibling: Option<&ZoneView>,
    ) -> ZoneView {
        for r in std::mem::take(&mut self.deferred) {
            self.seen.push(ZoneView::place(r, desired, &mut self.marks));
        }
        // A stable sort: of equal keys, the later data (or ownership) record wins, as
        // inserting one by one did.
        let mut entries = self.seen;
        entries.sort_by(|(a, _), (b, _)| a.cmp(b));
        // Merged in place (no second vector of every entry).
        entries.dedup_by(|(key, later), (kept, merged)| {
            let same = key == kept;
            if same {
                merged.data = later.data.take().or(merged.data.take());
                merged.owner = later.owner.take().or(merged.owner.take());
            }
            same
        });
        let entries = super::Entries::from_sorted_sharing(entries, sibling.map(|s| &s.entries));
        let mut view = ZoneView::of(entries);
        view.written = self.marks;
        if let Some(reg) = &self.registry {
            view.attach_external(reg, self.external_marks);
        }
        view
    }
}
