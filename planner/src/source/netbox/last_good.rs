//! NetBox's objects by id, each with the record it was last accepted with: what the
//! source keeps of IP addresses and plugin records alike.
//!
//! An object edited into something that cannot be a record keeps its last accepted
//! record, and its error says so: a typo in NetBox's UI must not delete a name from
//! DNS. An object that is deleted, filtered out or emptied loses its record: that is
//! what its owner asked for.
use super::client::HasId;
use std::collections::BTreeMap;

/// What an object asks for now, as [`LastGood::settle`] is told it.
#[derive(Debug)]
pub enum Made<W> {
    /// What it was last accepted with stands (it did not change).
    Stands,
    /// This record.
    Take(W),
    /// No record (deleted in substance: filtered out, emptied, never taken).
    Drop,
    /// It cannot be a record, for this reason.
    Refuse(String),
}

/// The objects as NetBox last had them, and the record (`W`) each was accepted with.
#[derive(Debug)]
pub struct LastGood<O, W> {
    current: BTreeMap<u64, O>,
    accepted: BTreeMap<u64, W>,
}

impl<O, W> Default for LastGood<O, W> {
    fn default() -> Self {
        LastGood {
            current: BTreeMap::new(),
            accepted: BTreeMap::new(),
        }
    }
}

impl<O: HasId, W> LastGood<O, W> {
    /// A complete read replaces every object: those it lacks are gone.
    pub fn replace_all(&mut self, read: Vec<O>) {
        self.current = read.into_iter().map(|o| (o.id(), o)).collect();
    }

    /// One object as NetBox now has it.
    pub fn put(&mut self, o: O) {
        self.current.insert(o.id(), o);
    }

    /// An object NetBox no longer has.
    pub fn remove(&mut self, id: u64) {
        self.current.remove(&id);
    }

    pub fn get(&self, id: u64) -> Option<&O> {
        self.current.get(&id)
    }

    /// Objects held.
    pub fn len(&self) -> usize {
        self.current.len()
    }

    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }

    /// The records accepted, by object id.
    pub fn accepted(&self) -> &BTreeMap<u64, W> {
        &self.accepted
    }

    /// Settles every object with what `make` says it asks for (given what it was last
    /// accepted with): the ids refused, each with why, and, where it had a record
    /// before, that it keeps it (`describe` says which).
    pub fn settle(
        &mut self,
        mut make: impl FnMut(&O, Option<&W>) -> Made<W>,
        describe: impl Fn(&W) -> String,
    ) -> Vec<(u64, String)> {
        let current = &self.current;
        self.accepted.retain(|id, _| current.contains_key(id));
        let mut refused = Vec::new();
        for (id, o) in current {
            match make(o, self.accepted.get(id)) {
                Made::Stands => {}
                Made::Take(w) => {
                    self.accepted.insert(*id, w);
                }
                Made::Drop => {
                    self.accepted.remove(id);
                }
                Made::Refuse(why) => {
                    let kept = self.accepted.get(id).map_or(String::new(), |w| {
                        format!("; its last accepted record, {}, is kept", describe(w))
                    });
                    refused.push((*id, format!("{why}{kept}")));
                }
            }
        }
        refused
    }
}
