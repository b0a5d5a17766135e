//! Record data in wire form (RFC 1035 §3.3 and each type's RFC), names uncompressed:
//! what an RFC 2136 UPDATE carries and what a DNS server answers. Drivers hand these
//! octets to their DNS library, so every type is encoded once, here.
use super::svcb::Svcb;
use super::{RData, RecordType};
use crate::name::Name;
use std::net::{Ipv4Addr, Ipv6Addr};

pub(super) fn put_name(out: &mut Vec<u8>, name: &Name) {
    for label in name.as_str().split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(s.len() as u8);
    out.extend_from_slice(s);
}

/// A cursor over one record's data.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    pub(super) fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at + n;
        let s = self
            .data
            .get(self.at..end)
            .ok_or_else(|| format!("record data ends {} octets early", end - self.data.len()))?;
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16, String> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn rest(&mut self) -> &'a [u8] {
        let s = &self.data[self.at.min(self.data.len())..];
        self.at = self.data.len();
        s
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        let n = usize::from(self.u8()?);
        Ok(self.bytes(n)?.to_vec())
    }

    pub(super) fn name(&mut self) -> Result<Name, String> {
        let mut text = String::new();
        loop {
            let n = self.u8()?;
            if n == 0 {
                break;
            }
            if n > 63 {
                return Err("compressed or extended label in record data".into());
            }
            let label = self.bytes(usize::from(n))?;
            text.push_str(&String::from_utf8_lossy(label));
            text.push('.');
        }
        if text.is_empty() {
            text.push('.');
        }
        Name::parse(&text).map_err(|e| e.to_string())
    }
}

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
        let mut r = Reader { data, at: 0 };
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
