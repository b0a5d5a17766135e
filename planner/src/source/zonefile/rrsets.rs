//! The lines of one (name, type) merged into one RRSet, with BIND's rule for the TTL
//! when they disagree, and every RRSet checked whole (a CNAME's single value, the
//! value count, what one DNS answer can carry) before it is accepted or rejected.
use super::Reader;
use crate::source::dnsendpoint::{Accepted, Rejected, RejectedWhat, SOURCE_KIND, Slot};
use crate::source::{DesiredEntry, Origin, SourceError};
use dnsplane_common::rrset::MAX_VALUES;
use dnsplane_common::{Name, RecordType, SetId, wire};
use std::sync::Arc;

/// One RRSet as its lines are read.
pub(super) struct Set {
    pub(super) name: Name,
    pub(super) rtype: RecordType,
    pub(super) ttl: u32,
    pub(super) ttl_line: usize,
    /// The run of same-owner lines that set `ttl` (see the module docs).
    pub(super) run: u64,
    pub(super) line: usize,
    pub(super) values: Vec<String>,
    pub(super) problems: Vec<SourceError>,
}

impl Reader<'_> {
    pub(super) fn add(
        &mut self,
        name: Name,
        rtype: RecordType,
        line: usize,
        ttl: Option<u32>,
        value: Option<String>,
        problems: Vec<SourceError>,
    ) {
        let run = self.run;
        let next = self.sets.len();
        let i = *self.index.entry((name.clone(), rtype)).or_insert(next);
        if i == next {
            self.sets.push(Set {
                name,
                rtype,
                ttl: ttl.unwrap_or(0),
                ttl_line: line,
                run,
                line,
                values: Vec::new(),
                problems: Vec::new(),
            });
        } else if let Some(ttl) = ttl {
            let set = &mut self.sets[i];
            let same_run = set.run == run;
            // A set already refused (no TTL at its first line) has no TTL to differ from.
            if ttl != set.ttl && set.problems.is_empty() {
                let message = if same_run {
                    format!(
                        "TTL {ttl} differs from the TTL {} of this RRSet at line {}; the RRSet keeps {} (as BIND does within the lines of one owner)",
                        set.ttl, set.ttl_line, set.ttl
                    )
                } else {
                    format!(
                        "TTL {ttl} differs from the TTL {} of this RRSet at line {}; the RRSet takes {ttl} (as BIND does: a later owner line's TTL wins)",
                        set.ttl, set.ttl_line
                    )
                };
                let warning = SourceError {
                    source: SOURCE_KIND.into(),
                    location: format!("{}:{line}", self.label),
                    record: format!("{} {}", set.name, set.rtype),
                    message,
                };
                self.out.warnings.push(warning);
            }
            let set = &mut self.sets[i];
            if !same_run {
                set.ttl = ttl;
                set.ttl_line = line;
                set.run = run;
            }
        }
        let set = &mut self.sets[i];
        if let Some(v) = value {
            set.values.push(v);
        }
        set.problems.extend(problems);
    }

    /// Every RRSet, merged and checked, into accepted entries or rejections.
    pub(super) fn finish(&mut self) {
        let kind: Arc<str> = SOURCE_KIND.into();
        let resource: Arc<str> = format!("zone file {}", self.label).into();
        for (index, mut set) in std::mem::take(&mut self.sets).into_iter().enumerate() {
            let slot = Slot {
                resource: resource.clone(),
                index,
            };
            set.values.sort_unstable();
            set.values.dedup();
            set.values.shrink_to_fit();
            if set.problems.is_empty() {
                let whole = if set.rtype == RecordType::Cname && set.values.len() > 1 {
                    Some(format!(
                        "a CNAME holds exactly one value, not {}",
                        set.values.len()
                    ))
                } else if set.values.len() > MAX_VALUES {
                    Some(format!(
                        "{} values, above the limit of {MAX_VALUES}",
                        set.values.len()
                    ))
                } else {
                    wire::check_answer(&set.name, set.rtype, &set.values).err()
                };
                if let Some(message) = whole {
                    set.problems.push(SourceError {
                        source: SOURCE_KIND.into(),
                        location: format!("{}:{}", self.label, set.line),
                        record: format!("{} {}", set.name, set.rtype),
                        message,
                    });
                }
            }
            if set.problems.is_empty() {
                self.out.accepted.push(Accepted {
                    entry: DesiredEntry {
                        name: set.name,
                        rtype: set.rtype,
                        ttl: Some(set.ttl),
                        values: set.values,
                        set: SetId::NONE,
                        properties: Vec::new(),
                        labels: Default::default(),
                        origin: Origin {
                            source: kind.clone(),
                            location: format!("{}:{}", self.label, set.line).into(),
                            resource: resource.clone(),
                        },
                    },
                    slot,
                });
            } else {
                let start = self.out.errors.len();
                self.out.errors.append(&mut set.problems);
                self.out.rejected.push(Rejected {
                    what: RejectedWhat::Endpoint {
                        key: Some((set.name, set.rtype, SetId::NONE)),
                        slot,
                    },
                    errors: start..self.out.errors.len(),
                });
            }
        }
    }
}
