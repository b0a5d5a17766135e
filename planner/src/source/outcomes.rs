//! Where each record of a source stands, in the terms its objects are told (a
//! DNSEndpoint's status, a Kubernetes event, a NetBox custom field): read from the
//! engine's state tables by the planner and handed to the source, which does not
//! import the engine.
use dnsplane_common::{RecordKey, SharedStr};

/// Where one record stands, in the terms a status shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Converged,
    /// Not converged yet: planned, in flight, deferred, held for approval.
    Pending,
    Conflict,
    /// The provider refuses the value.
    Invalid,
    /// Held for approval by the mass-change guard (a status shows it as pending).
    Held,
    /// Transient failures outlived their budget, or the account refuses writes: it is
    /// retried, so the object is pending, with the error shown.
    Failed,
}

/// One record of the source as the planner's state table has it. Read for every record
/// of the source each second: shares what the index holds instead of copying it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOutcome {
    /// The object that asked for it (`DNSEndpoint namespace/name`,
    /// `ipam/ip-addresses/7`; several, comma-separated, for a merged set).
    pub resource: SharedStr,
    pub record: RecordName,
    pub phase: Phase,
    /// Why it is not converged (the conflict, the provider's error), or empty.
    pub detail: String,
}

/// The record an outcome is about, written `app.example.com. A` (and `(set eu)` in a
/// routing set) only when a message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordName(pub RecordKey);

impl std::fmt::Display for RecordName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0.name, self.0.rtype)?;
        if !self.0.set.is_none() {
            write!(f, " (set {})", self.0.set)?;
        }
        Ok(())
    }
}

/// `"web.example.com. A"`, for tests.
#[cfg(test)]
impl From<&str> for RecordName {
    fn from(s: &str) -> RecordName {
        let (name, rtype) = s.rsplit_once(' ').expect("name and type");
        let name = dnsplane_common::Name::parse(name).expect("name");
        let rtype = dnsplane_common::RecordType::parse(rtype).expect("type");
        RecordName(RecordKey::new(name.clone(), name, rtype))
    }
}
