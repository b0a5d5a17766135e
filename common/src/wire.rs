//! What one DNS answer can carry. A record set that no server could send whole is
//! refused where it enters dnsplane (every source, and the push API), with its size
//! and the limit, instead of reaching a provider that truncates it, rejects it
//! halfway through a batch, or serves an answer no resolver can read.
//!
//! The limits are those of the wire format (RFC 1035): a name of at most 255 octets
//! ([`crate::name::MAX_WIRE_LEN`], checked by [`Name::parse`]) in labels of at most 63,
//! at most [`MAX_RDATA`] octets of data per record (checked by
//! [`crate::rdata::RData::parse`]), and a whole RRSet answered in one TCP message of at
//! most [`MAX_MESSAGE`] octets (checked here).
use crate::name::Name;
use crate::rdata::{MAX_RDATA, RecordType, wire_len};

/// The most octets of one DNS message over TCP (its length prefix is 16 bits).
pub const MAX_MESSAGE: usize = 65_535;
/// A DNS message header.
const HEADER: usize = 12;
/// Type and class after a name, in the question and in every record.
const TYPE_CLASS: usize = 4;
/// A compression pointer (RFC 1035 §4.1.4).
const POINTER: usize = 2;
/// TTL and RDLENGTH after a record's type and class.
const TTL_RDLENGTH: usize = 6;
/// The EDNS OPT record a server adds to its answer to an EDNS client (RFC 6891): the
/// root name, type, class, TTL and an empty RDATA.
const OPT: usize = 1 + TYPE_CLASS + TTL_RDLENGTH;

/// The size of the DNS answer that carries the whole RRSet `name`/`rtype` with `values`
/// (canonical): header, the question, one record per value and the EDNS OPT record.
///
/// Assumptions, chosen so that a set that passes fits any server's answer: each
/// record's owner name is compressed to a pointer (two octets; the embedded server
/// compresses every name, however many), but one is counted in full, for a question
/// asked in another case than the records' (`WWW.example.com`): its owner names keep
/// their case, so they point at the first record's, not at the question; names *inside* the data
/// (CNAME, NS, MX and SRV targets) are counted uncompressed (SRV targets must not be
/// compressed, RFC 2782, and a server need not compress the others), the answer
/// carries the OPT record (without options) that a server adds for an EDNS client
/// such as `dig`, and nothing else (no authority or additional records, no DNSSEC
/// signatures: a signed zone's answer is larger, which the provider's own limits
/// catch). For the embedded server's answer to an EDNS query in another case this is
/// its exact size; in the same case, one name smaller.
pub fn answer_len(name: &Name, rtype: RecordType, values: &[String]) -> usize {
    let question = name_len(name) + TYPE_CLASS;
    // The first record's owner in full when the question's case differs.
    let first_owner = if values.is_empty() {
        0
    } else {
        name_len(name).saturating_sub(POINTER)
    };
    let records: usize = values
        .iter()
        .map(|v| POINTER + TYPE_CLASS + TTL_RDLENGTH + wire_len(rtype, v))
        .sum();
    HEADER + question + first_owner + records + OPT
}

/// Checks that every value of the RRSet fits one record and the whole set one TCP
/// answer (see [`answer_len`]); the problem says how big it is and what the limit is.
pub fn check_answer(name: &Name, rtype: RecordType, values: &[String]) -> Result<(), String> {
    for v in values {
        let len = wire_len(rtype, v);
        if len > MAX_RDATA {
            return Err(format!(
                "a value is {len} octets of record data on the wire, above the {MAX_RDATA} one record can carry"
            ));
        }
    }
    let len = answer_len(name, rtype, values);
    if len > MAX_MESSAGE {
        return Err(format!(
            "the set of {} value(s) is {len} octets as a DNS answer, above the {MAX_MESSAGE} one TCP message can carry",
            values.len()
        ));
    }
    Ok(())
}

/// A name's size on the wire: its text with the final dot, plus the root's octet.
fn name_len(name: &Name) -> usize {
    match name.as_str() {
        "." => 1,
        text => text.len() + 1,
    }
}

#[cfg(test)]
mod tests;
