//! The entries of a [`super::ZoneView`]: a sorted map kept in copy-on-write chunks, so
//! that the targets of one zone that hold the same records hold them once.
//!
//! Why (issue 33): a zone served by several providers is read, planned and kept per
//! target, and at rest every target holds the same records. One B-tree per target cost
//! each extra target about 45 bytes per record. Here a view is a list of shared chunks;
//! after a sync, [`Entries::share_with`] swaps each chunk equal to a sibling target's for
//! the sibling's, and an extra target then costs a pointer per chunk.
//!
//! Chunks only line up between two views if they are cut at the same keys, whatever
//! order the records came in. So a chunk starts at the first key and at every key whose
//! hash says so ([`starts_chunk`], about one key in [`CHUNK`]), and inserts and removes
//! keep that; only a run of [`MAX_CHUNK`] keys without such a key is cut by length.
use super::Seen;
use dnsplane_common::RecordKey;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// About how many entries a chunk holds: what one record's change un-shares until the
/// next [`Entries::share_with`], and what a lookup searches after finding its chunk.
const CHUNK: u64 = 64;
/// A run this long without a chunk-starting key is cut by length.
const MAX_CHUNK: usize = 16 * CHUNK as usize;

type Chunk = Vec<(RecordKey, Seen)>;

/// A sorted map from record keys to what was seen there, in shared chunks.
#[derive(Debug, Clone, Default)]
pub(super) struct Entries {
    /// Non-empty, sorted, each starting where [`starts_chunk`] says (the first at any
    /// key).
    chunks: Vec<Arc<Chunk>>,
    len: usize,
}

/// Whether `key` starts a chunk: a hash of the key, so that two views holding the same
/// keys cut them alike.
fn starts_chunk(key: &RecordKey) -> bool {
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    h.finish().is_multiple_of(CHUNK)
}

impl Entries {
    /// From entries sorted by key, without duplicates.
    pub fn from_sorted(entries: Vec<(RecordKey, Seen)>) -> Entries {
        Entries::from_sorted_sharing(entries, None)
    }

    /// [`Entries::from_sorted`], taking `sibling`'s chunk (another target's view of
    /// the zone) wherever it holds the same entries instead of allocating one. Shared
    /// as it is built, not after: chunks allocated and then dropped for a sibling's
    /// leave the allocator's pages part used, and the memory stays resident.
    pub fn from_sorted_sharing(
        entries: Vec<(RecordKey, Seen)>,
        sibling: Option<&Entries>,
    ) -> Entries {
        let len = entries.len();
        // Where each chunk starts.
        let mut starts = Vec::with_capacity(len / CHUNK as usize + 1);
        for (i, (k, _)) in entries.iter().enumerate() {
            let last = starts.last().copied();
            if last.is_none() || starts_chunk(k) || last.is_some_and(|l| i - l >= MAX_CHUNK) {
                starts.push(i);
            }
        }
        let ranges: Vec<(usize, usize)> = starts
            .iter()
            .zip(starts.iter().skip(1).copied().chain([len]))
            .map(|(&s, e)| (s, e))
            .collect();
        // The sibling's chunk for each range, where it holds the same entries.
        let mut theirs = sibling.map_or(&[][..], |s| &s.chunks[..]).iter().peekable();
        let found: Vec<Option<Arc<Chunk>>> = ranges
            .iter()
            .map(|&(s, e)| {
                let mine = &entries[s..e];
                while theirs.next_if(|c| c[0].0 < mine[0].0).is_some() {}
                theirs
                    .peek()
                    .filter(|t| t[..] == *mine)
                    .map(|t| Arc::clone(t))
            })
            .collect();
        let mut rest = entries.into_iter();
        let chunks = ranges
            .iter()
            .zip(found)
            .map(|(&(s, e), found)| match found {
                Some(shared) => {
                    rest.by_ref().take(e - s).for_each(drop);
                    shared
                }
                // Sized exactly: a `Take` of a vector's iterator knows its length.
                None => Arc::new(rest.by_ref().take(e - s).collect::<Chunk>()),
            })
            .collect();
        Entries { chunks, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk `key` falls in (the last whose first key is at most `key`, or the
    /// first), and where in it: found, or where it would go.
    fn find(&self, key: &RecordKey) -> Option<(usize, Result<usize, usize>)> {
        if self.chunks.is_empty() {
            return None;
        }
        let ci = self
            .chunks
            .partition_point(|c| c[0].0 <= *key)
            .saturating_sub(1);
        Some((ci, self.chunks[ci].binary_search_by(|(k, _)| k.cmp(key))))
    }

    pub fn get(&self, key: &RecordKey) -> Option<&Seen> {
        match self.find(key)? {
            (ci, Ok(i)) => Some(&self.chunks[ci][i].1),
            (_, Err(_)) => None,
        }
    }

    #[cfg(test)]
    pub fn get_key_value(&self, key: &RecordKey) -> Option<(&RecordKey, &Seen)> {
        match self.find(key)? {
            (ci, Ok(i)) => {
                let (k, s) = &self.chunks[ci][i];
                Some((k, s))
            }
            (_, Err(_)) => None,
        }
    }

    /// The entry at `key` to change in place (its chunk copied first if shared).
    pub fn get_mut(&mut self, key: &RecordKey) -> Option<&mut Seen> {
        match self.find(key)? {
            (ci, Ok(i)) => Some(&mut Arc::make_mut(&mut self.chunks[ci])[i].1),
            (_, Err(_)) => None,
        }
    }

    pub fn insert(&mut self, key: RecordKey, seen: Seen) -> Option<Seen> {
        let Some((ci, at)) = self.find(&key) else {
            self.chunks.push(Arc::new(vec![(key, seen)]));
            self.len = 1;
            return None;
        };
        let i = match at {
            Ok(i) => {
                let chunk = Arc::make_mut(&mut self.chunks[ci]);
                return Some(std::mem::replace(&mut chunk[i].1, seen));
            }
            Err(i) => i,
        };
        self.len += 1;
        if i == 0 {
            // Before every key (only the first chunk can be searched with `i == 0`):
            // the key joins the first chunk unless that chunk starts at a cut.
            if starts_chunk(&self.chunks[0][0].0) {
                self.chunks.insert(0, Arc::new(vec![(key, seen)]));
            } else {
                Arc::make_mut(&mut self.chunks[0]).insert(0, (key, seen));
            }
            return None;
        }
        let chunk = Arc::make_mut(&mut self.chunks[ci]);
        if starts_chunk(&key) {
            let mut tail = Vec::with_capacity(chunk.len() - i + 1);
            tail.push((key, seen));
            tail.extend(chunk.drain(i..));
            self.chunks.insert(ci + 1, Arc::new(tail));
        } else {
            chunk.insert(i, (key, seen));
            self.split_if_long(ci);
        }
        None
    }

    pub fn remove(&mut self, key: &RecordKey) -> Option<Seen> {
        let (ci, Ok(i)) = self.find(key)? else {
            return None;
        };
        self.len -= 1;
        let chunk = Arc::make_mut(&mut self.chunks[ci]);
        let (_, seen) = chunk.remove(i);
        if chunk.is_empty() {
            self.chunks.remove(ci);
        } else if i == 0 && ci > 0 {
            // The cut is gone: what followed it belongs to the chunk before.
            let rest = std::mem::take(chunk);
            self.chunks.remove(ci);
            Arc::make_mut(&mut self.chunks[ci - 1]).extend(rest);
            self.split_if_long(ci - 1);
        }
        Some(seen)
    }

    fn split_if_long(&mut self, ci: usize) {
        if self.chunks[ci].len() > MAX_CHUNK {
            let chunk = Arc::make_mut(&mut self.chunks[ci]);
            let tail = chunk.split_off(chunk.len() / 2);
            self.chunks.insert(ci + 1, Arc::new(tail));
        }
    }

    /// Every entry in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&RecordKey, &Seen)> {
        self.chunks
            .iter()
            .flat_map(|c| c.iter().map(|(k, s)| (k, s)))
    }

    pub fn values(&self) -> impl Iterator<Item = &Seen> {
        self.iter().map(|(_, s)| s)
    }

    /// The entries from `key` on, in key order.
    pub fn starting_at<'a>(
        &'a self,
        key: &RecordKey,
    ) -> impl Iterator<Item = (&'a RecordKey, &'a Seen)> + use<'a> {
        let (ci, i) = match self.find(key) {
            Some((ci, Ok(i) | Err(i))) => (ci, i),
            None => (0, 0),
        };
        self.chunks
            .get(ci)
            .into_iter()
            .flat_map(move |c| &c[i..])
            .chain(self.chunks.iter().skip(ci + 1).flat_map(|c| c.iter()))
            .map(|(k, s)| (k, s))
    }

    /// Gives back the spare room of chunks grown by inserts (chunks shared with another
    /// view are left: copying them would cost more than it saves).
    pub fn shrink(&mut self) {
        for c in &mut self.chunks {
            if let Some(c) = Arc::get_mut(c)
                && c.capacity() > c.len() + c.len() / 4 + 4
            {
                c.shrink_to_fit();
            }
        }
    }

    /// Shares every chunk equal to one of `other`'s: where two targets hold the same
    /// records, they then hold them once. Returns how many chunks became shared.
    pub fn share_with(&mut self, other: &Entries) -> usize {
        let mut shared = 0;
        let mut theirs = other.chunks.iter().peekable();
        for mine in &mut self.chunks {
            let first = &mine[0].0;
            while theirs.next_if(|c| c[0].0 < *first).is_some() {}
            let Some(t) = theirs.peek() else { break };
            if Arc::ptr_eq(mine, t) || t[0].0 != *first || t.len() != mine.len() {
                continue;
            }
            if **mine == ***t {
                *mine = Arc::clone(t);
                shared += 1;
            }
        }
        shared
    }

    /// How many chunks this view holds that `other` holds too (for tests).
    #[cfg(test)]
    pub fn chunks_shared_with(&self, other: &Entries) -> usize {
        self.chunks
            .iter()
            .filter(|c| other.chunks.iter().any(|o| Arc::ptr_eq(c, o)))
            .count()
    }

    /// The keys each chunk starts at (for tests).
    #[cfg(test)]
    pub fn cuts(&self) -> Vec<RecordKey> {
        self.chunks.iter().map(|c| c[0].0.clone()).collect()
    }
}

/// Equal when they hold the same entries, however they are cut or shared.
impl PartialEq for Entries {
    fn eq(&self, other: &Entries) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl FromIterator<(RecordKey, Seen)> for Entries {
    /// From entries in any order; of equal keys, the last wins.
    fn from_iter<I: IntoIterator<Item = (RecordKey, Seen)>>(iter: I) -> Entries {
        let mut all: Vec<(RecordKey, Seen)> = iter.into_iter().collect();
        all.sort_by(|(a, _), (b, _)| a.cmp(b));
        let mut unique: Vec<(RecordKey, Seen)> = Vec::with_capacity(all.len());
        for (k, s) in all {
            match unique.last_mut() {
                Some((last, v)) if *last == k => *v = s,
                _ => unique.push((k, s)),
            }
        }
        Entries::from_sorted(unique)
    }
}

#[cfg(test)]
#[path = "entries_tests.rs"]
mod tests;
