//! The UPDATE messages of a batch (every precondition a prerequisite, deletions before
//! additions; see the module docs of the driver), the no-op probe that tells a policy
//! refusal from a record refusal, and what each response code means.
use super::wire::{hname, htype, to_rdata};
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordType};
use hickory_net::proto::op::{Message, OpCode, Query, ResponseCode, UpdateMessage};
use hickory_net::proto::rr::{DNSClass, Name as HName, Record, RecordType as HRecordType};
use std::collections::{BTreeSet, HashSet};

/// Builds the one UPDATE message of a batch (see the module docs for the rules).
pub(super) fn build_update(zone: &Name, ops: &[RRSetOp]) -> Result<Message, ProviderError> {
    let mut message = Message::query();
    message.metadata.op_code = OpCode::Update;
    message.metadata.recursion_desired = false;
    let mut zq = Query::new();
    zq.set_name(hname(zone)?)
        .set_query_class(DNSClass::IN)
        .set_query_type(HRecordType::SOA);
    message.add_zone(zq);

    let mut empty_prereqs: HashSet<(HName, DNSClass, HRecordType)> = HashSet::new();
    let mut empty = |message: &mut Message, name: &HName, class: DNSClass, rtype: HRecordType| {
        if empty_prereqs.insert((name.clone(), class, rtype)) {
            let mut r = Record::update0(name.clone(), 0, rtype);
            r.dns_class = class;
            message.add_pre_requisite(r);
        }
    };
    let records = |name: &HName, rrset: &RRSet, ttl: u32| -> Result<Vec<Record>, ProviderError> {
        rrset
            .values()
            .map(|v| {
                Ok(Record::from_rdata(
                    name.clone(),
                    ttl,
                    to_rdata(rrset.key.rtype, v)?,
                ))
            })
            .collect()
    };

    // Prerequisites: each op's precondition.
    for op in ops {
        let name = hname(&op.key.name)?;
        match &op.before {
            None => empty(&mut message, &name, DNSClass::NONE, htype(op.key.rtype)),
            Some(before) => message.add_pre_requisites(records(&name, before, 0)?),
        }
    }
    // Prerequisites: creates must not be silently dropped by the CNAME rule.
    for op in ops
        .iter()
        .filter(|op| !op.is_assert() && op.before.is_none() && op.after.is_some())
    {
        let name = hname(&op.key.name)?;
        let at_name = || {
            ops.iter()
                .filter(|o| o.key.name == op.key.name && o.key.rtype != op.key.rtype)
        };
        let cleared: BTreeSet<RecordType> = at_name()
            .filter(|o| o.before.is_some() && o.after.is_none())
            .map(|o| o.key.rtype)
            .collect();
        if op.key.rtype == RecordType::Cname {
            if at_name().all(|o| o.before.is_none()) {
                // Nothing else expected there: the name must be entirely unused.
                empty(&mut message, &name, DNSClass::NONE, HRecordType::ANY);
            } else {
                for t in RecordType::ALL {
                    if t != RecordType::Cname && !cleared.contains(&t) {
                        empty(&mut message, &name, DNSClass::NONE, htype(t));
                    }
                }
            }
        } else if !cleared.contains(&RecordType::Cname) {
            empty(&mut message, &name, DNSClass::NONE, HRecordType::CNAME);
        }
    }
    // Updates: every deletion, then every addition.
    for op in ops
        .iter()
        .filter(|op| !op.is_assert() && op.before.is_some())
    {
        let mut r = Record::update0(hname(&op.key.name)?, 0, htype(op.key.rtype));
        r.dns_class = DNSClass::ANY;
        message.add_update(r);
    }
    for op in ops.iter().filter(|op| !op.is_assert()) {
        if let Some(after) = &op.after {
            message.add_updates(records(&hname(&op.key.name)?, after, after.ttl)?);
        }
    }
    Ok(message)
}

/// The one place where UPDATE response codes get their class.
pub(super) fn classify_rcode(rcode: ResponseCode) -> ErrorClass {
    match rcode {
        ResponseCode::YXRRSet
        | ResponseCode::NXRRSet
        | ResponseCode::YXDomain
        | ResponseCode::NXDomain => ErrorClass::Conflict,
        ResponseCode::FormErr | ResponseCode::NotZone => ErrorClass::Invalid,
        ResponseCode::ServFail => ErrorClass::Transient,
        // NOTAUTH (also TSIG failures), REFUSED (policy), NOTIMP (no UPDATE), BADSIG, …
        _ => ErrorClass::Permanent,
    }
}

/// An UPDATE that changes nothing: delete an RRSet no one has. Servers apply their
/// update policy to it (and BIND does not bump the serial for it).
pub(super) fn build_probe(zone: &Name) -> Result<Message, ProviderError> {
    let mut message = Message::query();
    message.metadata.op_code = OpCode::Update;
    message.metadata.recursion_desired = false;
    let mut zq = Query::new();
    zq.set_name(hname(zone)?)
        .set_query_class(DNSClass::IN)
        .set_query_type(HRecordType::SOA);
    message.add_zone(zq);
    let probe = zone
        .prepend("_dnsplane-probe")
        .map_err(|e| ProviderError::new(ErrorClass::Invalid, e.to_string()))?;
    let mut r = Record::update0(hname(&probe)?, 0, HRecordType::TXT);
    r.dns_class = DNSClass::ANY;
    message.add_update(r);
    Ok(message)
}
