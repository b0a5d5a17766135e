//! dnsplane's record data as hickory's and back, for the types whose hickory form is
//! richer than a constructor call (PTR, SVCB, HTTPS, TLSA, SSHFP, NAPTR, DS): both
//! sides go through the one wire encoding of `dnsplane_common::RData`, so the RFC 2136
//! driver and the embedded DNS server cannot disagree on a type's octets.
use dnsplane_common::{Name, RData, RecordType};
use hickory_proto::rr::{Name as HName, RData as HRData, RecordType as HRecordType};
use hickory_proto::serialize::binary::{BinDecoder, BinEncodable, Restrict};

/// hickory's code for a dnsplane type.
pub(crate) fn htype(t: RecordType) -> HRecordType {
    match t {
        RecordType::A => HRecordType::A,
        RecordType::Aaaa => HRecordType::AAAA,
        RecordType::Cname => HRecordType::CNAME,
        RecordType::Txt => HRecordType::TXT,
        RecordType::Mx => HRecordType::MX,
        RecordType::Srv => HRecordType::SRV,
        RecordType::Ns => HRecordType::NS,
        RecordType::Caa => HRecordType::CAA,
        RecordType::Ptr => HRecordType::PTR,
        RecordType::Svcb => HRecordType::SVCB,
        RecordType::Https => HRecordType::HTTPS,
        RecordType::Tlsa => HRecordType::TLSA,
        RecordType::Sshfp => HRecordType::SSHFP,
        RecordType::Naptr => HRecordType::NAPTR,
        RecordType::Ds => HRecordType::DS,
    }
}

/// A dnsplane name as hickory's, label by label from its octets: hickory's text parser
/// refuses octets a label may hold that it does not expect, such as the `/` of a
/// classless reverse zone (RFC 2317 §4, `0/25.2.0.192.in-addr.arpa`).
pub(crate) fn to_hname(n: &Name) -> Result<HName, String> {
    let body = n.as_str().trim_end_matches('.');
    let labels = body.split('.').filter(|l| !l.is_empty()).map(str::as_bytes);
    HName::from_labels(labels).map_err(|e| format!("name {n}: {e}"))
}

/// hickory's name as dnsplane's text, its labels' octets as they are (hickory's own
/// text escapes `/` as `\/`); `None` for a label that holds a dot or octets outside
/// printable ASCII, which no dnsplane name holds.
pub(crate) fn hname_text(h: &HName) -> Option<String> {
    let mut out = String::new();
    for label in h.iter() {
        if label.iter().any(|b| *b == b'.' || !b.is_ascii_graphic()) {
            return None;
        }
        out.push_str(std::str::from_utf8(label).ok()?);
        out.push('.');
    }
    if out.is_empty() {
        out.push('.');
    }
    Some(out)
}

/// `data` as hickory record data, decoded from its wire form.
pub(crate) fn to_hickory(data: &RData) -> Result<HRData, String> {
    let bytes = data.to_wire();
    let len =
        u16::try_from(bytes.len()).map_err(|_| "record data above 65535 octets".to_string())?;
    let mut decoder = BinDecoder::new(&bytes);
    HRData::read(&mut decoder, htype(data.record_type()), Restrict::new(len))
        .map_err(|e| format!("{} value {data}: {e}", data.record_type()))
}

/// hickory record data of one of the newer types as a canonical dnsplane value; `None`
/// for other types (the callers convert those themselves) and for data dnsplane refuses.
pub(crate) fn from_hickory(data: &HRData) -> Option<(RecordType, String)> {
    let rtype = match data.record_type() {
        HRecordType::PTR => RecordType::Ptr,
        HRecordType::SVCB => RecordType::Svcb,
        HRecordType::HTTPS => RecordType::Https,
        HRecordType::TLSA => RecordType::Tlsa,
        HRecordType::SSHFP => RecordType::Sshfp,
        HRecordType::NAPTR => RecordType::Naptr,
        HRecordType::DS => RecordType::Ds,
        _ => return None,
    };
    let bytes = data.to_bytes().ok()?;
    let value = RData::from_wire(rtype, &bytes).ok()?;
    Some((rtype, value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_types_survive_hickory_both_ways() {
        let sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        for (t, v) in [
            (RecordType::Ptr, "host.example.com.".to_string()),
            (
                RecordType::Https,
                "1 . alpn=h2,h3 port=443 ipv4hint=192.0.2.1".into(),
            ),
            (
                RecordType::Svcb,
                "2 svc.example.net. mandatory=port port=853".into(),
            ),
            (RecordType::Tlsa, format!("3 1 1 {sha}")),
            (RecordType::Sshfp, format!("4 2 {sha}")),
            (
                RecordType::Naptr,
                "100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.com.".into(),
            ),
            (RecordType::Ds, format!("12345 13 2 {sha}")),
        ] {
            let data = RData::parse(t, &v).unwrap();
            let h = to_hickory(&data).unwrap();
            assert_eq!(h.record_type(), htype(t));
            assert_eq!(from_hickory(&h), Some((t, v.clone())), "{t}");
        }
    }
}
