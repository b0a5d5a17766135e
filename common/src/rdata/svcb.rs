//! SVCB and HTTPS (RFC 9460): `<priority> <target> [key[=value] ...]`. Parameters are
//! kept as their wire values by key number, so the canonical text writes them in key
//! order (as RFC 9460 §2.2 requires on the wire) whatever order they were given in.
use super::tokens::{split, text};
use crate::name::Name;
use base64::Engine;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

const MANDATORY: u16 = 0;
const ALPN: u16 = 1;
const NO_DEFAULT_ALPN: u16 = 2;
const PORT: u16 = 3;
const IPV4HINT: u16 = 4;
const ECH: u16 = 5;
const IPV6HINT: u16 = 6;

/// One SVCB or HTTPS value.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Svcb {
    /// 0 is alias mode (no parameters), otherwise service mode.
    pub priority: u16,
    pub target: Name,
    /// Wire value of each parameter, by key number.
    pub params: BTreeMap<u16, Vec<u8>>,
}

fn key_name(key: u16) -> String {
    match key {
        MANDATORY => "mandatory".into(),
        ALPN => "alpn".into(),
        NO_DEFAULT_ALPN => "no-default-alpn".into(),
        PORT => "port".into(),
        IPV4HINT => "ipv4hint".into(),
        ECH => "ech".into(),
        IPV6HINT => "ipv6hint".into(),
        n => format!("key{n}"),
    }
}

fn key_number(name: &str) -> Result<u16, String> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "mandatory" => MANDATORY,
        "alpn" => ALPN,
        "no-default-alpn" => NO_DEFAULT_ALPN,
        "port" => PORT,
        "ipv4hint" => IPV4HINT,
        "ech" => ECH,
        "ipv6hint" => IPV6HINT,
        other => match other.strip_prefix("key").map(str::parse::<u16>) {
            Some(Ok(n)) if n != 65535 => n,
            _ => return Err(format!("unknown parameter key {name:?}")),
        },
    })
}

impl Svcb {
    pub(super) fn parse(v: &str) -> Result<Svcb, String> {
        let tokens = split(v)?;
        let (Some(priority), Some(target)) = (tokens.first(), tokens.get(1)) else {
            return Err("expected \"<priority> <target> [key=value ...]\"".into());
        };
        let priority = text(priority)
            .parse::<u16>()
            .map_err(|_| format!("priority {:?} is not 0..65535", text(priority)))?;
        let target = Name::parse(&text(target)).map_err(|e| format!("target: {e}"))?;
        let mut params = BTreeMap::new();
        for t in &tokens[2..] {
            let t = text(t);
            let (key, value) = match t.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (t.as_str(), None),
            };
            let n = key_number(key)?;
            let wire = encode_param(n, key, value)?;
            if params.insert(n, wire).is_some() {
                return Err(format!("parameter {key} is given twice"));
            }
        }
        let svcb = Svcb {
            priority,
            target,
            params,
        };
        svcb.check()?;
        Ok(svcb)
    }

    /// The rules of RFC 9460 §2.4.3, §7 and §8 between parameters.
    fn check(&self) -> Result<(), String> {
        if self.priority == 0 && !self.params.is_empty() {
            return Err("priority 0 is alias mode, which takes no parameters".into());
        }
        if self.params.contains_key(&NO_DEFAULT_ALPN) && !self.params.contains_key(&ALPN) {
            return Err("no-default-alpn needs alpn".into());
        }
        if let Some(m) = self.params.get(&MANDATORY) {
            for k in m.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])) {
                if k == MANDATORY {
                    return Err("mandatory must not list itself".into());
                }
                if !self.params.contains_key(&k) {
                    return Err(format!(
                        "mandatory lists {}, which is not given",
                        key_name(k)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Wire form of the RDATA (target uncompressed).
    pub(super) fn to_wire(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.priority.to_be_bytes());
        super::octets::put_name(out, &self.target);
        for (k, v) in &self.params {
            out.extend_from_slice(&k.to_be_bytes());
            out.extend_from_slice(&(v.len() as u16).to_be_bytes());
            out.extend_from_slice(v);
        }
    }

    pub(super) fn wire_len(&self) -> usize {
        let mut v = Vec::new();
        self.to_wire(&mut v);
        v.len()
    }

    /// Reads the wire form back, re-checking the value rules through the text form.
    pub(super) fn from_wire(r: &mut super::octets::Reader<'_>) -> Result<Svcb, String> {
        let priority = r.u16()?;
        let target = r.name()?;
        let mut params = BTreeMap::new();
        while !r.done() {
            let k = r.u16()?;
            let len = usize::from(r.u16()?);
            params.insert(k, r.bytes(len)?.to_vec());
        }
        let svcb = Svcb {
            priority,
            target,
            params,
        };
        // Round-trip through the text form so that wire data is held to the same rules.
        Svcb::parse(&svcb.to_string())
    }
}

fn encode_param(key: u16, name: &str, value: Option<&str>) -> Result<Vec<u8>, String> {
    let need = || value.ok_or_else(|| format!("parameter {name} needs a value"));
    let list = |v: &str| -> Vec<String> { v.split(',').map(str::to_string).collect() };
    Ok(match key {
        MANDATORY => {
            let mut keys = Vec::new();
            for k in list(need()?) {
                keys.push(key_number(&k)?);
            }
            keys.sort_unstable();
            if keys.windows(2).any(|w| w[0] == w[1]) {
                return Err("mandatory lists a key twice".into());
            }
            keys.iter().flat_map(|k| k.to_be_bytes()).collect()
        }
        ALPN => {
            let mut out = Vec::new();
            for id in list(need()?) {
                if id.is_empty()
                    || id.len() > 255
                    || !id.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
                {
                    return Err(format!("alpn id {id:?} must be 1-255 printable characters"));
                }
                out.push(id.len() as u8);
                out.extend_from_slice(id.as_bytes());
            }
            out
        }
        NO_DEFAULT_ALPN => match value {
            None | Some("") => Vec::new(),
            Some(_) => return Err("no-default-alpn takes no value".into()),
        },
        PORT => need()?
            .parse::<u16>()
            .map_err(|_| format!("port {:?} is not 0..65535", value.unwrap_or_default()))?
            .to_be_bytes()
            .to_vec(),
        IPV4HINT => {
            let mut out = Vec::new();
            for a in list(need()?) {
                let ip: Ipv4Addr = a
                    .parse()
                    .map_err(|_| format!("ipv4hint {a:?} is not an IPv4 address"))?;
                out.extend_from_slice(&ip.octets());
            }
            out
        }
        IPV6HINT => {
            let mut out = Vec::new();
            for a in list(need()?) {
                let ip: Ipv6Addr = a
                    .parse()
                    .map_err(|_| format!("ipv6hint {a:?} is not an IPv6 address"))?;
                out.extend_from_slice(&ip.octets());
            }
            out
        }
        ECH => base64::engine::general_purpose::STANDARD
            .decode(need()?)
            .map_err(|_| "ech is not base64".to_string())?,
        _ => value.unwrap_or_default().as_bytes().to_vec(),
    })
}

impl fmt::Display for Svcb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.priority, self.target)?;
        for (&k, v) in &self.params {
            write!(f, " {}", key_name(k))?;
            match k {
                NO_DEFAULT_ALPN => {}
                MANDATORY => {
                    let names: Vec<String> = v
                        .chunks(2)
                        .map(|c| {
                            key_name(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
                        })
                        .collect();
                    write!(f, "={}", names.join(","))?;
                }
                ALPN => {
                    let mut ids = Vec::new();
                    let mut rest = v.as_slice();
                    while let Some((&n, tail)) = rest.split_first() {
                        let n = usize::from(n).min(tail.len());
                        ids.push(String::from_utf8_lossy(&tail[..n]).into_owned());
                        rest = &tail[n..];
                    }
                    write!(f, "={}", ids.join(","))?;
                }
                PORT if v.len() == 2 => write!(f, "={}", u16::from_be_bytes([v[0], v[1]]))?,
                IPV4HINT => {
                    let ips: Vec<String> = v
                        .chunks_exact(4)
                        .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]).to_string())
                        .collect();
                    write!(f, "={}", ips.join(","))?;
                }
                IPV6HINT => {
                    let ips: Vec<String> = v
                        .chunks_exact(16)
                        .map(|c| {
                            let o: [u8; 16] = c.try_into().unwrap_or([0; 16]);
                            Ipv6Addr::from(o).to_string()
                        })
                        .collect();
                    write!(f, "={}", ips.join(","))?;
                }
                ECH => write!(
                    f,
                    "={}",
                    base64::engine::general_purpose::STANDARD.encode(v)
                )?,
                _ if v.is_empty() => {}
                _ => {
                    f.write_str("=")?;
                    super::write_quoted(f, v)?;
                }
            }
        }
        Ok(())
    }
}
