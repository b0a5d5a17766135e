//! A response on the wire with every name compressed that can be (RFC 1035 §4.1.4).
//!
//! hickory's encoder stops compressing after 120 names and keeps at most 64 places
//! to point at, so a large answer (240 TXT records at one name) grew past 64 KiB and
//! came back truncated although the planner's size check ([`dnsplane_common::wire`])
//! had accepted it. Here every owner name, and the names inside CNAME, NS, PTR, MX
//! and SOA data (the RFC 1035 types, whose data names may be compressed), point at
//! the longest suffix already written at an offset a pointer can reach (below
//! 16 KiB, 0x3FFF): names past that offset are still compressed against those below
//! it. The header, the question, the other types' data and the OPT record are
//! hickory's.
use hickory_proto::ProtoError;
use hickory_proto::op::{EmitAndCount, Message, emit_message_parts};
use hickory_proto::rr::{self, RData, Record};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};
use std::cell::RefCell;
use std::collections::HashMap;

/// The largest offset a compression pointer can carry (14 bits).
const MAX_POINTER: usize = 0x3FFF;
/// Where the question's name starts: right after the header.
const QUESTION: usize = 12;

/// `message` on the wire, every name compressed that can be.
pub fn to_vec(message: &Message) -> Result<Vec<u8>, ProtoError> {
    let mut bytes = Vec::with_capacity(512);
    let mut encoder = BinEncoder::new(&mut bytes);
    let table = RefCell::new(Suffixes::default());
    emit_message_parts(
        &message.metadata,
        &mut message.queries.iter(),
        &mut Section(&message.answers, &table),
        &mut Section(&message.authorities, &table),
        &mut Section(&message.additionals, &table),
        message.edns.as_ref(),
        message.signature.as_deref(),
        &mut encoder,
    )?;
    Ok(bytes)
}

/// Where each name suffix already written starts, by its exact wire form: names keep
/// the store's case (a question in another case gets the records' owner written once,
/// then pointed at; the size check counts that one name in full).
#[derive(Default)]
struct Suffixes {
    at: HashMap<Vec<u8>, u16>,
    /// The question has been noted.
    seeded: bool,
}

impl Suffixes {
    /// Notes the suffixes of the question's name, which hickory wrote uncompressed
    /// right after the header (it is the message's first name).
    fn seed(&mut self, encoder: &BinEncoder<'_>) {
        if std::mem::replace(&mut self.seeded, true) || encoder.offset() <= QUESTION {
            return;
        }
        let written = encoder.slice_of(QUESTION, encoder.offset());
        let mut starts = Vec::new();
        let mut i = 0;
        while let Some(&len) = written.get(i) {
            if len == 0 || len & 0xC0 != 0 {
                break;
            }
            starts.push(i);
            i += 1 + usize::from(len);
        }
        if written.get(i) != Some(&0) {
            return;
        }
        for s in starts {
            let offset = QUESTION + s;
            if offset <= MAX_POINTER {
                self.at
                    .entry(written[s..=i].to_vec())
                    .or_insert(offset as u16);
            }
        }
    }

    /// Writes `name`: its labels up to the longest suffix already written, then a
    /// pointer to it (or the root octet). Each new suffix below [`MAX_POINTER`] is
    /// noted for the names after it.
    fn emit(&mut self, encoder: &mut BinEncoder<'_>, name: &rr::Name) -> Result<(), ProtoError> {
        let labels: Vec<&[u8]> = name.iter().collect();
        for i in 0..labels.len() {
            let suffix = wire(&labels[i..]);
            if let Some(&at) = self.at.get(&suffix) {
                return encoder.emit_u16(0xC000 | at);
            }
            let offset = encoder.offset();
            if offset <= MAX_POINTER {
                self.at.insert(suffix, offset as u16);
            }
            encoder.emit_character_data(labels[i])?;
        }
        encoder.emit(0)
    }
}

/// The uncompressed wire form of `labels` with the root.
fn wire(labels: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(labels.iter().map(|l| l.len() + 1).sum::<usize>() + 1);
    for l in labels {
        out.push(l.len() as u8);
        out.extend_from_slice(l);
    }
    out.push(0);
    out
}

/// The records of one section, written with the shared [`Suffixes`].
struct Section<'a>(&'a [Record], &'a RefCell<Suffixes>);

impl EmitAndCount for Section<'_> {
    fn emit(&mut self, encoder: &mut BinEncoder<'_>) -> Result<usize, ProtoError> {
        let mut table = self.1.borrow_mut();
        table.seed(encoder);
        for r in self.0 {
            table.emit(encoder, &r.name)?;
            r.record_type().emit(encoder)?;
            r.dns_class.emit(encoder)?;
            encoder.emit_u32(r.ttl)?;
            let place = encoder.place::<u16>()?;
            match &r.data {
                RData::CNAME(n) => table.emit(encoder, &n.0)?,
                RData::NS(n) => table.emit(encoder, &n.0)?,
                RData::PTR(n) => table.emit(encoder, &n.0)?,
                RData::MX(mx) => {
                    encoder.emit_u16(mx.preference)?;
                    table.emit(encoder, &mx.exchange)?;
                }
                RData::SOA(soa) => {
                    table.emit(encoder, &soa.mname)?;
                    table.emit(encoder, &soa.rname)?;
                    encoder.emit_u32(soa.serial)?;
                    encoder.emit_i32(soa.refresh)?;
                    encoder.emit_i32(soa.retry)?;
                    encoder.emit_i32(soa.expire)?;
                    encoder.emit_u32(soa.minimum)?;
                }
                other => other.emit(encoder)?,
            }
            let len = encoder.len_since_place(&place);
            place.replace(encoder, u16::try_from(len).unwrap_or(u16::MAX))?;
        }
        Ok(self.0.len())
    }
}
