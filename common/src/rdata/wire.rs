//! Record data in wire form (RFC 1035 §3.3 and each type's RFC), names uncompressed:
//! what an RFC 2136 UPDATE carries and what a DNS server answers. Drivers hand these
//! octets to their DNS library, so every type is encoded once, here.
use super::octets::{Reader, put_name, put_string};
use super::svcb::Svcb;
use super::{RData, RecordType};
use std::net::{Ipv4Addr, Ipv6Addr};

impl RData {
    /// The record data in wire form.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            RData::A(ip) => out.extend_from_slice(&ip.octets()),
            RData::Aaaa(ip) => out.extend_from_slice(&ip.octets()),
            RData::Cname(n) | RData::Ns(n) | RData::Ptr(n) => put_name(&mut out, n),
            RData::Txt(strings) => strings.iter().for_each(|s| put_string(&mut out, s)),
            RData::Mx {
                preference,
                exchange,
            } => {
                out.extend_from_slice(&preference.to_be_bytes());
                put_name(&mut out, exchange);
            }
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => {
                for n in [priority, weight, port] {
                    out.extend_from_slice(&n.to_be_bytes());
                }
                put_name(&mut out, target);
            }
            RData::Caa { flags, tag, value } => {
                out.push(*flags);
                put_string(&mut out, tag.as_bytes());
                out.extend_from_slice(value);
            }
            RData::Svcb(s) | RData::Https(s) => s.to_wire(&mut out),
            RData::Tlsa {
                usage,
                selector,
                matching,
                data,
            } => {
                out.extend_from_slice(&[*usage, *selector, *matching]);
                out.extend_from_slice(data);
            }
            RData::Sshfp {
                algorithm,
                fp_type,
                fingerprint,
            } => {
                out.extend_from_slice(&[*algorithm, *fp_type]);
                out.extend_from_slice(fingerprint);
            }
            RData::Naptr {
                order,
                preference,
                flags,
                service,
                regexp,
                replacement,
            } => {
                out.extend_from_slice(&order.to_be_bytes());
                out.extend_from_slice(&preference.to_be_bytes());
                for s in [flags, service, regexp] {
                    put_string(&mut out, s);
                }
                put_name(&mut out, replacement);
            }
            RData::Ds {
                key_tag,
                algorithm,
                digest_type,
                digest,
            } => {
                out.extend_from_slice(&key_tag.to_be_bytes());
                out.extend_from_slice(&[*algorithm, *digest_type]);
                out.extend_from_slice(digest);
            }
        }
        out
    }

    /// Reads wire-form record data of `rtype` (names uncompressed), held to the same
    /// rules as text: the result is re-parsed from its presentation form.
    pub fn from_wire(rtype: RecordType, data: &[u8]) -> Result<RData, crate::error::ModelError> {
        let err = |problem: String| crate::error::ModelError::Value {
            rtype: rtype.to_string(),
            value: format!("wire data {}", hex::encode(&data[..data.len().min(40)])),
            problem,
        };
        let mut r = Reader::new(data);
        let parsed = read(rtype, &mut r).map_err(err)?;
        if !r.done() {
            return Err(err("trailing octets after the record data".into()));
        }
        RData::parse(rtype, &parsed.to_string())
    }
}

fn read(rtype: RecordType, r: &mut Reader<'_>) -> Result<RData, String> {
    Ok(match rtype {
        RecordType::A => {
            let b = r.bytes(4)?;
            RData::A(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        }
        RecordType::Aaaa => {
            let b: [u8; 16] = r.bytes(16)?.try_into().map_err(|_| "short AAAA")?;
            RData::Aaaa(Ipv6Addr::from(b))
        }
        RecordType::Cname => RData::Cname(r.name()?),
        RecordType::Ns => RData::Ns(r.name()?),
        RecordType::Ptr => RData::Ptr(r.name()?),
        RecordType::Txt => {
            let mut strings = Vec::new();
            while !r.done() {
                strings.push(r.string()?);
            }
            RData::Txt(strings)
        }
        RecordType::Mx => RData::Mx {
            preference: r.u16()?,
            exchange: r.name()?,
        },
        RecordType::Srv => RData::Srv {
            priority: r.u16()?,
            weight: r.u16()?,
            port: r.u16()?,
            target: r.name()?,
        },
        RecordType::Caa => RData::Caa {
            flags: r.u8()?,
            tag: String::from_utf8_lossy(&r.string()?).into_owned(),
            value: r.rest().to_vec(),
        },
        RecordType::Svcb => RData::Svcb(Svcb::from_wire(r)?),
        RecordType::Https => RData::Https(Svcb::from_wire(r)?),
        RecordType::Tlsa => RData::Tlsa {
            usage: r.u8()?,
            selector: r.u8()?,
            matching: r.u8()?,
            data: r.rest().to_vec(),
        },
        RecordType::Sshfp => RData::Sshfp {
            algorithm: r.u8()?,
            fp_type: r.u8()?,
            fingerprint: r.rest().to_vec(),
        },
        RecordType::Naptr => RData::Naptr {
            order: r.u16()?,
            preference: r.u16()?,
            flags: r.string()?,
            service: r.string()?,
            regexp: r.string()?,
            replacement: r.name()?,
        },
        RecordType::Ds => RData::Ds {
            key_tag: r.u16()?,
            algorithm: r.u8()?,
            digest_type: r.u8()?,
            digest: r.rest().to_vec(),
        },
    })
}
