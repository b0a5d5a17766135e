//! Zone transfers (AXFR, RFC 5936) from the embedded provider, so that `dig AXFR`
//! shows a whole zone as dnsplane left it. Over TCP only (a UDP AXFR is refused, as
//! RFC 5936 says); the zone's SOA, every record, the SOA again, in as many messages
//! as it takes. Who may transfer is `[accounts] dns_transfer`: loopback clients only
//! by default, since a transfer enumerates every name of the zone at once.
use super::{Authority, records, soa};
use hickory_proto::op::{Message, MessageType, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::{self, Record};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};
use serde::Deserialize;
use std::net::IpAddr;

/// Largest transfer message: well under the 65,535 bytes TCP framing allows, leaving
/// room for the header and the question.
const MAX_MESSAGE: usize = 60_000;

/// Who may transfer a zone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transfer {
    /// Clients on 127.0.0.0/8 and ::1 only.
    #[default]
    Loopback,
    /// Any client that reaches the DNS port.
    Any,
    /// Nobody: AXFR is refused.
    None,
}

impl Transfer {
    fn allows(self, peer: IpAddr) -> bool {
        match self {
            Transfer::Loopback => peer.is_loopback(),
            Transfer::Any => true,
            Transfer::None => false,
        }
    }
}

impl Authority {
    /// Who may transfer zones from this authority.
    pub fn with_transfer(mut self, transfer: Transfer) -> Self {
        self.transfer = transfer;
        self
    }

    /// The messages answering `request` when it asks for a zone transfer (over TCP,
    /// from `peer`); `None` when it is not an AXFR request, which [`Authority::respond`]
    /// answers.
    pub fn transfer(&self, request: &[u8], peer: IpAddr) -> Option<Vec<Vec<u8>>> {
        let req = Message::from_vec(request).ok()?;
        if req.metadata.message_type != MessageType::Query
            || req.metadata.op_code != OpCode::Query
            || req.queries.len() != 1
            || req.queries[0].query_type() != rr::RecordType::AXFR
        {
            return None;
        }
        let q = &req.queries[0];
        let fresh = || {
            let mut m = Message::response(req.metadata.id, req.metadata.op_code);
            m.metadata = Metadata::response_from_request(&req.metadata);
            m.metadata.authoritative = true;
            m
        };
        let refuse = |rcode: ResponseCode| {
            let mut m = fresh();
            m.add_queries(req.queries.iter().cloned());
            m.metadata.response_code = rcode;
            m.metadata.authoritative = false;
            m.to_vec().ok().map(|b| vec![b])
        };
        // Only a zone's own apex is transferred.
        let Some((zone, _)) = self.zones.iter().find(|(_, hz)| hz == q.name()) else {
            return refuse(ResponseCode::NotAuth);
        };
        if !self.transfer.allows(peer) {
            tracing::info!(%peer, zone = %zone, "Zone transfer refused (dns_transfer).");
            return refuse(ResponseCode::Refused);
        }
        let all = self.store.read(zone, |z| {
            let soa = soa(z, zone)?;
            let mut all = vec![soa.clone()];
            for rrset in z.rrsets() {
                all.extend(records(&rrset.key.name, rrset));
            }
            all.push(soa);
            Some(all)
        });
        let Ok(Some(all)) = all else {
            return refuse(ResponseCode::ServFail);
        };
        let mut out = Vec::new();
        let mut message = fresh();
        message.add_queries(req.queries.iter().cloned());
        let mut size = 512;
        for record in all {
            let len = encoded_len(&record);
            if size + len > MAX_MESSAGE && !message.answers.is_empty() {
                out.push(message.to_vec().ok()?);
                message = fresh();
                size = 512;
            }
            size += len;
            message.add_answer(record);
        }
        out.push(message.to_vec().ok()?);
        tracing::debug!(%peer, zone = %zone, messages = out.len(), "Zone transferred.");
        Some(out)
    }
}

/// The record's size on the wire without name compression: an upper bound of what
/// it adds to a message.
fn encoded_len(record: &Record) -> usize {
    let mut buf = Vec::new();
    let mut enc = BinEncoder::new(&mut buf);
    match record.emit(&mut enc) {
        Ok(()) => buf.len(),
        Err(_) => MAX_MESSAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_may_transfer() {
        let (lo, lo6, other) = (
            IpAddr::from([127, 0, 0, 1]),
            IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
            IpAddr::from([192, 0, 2, 1]),
        );
        assert!(Transfer::default().allows(lo) && Transfer::default().allows(lo6));
        assert!(!Transfer::default().allows(other));
        assert!(Transfer::Any.allows(other));
        assert!(!Transfer::None.allows(lo));
        let t: Transfer = serde_json::from_str("\"any\"").expect("any");
        assert_eq!(t, Transfer::Any);
        assert!(serde_json::from_str::<Transfer>("\"all\"").is_err());
    }
}
