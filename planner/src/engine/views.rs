//! Split horizon: targets with a `view` (`[[zones]] view = "internal"`) get the
//! records fed to every view, and those fed to their view alone; targets without one
//! get the every-view records only. A record is fed to some views by its
//! `dnsplane.io/view` label (views separated by commas), else by its source's
//! `views`; with neither it is fed to every view.
//!
//! Each view has a desired index of its own beside the engine's main one (which holds
//! the every-view records, for the targets without a view): the every-view records of
//! the zones that have a target in the view, and the records fed to the view. A
//! planner without views has none, and pays nothing.
use super::{Engine, lock};
use crate::desired::{DesiredIndex, Touched};
use crate::source::{DesiredEntry, EntryKey, SourceError};
use dnsplane_common::Name;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

pub use crate::source::labels::VIEW_LABEL;

/// One view's desired index, and the zones that have a target in the view.
#[derive(Debug)]
pub(super) struct ViewIndex {
    pub index: Arc<RwLock<DesiredIndex>>,
    pub zones: BTreeSet<Name>,
}

/// Every view's index, by view.
pub(super) type ViewIndexes = BTreeMap<Arc<str>, ViewIndex>;

/// The views `e` is fed to: its label's, else its source's; `None`: every view.
fn views_of<'a>(e: &'a DesiredEntry, source_views: &'a [String]) -> Option<Vec<&'a str>> {
    match e.labels.get(VIEW_LABEL) {
        Some(v) => Some(
            v.split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .collect(),
        ),
        None if !source_views.is_empty() => Some(source_views.iter().map(String::as_str).collect()),
        None => None,
    }
}

/// `entries` cut for each index: the every-view ones for the main index (`None`), and
/// per view those fed to it plus the every-view ones of its zones. An entry fed only
/// to views no target has goes nowhere: it is a source error, naming the views.
fn split(
    entries: &[DesiredEntry],
    source_views: &[String],
    views: &ViewIndexes,
    zones: &[crate::config::ZoneConfig],
) -> Split {
    let mut errors = Vec::new();
    let mut main = Vec::new();
    let mut per_view: BTreeMap<Arc<str>, Vec<DesiredEntry>> =
        views.keys().map(|v| (v.clone(), Vec::new())).collect();
    for e in entries {
        match views_of(e, source_views) {
            None => {
                let zone = crate::source::zones::zone_for(zones, &e.name).map(|z| &z.name);
                for (view, index) in views {
                    if zone.is_some_and(|z| index.zones.contains(z)) {
                        per_view.entry(view.clone()).or_default().push(e.clone());
                    }
                }
                main.push(e.clone());
            }
            Some(fed) => {
                let mut placed = false;
                for v in &fed {
                    if let Some(list) = per_view.get_mut(*v) {
                        list.push(e.clone());
                        placed = true;
                    }
                }
                if !placed {
                    let known: Vec<&str> = views.keys().map(|v| &**v).collect();
                    errors.push(SourceError {
                        source: e.origin.source.to_string(),
                        location: e.origin.location.to_string(),
                        record: format!("{} {}", e.name, e.rtype),
                        message: format!(
                            "fed to view {} ({VIEW_LABEL} or the source's views), which no [[zones]] target has (the views: {}); not placed anywhere",
                            fed.join(", "),
                            if known.is_empty() { "none".to_string() } else { known.join(", ") }
                        ),
                    });
                }
            }
        }
    }
    Split {
        main,
        per_view,
        errors,
    }
}

/// Entries cut for each index ([`split`]).
struct Split {
    main: Vec<DesiredEntry>,
    per_view: BTreeMap<Arc<str>, Vec<DesiredEntry>>,
    /// Entries fed to no view a target has.
    errors: Vec<SourceError>,
}

/// Whether any of `entries` is fed to some views only.
fn any_restricted(entries: &[DesiredEntry], source_views: &[String]) -> bool {
    !source_views.is_empty() || entries.iter().any(|e| e.labels.get(VIEW_LABEL).is_some())
}

fn write(index: &RwLock<DesiredIndex>) -> std::sync::RwLockWriteGuard<'_, DesiredIndex> {
    index
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Engine {
    /// The views source `name` feeds (`[[sources]] views`; empty: every view).
    pub fn set_source_views(&self, name: &str, views: Vec<String>) {
        lock(&self.source_views).insert(name.to_string(), views);
    }

    fn source_views_of(&self, name: &str) -> Vec<String> {
        lock(&self.source_views)
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether the planner has views (and `entries` of `name` need cutting).
    pub(super) fn views_apply(&self, name: &str, entries: &[DesiredEntry]) -> bool {
        !self.views.is_empty() || any_restricted(entries, &self.source_views_of(name))
    }

    /// Source `name`'s new snapshot in every index: the main one and each view's.
    pub(super) fn set_source_in_views(
        &self,
        name: &str,
        entries: &[DesiredEntry],
        errors: Vec<SourceError>,
    ) {
        let source_views = self.source_views_of(name);
        let Split {
            main,
            per_view,
            errors: unplaced,
        } = split(entries, &source_views, &self.views, &self.config.zones);
        let mut errors = errors;
        errors.extend(unplaced);
        let touched = Engine::cpu(|| write(&self.desired).update_source(name, &main, errors));
        self.wake_view(None, touched);
        for (view, list) in per_view {
            let index = &self.views[&view].index;
            let touched = Engine::cpu(|| write(index).update_source(name, &list, Vec::new()));
            self.wake_view(Some(&view), touched);
        }
    }

    /// A patch of source `name` in every index: upserts where they are fed, and taken
    /// out of the indexes they are no longer fed to.
    pub(super) fn patch_source_in_views(
        &self,
        name: &str,
        upserts: &[DesiredEntry],
        deletes: &[EntryKey],
    ) {
        let source_views = self.source_views_of(name);
        let Split { main, per_view, .. } =
            split(upserts, &source_views, &self.views, &self.config.zones);
        let keys_but = |kept: &[DesiredEntry]| -> Vec<EntryKey> {
            let kept: BTreeSet<EntryKey> = kept.iter().map(DesiredEntry::entry_key).collect();
            deletes
                .iter()
                .cloned()
                .chain(
                    upserts
                        .iter()
                        .map(DesiredEntry::entry_key)
                        .filter(|k| !kept.contains(k)),
                )
                .collect()
        };
        let gone = keys_but(&main);
        let touched = write(&self.desired).patch_source(name, &main, &gone);
        self.wake_view(None, touched);
        for (view, list) in per_view {
            let gone = keys_but(&list);
            let touched = write(&self.views[&view].index).patch_source(name, &list, &gone);
            self.wake_view(Some(&view), touched);
        }
    }

    /// Tells the targets of `view` (`None`: those without one) which of their names'
    /// desired records changed.
    pub(super) fn wake_view(&self, view: Option<&str>, touched: Touched) {
        for (zone, names) in touched {
            for (_, z) in self.targets_of(&zone) {
                if z.cfg.view.as_deref() == view {
                    lock(&z.dirty).extend(names.iter().cloned());
                    z.trigger.notify_one();
                }
            }
        }
    }

    /// Every index's source errors, each once (an every-view record's error shows in
    /// each index that holds it); `None` while a view's index is busy (a large
    /// update), as for the main index: status then shows the errors it last read, not
    /// a list missing that view's.
    pub(super) fn errors_in_views(&self, main: Vec<SourceError>) -> Option<Vec<SourceError>> {
        if self.views.is_empty() {
            return Some(main);
        }
        let mut others = Vec::new();
        for v in self.views.values() {
            others.extend(v.index.try_read().ok()?.errors());
        }
        let mut seen: HashMap<(String, String, String, String), ()> = HashMap::new();
        let mut out = Vec::new();
        for e in main.into_iter().chain(others) {
            let key = (
                e.source.clone(),
                e.location.clone(),
                e.record.clone(),
                e.message.clone(),
            );
            if seen.insert(key, ()).is_none() {
                out.push(e);
            }
        }
        Some(out)
    }
}

impl Engine {
    /// The source errors whose location starts with `prefix` (the pages of one source's
    /// objects), from every index, each once: a source that writes outcomes back to
    /// its objects tells those that give no record why. `None` while an index is busy
    /// (as [`errors_in_views`](Self::errors_in_views)).
    pub fn errors_located(&self, prefix: &str) -> Option<Vec<SourceError>> {
        let main = self.desired.try_read().ok()?.errors();
        let mut all = self.errors_in_views(main)?;
        all.retain(|e| e.location.starts_with(prefix));
        Some(all)
    }
}

/// The zones an index of `view` places records with: every zone, its entries of
/// `view` last (an index takes a zone's policy, TTL and merge from its last entry).
pub(super) fn zones_for(
    zones: &[crate::config::ZoneConfig],
    view: Option<&str>,
) -> Vec<crate::config::ZoneConfig> {
    let (mine, others): (Vec<_>, Vec<_>) = zones
        .iter()
        .cloned()
        .partition(|z| z.view.as_deref() == view);
    others.into_iter().chain(mine).collect()
}

/// Builds each view's index for `targets` (none when no target has a view).
pub(super) fn indexes(
    zones: &[crate::config::ZoneConfig],
    targets: &[(crate::target::Target, crate::config::ZoneConfig)],
) -> ViewIndexes {
    let mut out = ViewIndexes::new();
    for (t, cfg) in targets {
        if let Some(view) = &cfg.view {
            out.entry(Arc::from(view.as_str()))
                .or_insert_with(|| ViewIndex {
                    index: Arc::new(RwLock::new(DesiredIndex::new(&zones_for(
                        zones,
                        Some(view),
                    )))),
                    zones: BTreeSet::new(),
                })
                .zones
                .insert(t.zone.clone());
        }
    }
    out
}
