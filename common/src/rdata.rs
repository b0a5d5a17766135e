//! Record types and their values: parsed, validated and written back in one canonical
//! presentation form, so that two values are equal exactly when a resolver would see
//! the same data.
use crate::error::{ModelError, excerpt};
use crate::name::Name;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

mod naptr;
mod octets;
mod security;
mod svcb;
mod tokens;
mod wire;
pub use svcb::Svcb;

/// The most octets of data one record can carry (RDLENGTH is 16 bits, RFC 1035 §3.2.1).
pub const MAX_RDATA: usize = 65_535;
/// The most octets of one TXT or CAA character-string (its length is one octet).
pub const MAX_STRING: usize = 255;

/// The record types dnsplane manages.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub enum RecordType {
    A,
    Aaaa,
    Cname,
    Txt,
    Mx,
    Srv,
    Ns,
    Caa,
    Ptr,
    Svcb,
    Https,
    Tlsa,
    Sshfp,
    Naptr,
    Ds,
}

impl RecordType {
    pub const ALL: [RecordType; 15] = [
        RecordType::A,
        RecordType::Aaaa,
        RecordType::Cname,
        RecordType::Txt,
        RecordType::Mx,
        RecordType::Srv,
        RecordType::Ns,
        RecordType::Caa,
        RecordType::Ptr,
        RecordType::Svcb,
        RecordType::Https,
        RecordType::Tlsa,
        RecordType::Sshfp,
        RecordType::Naptr,
        RecordType::Ds,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::A => "A",
            RecordType::Aaaa => "AAAA",
            RecordType::Cname => "CNAME",
            RecordType::Txt => "TXT",
            RecordType::Mx => "MX",
            RecordType::Srv => "SRV",
            RecordType::Ns => "NS",
            RecordType::Caa => "CAA",
            RecordType::Ptr => "PTR",
            RecordType::Svcb => "SVCB",
            RecordType::Https => "HTTPS",
            RecordType::Tlsa => "TLSA",
            RecordType::Sshfp => "SSHFP",
            RecordType::Naptr => "NAPTR",
            RecordType::Ds => "DS",
        }
    }

    pub fn parse(s: &str) -> Result<RecordType, ModelError> {
        let upper = s.trim().to_ascii_uppercase();
        RecordType::ALL
            .into_iter()
            .find(|t| t.as_str() == upper)
            .ok_or_else(|| ModelError::Type(excerpt(s)))
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for RecordType {
    type Error = ModelError;
    fn try_from(s: String) -> Result<Self, ModelError> {
        RecordType::parse(&s)
    }
}

impl From<RecordType> for String {
    fn from(t: RecordType) -> String {
        t.as_str().to_string()
    }
}

/// A parsed record value. Its `Display` is the canonical presentation form.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum RData {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(Name),
    /// Character-strings of at most 255 bytes each.
    Txt(Vec<Vec<u8>>),
    Mx {
        preference: u16,
        exchange: Name,
    },
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: Name,
    },
    Ns(Name),
    Caa {
        flags: u8,
        tag: String,
        value: Vec<u8>,
    },
    Ptr(Name),
    Svcb(Svcb),
    Https(Svcb),
    /// RFC 6698: certificate usage, selector, matching type, association data.
    Tlsa {
        usage: u8,
        selector: u8,
        matching: u8,
        data: Vec<u8>,
    },
    /// RFC 4255: key algorithm, fingerprint type, fingerprint.
    Sshfp {
        algorithm: u8,
        fp_type: u8,
        fingerprint: Vec<u8>,
    },
    /// RFC 3403; flags are kept upper-case (they compare case-insensitively).
    Naptr {
        order: u16,
        preference: u16,
        flags: Vec<u8>,
        service: Vec<u8>,
        regexp: Vec<u8>,
        replacement: Name,
    },
    /// RFC 4034 §5: key tag, algorithm, digest type, digest.
    Ds {
        key_tag: u16,
        algorithm: u8,
        digest_type: u8,
        digest: Vec<u8>,
    },
}

impl RData {
    /// Parses `value` as a value of type `rtype`. Accepts the usual spellings (a TXT may be
    /// raw text or quoted character-strings; host names may omit the trailing dot).
    ///
    /// A value no record can carry is refused: more than [`MAX_RDATA`] octets of data
    /// once encoded (a TXT value of raw text is cut into 255-octet character-strings
    /// first, so a 70,000-byte text needs 275 strings and 70,275 octets).
    pub fn parse(rtype: RecordType, value: &str) -> Result<RData, ModelError> {
        let err = |problem: String| ModelError::Value {
            rtype: rtype.to_string(),
            value: excerpt(value),
            problem,
        };
        let data = RData::parse_unchecked(rtype, value, &err)?;
        let len = data.wire_len();
        if len > MAX_RDATA {
            return Err(err(format!(
                "{len} octets of record data on the wire, above the {MAX_RDATA} one record can carry"
            )));
        }
        Ok(data)
    }

    fn parse_unchecked(
        rtype: RecordType,
        value: &str,
        err: &dyn Fn(String) -> ModelError,
    ) -> Result<RData, ModelError> {
        let host = |s: &str| Name::parse(s).map_err(|e| err(e.to_string()));
        let v = value.trim();
        match rtype {
            RecordType::A => v
                .parse::<Ipv4Addr>()
                .map(RData::A)
                .map_err(|_| err("not a valid IPv4 address".into())),
            RecordType::Aaaa => v
                .parse::<Ipv6Addr>()
                .map(RData::Aaaa)
                .map_err(|_| err("not a valid IPv6 address".into())),
            RecordType::Cname => Ok(RData::Cname(host(v)?)),
            RecordType::Ns => Ok(RData::Ns(host(v)?)),
            RecordType::Ptr => Ok(RData::Ptr(host(v)?)),
            RecordType::Svcb => Svcb::parse(v).map(RData::Svcb).map_err(err),
            RecordType::Https => Svcb::parse(v).map(RData::Https).map_err(err),
            RecordType::Tlsa => security::tlsa(v).map_err(err),
            RecordType::Sshfp => security::sshfp(v).map_err(err),
            RecordType::Ds => security::ds(v).map_err(err),
            RecordType::Naptr => naptr::parse(v).map_err(err),
            RecordType::Txt => parse_txt(value).map(RData::Txt).map_err(err),
            RecordType::Mx => {
                let parts: Vec<&str> = v.split_whitespace().collect();
                let [pref, exchange] = parts[..] else {
                    return Err(err("expected \"<preference> <exchange>\"".into()));
                };
                Ok(RData::Mx {
                    preference: pref.parse().map_err(|_| {
                        err(format!("preference {:?} is not 0..65535", excerpt(pref)))
                    })?,
                    exchange: host(exchange)?,
                })
            }
            RecordType::Srv => {
                let parts: Vec<&str> = v.split_whitespace().collect();
                let [prio, weight, port, target] = parts[..] else {
                    return Err(err(
                        "expected \"<priority> <weight> <port> <target>\"".into()
                    ));
                };
                let num = |what: &str, s: &str| {
                    s.parse::<u16>()
                        .map_err(|_| err(format!("{what} {:?} is not 0..65535", excerpt(s))))
                };
                Ok(RData::Srv {
                    priority: num("priority", prio)?,
                    weight: num("weight", weight)?,
                    port: num("port", port)?,
                    target: host(target)?,
                })
            }
            RecordType::Caa => {
                let mut it = v.splitn(3, char::is_whitespace);
                let (Some(flags), Some(tag), Some(rest)) = (it.next(), it.next(), it.next()) else {
                    return Err(err("expected \"<flags> <tag> <value>\"".into()));
                };
                let flags = flags
                    .parse::<u8>()
                    .map_err(|_| err(format!("flags {:?} is not 0..255", excerpt(flags))))?;
                let tag = tag.to_ascii_lowercase();
                if tag.is_empty()
                    || tag.len() > 15
                    || !tag.chars().all(|c| c.is_ascii_alphanumeric())
                {
                    return Err(err(format!(
                        "tag {:?} must be 1-15 letters or digits",
                        excerpt(&tag)
                    )));
                }
                let rest = rest.trim();
                let value = if rest.starts_with('"') {
                    let strings = parse_txt(rest).map_err(err)?;
                    if strings.len() != 1 {
                        return Err(err("value must be one quoted string".into()));
                    }
                    strings.into_iter().next().unwrap_or_default()
                } else {
                    rest.as_bytes().to_vec()
                };
                Ok(RData::Caa { flags, tag, value })
            }
        }
    }

    /// The size of this value's RDATA on the wire (names uncompressed).
    pub fn wire_len(&self) -> usize {
        let name = |n: &Name| name_wire_len(n.as_str());
        match self {
            RData::A(_) => 4,
            RData::Aaaa(_) => 16,
            RData::Cname(n) | RData::Ns(n) | RData::Ptr(n) => name(n),
            RData::Svcb(s) | RData::Https(s) => s.wire_len(),
            RData::Tlsa { data, .. } => 3 + data.len(),
            RData::Sshfp { fingerprint, .. } => 2 + fingerprint.len(),
            RData::Ds { digest, .. } => 4 + digest.len(),
            RData::Naptr {
                flags,
                service,
                regexp,
                replacement,
                ..
            } => 7 + flags.len() + service.len() + regexp.len() + name(replacement),
            RData::Mx { exchange, .. } => 2 + name(exchange),
            RData::Srv { target, .. } => 6 + name(target),
            RData::Txt(strings) => strings.iter().map(|s| s.len() + 1).sum(),
            RData::Caa { tag, value, .. } => 2 + tag.len() + value.len(),
        }
    }

    pub fn record_type(&self) -> RecordType {
        match self {
            RData::A(_) => RecordType::A,
            RData::Aaaa(_) => RecordType::Aaaa,
            RData::Cname(_) => RecordType::Cname,
            RData::Txt(_) => RecordType::Txt,
            RData::Mx { .. } => RecordType::Mx,
            RData::Srv { .. } => RecordType::Srv,
            RData::Ns(_) => RecordType::Ns,
            RData::Caa { .. } => RecordType::Caa,
            RData::Ptr(_) => RecordType::Ptr,
            RData::Svcb(_) => RecordType::Svcb,
            RData::Https(_) => RecordType::Https,
            RData::Tlsa { .. } => RecordType::Tlsa,
            RData::Sshfp { .. } => RecordType::Sshfp,
            RData::Naptr { .. } => RecordType::Naptr,
            RData::Ds { .. } => RecordType::Ds,
        }
    }
}

/// The size of a name on the wire, from its canonical text (`a.b.` → 5).
fn name_wire_len(text: &str) -> usize {
    if text == "." { 1 } else { text.len() + 1 }
}

/// The size on the wire of the RDATA of one canonical value of `rtype` (what a DNS
/// answer carries for it), computed from the text without parsing it again.
pub fn wire_len(rtype: RecordType, canonical: &str) -> usize {
    let last = || canonical.rsplit(' ').next().unwrap_or("");
    match rtype {
        RecordType::A => 4,
        RecordType::Aaaa => 16,
        RecordType::Cname | RecordType::Ns => name_wire_len(canonical),
        RecordType::Mx => 2 + name_wire_len(last()),
        RecordType::Srv => 6 + name_wire_len(last()),
        RecordType::Txt => quoted_bytes(canonical).iter().map(|n| n + 1).sum(),
        RecordType::Caa => {
            let mut parts = canonical.splitn(3, ' ');
            let (_flags, tag, value) = (parts.next(), parts.next(), parts.next());
            2 + tag.map_or(0, str::len) + quoted_bytes(value.unwrap_or("")).iter().sum::<usize>()
        }
        RecordType::Ptr => name_wire_len(canonical),
        // The newer types are rare and small: parse rather than keep a second sizing.
        RecordType::Svcb
        | RecordType::Https
        | RecordType::Tlsa
        | RecordType::Sshfp
        | RecordType::Naptr
        | RecordType::Ds => RData::parse_unchecked(rtype, canonical, &|p| ModelError::Value {
            rtype: rtype.to_string(),
            value: String::new(),
            problem: p,
        })
        .map_or(canonical.len(), |d| d.wire_len()),
    }
}

/// The byte length of each quoted character-string of a canonical value (`\DDD` and
/// `\x` escapes are one byte each).
fn quoted_bytes(canonical: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut chars = canonical.bytes().peekable();
    let mut current: Option<usize> = None;
    while let Some(b) = chars.next() {
        match (current, b) {
            (None, b'"') => current = Some(0),
            (None, _) => {}
            (Some(n), b'"') => {
                out.push(n);
                current = None;
            }
            (Some(n), b'\\') => {
                if chars.peek().is_some_and(u8::is_ascii_digit) {
                    chars.next();
                    chars.next();
                    chars.next();
                } else {
                    chars.next();
                }
                current = Some(n + 1);
            }
            (Some(n), _) => current = Some(n + 1),
        }
    }
    out
}

/// Canonical form of `value` as a value of `rtype`.
pub fn canonicalize(rtype: RecordType, value: &str) -> Result<String, ModelError> {
    Ok(RData::parse(rtype, value)?.to_string())
}

impl fmt::Display for RData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RData::A(ip) => write!(f, "{ip}"),
            RData::Aaaa(ip) => write!(f, "{ip}"),
            RData::Cname(n) | RData::Ns(n) | RData::Ptr(n) => write!(f, "{n}"),
            RData::Svcb(s) | RData::Https(s) => write!(f, "{s}"),
            RData::Tlsa {
                usage,
                selector,
                matching,
                data,
            } => write!(f, "{usage} {selector} {matching} {}", hex::encode(data)),
            RData::Sshfp {
                algorithm,
                fp_type,
                fingerprint,
            } => write!(f, "{algorithm} {fp_type} {}", hex::encode(fingerprint)),
            RData::Ds {
                key_tag,
                algorithm,
                digest_type,
                digest,
            } => write!(
                f,
                "{key_tag} {algorithm} {digest_type} {}",
                hex::encode(digest)
            ),
            RData::Naptr {
                order,
                preference,
                flags,
                service,
                regexp,
                replacement,
            } => {
                write!(f, "{order} {preference} ")?;
                for s in [flags, service, regexp] {
                    write_quoted(f, s)?;
                    f.write_str(" ")?;
                }
                write!(f, "{replacement}")
            }
            RData::Txt(strings) => {
                for (i, s) in strings.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write_quoted(f, s)?;
                }
                Ok(())
            }
            RData::Mx {
                preference,
                exchange,
            } => write!(f, "{preference} {exchange}"),
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => {
                write!(f, "{priority} {weight} {port} {target}")
            }
            RData::Caa { flags, tag, value } => {
                write!(f, "{flags} {tag} ")?;
                write_quoted(f, value)
            }
        }
    }
}

fn write_quoted(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    f.write_str("\"")?;
    for &b in bytes {
        match b {
            b'"' => f.write_str("\\\"")?,
            b'\\' => f.write_str("\\\\")?,
            0x20..=0x7e => write!(f, "{}", b as char)?,
            _ => write!(f, "\\{b:03}")?,
        }
    }
    f.write_str("\"")
}

/// TXT input: either quoted character-strings (`"a" "b"`, with `\"`, `\\` and `\DDD`
/// escapes), or raw text, which is cut into 255-byte strings.
fn parse_txt(value: &str) -> Result<Vec<Vec<u8>>, String> {
    let trimmed = value.trim();
    if !trimmed.starts_with('"') {
        if value.is_empty() {
            return Ok(vec![Vec::new()]);
        }
        return Ok(value
            .as_bytes()
            .chunks(MAX_STRING)
            .map(<[u8]>::to_vec)
            .collect());
    }
    let bytes = trimmed.as_bytes();
    let mut strings = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                i += 1;
                let mut s = Vec::new();
                loop {
                    let Some(&b) = bytes.get(i) else {
                        return Err("unterminated quoted string".into());
                    };
                    i += 1;
                    match b {
                        b'"' => break,
                        b'\\' => {
                            let digits = bytes
                                .get(i..i + 3)
                                .filter(|d| d.iter().all(u8::is_ascii_digit));
                            if let Some(d) = digits {
                                let n: u32 =
                                    std::str::from_utf8(d).unwrap_or("0").parse().unwrap_or(256);
                                let n = u8::try_from(n)
                                    .map_err(|_| format!("escape \\{n} is above 255"))?;
                                s.push(n);
                                i += 3;
                            } else if let Some(&c) = bytes.get(i) {
                                s.push(c);
                                i += 1;
                            } else {
                                return Err("dangling backslash".into());
                            }
                        }
                        _ => s.push(b),
                    }
                }
                if s.len() > MAX_STRING {
                    return Err(format!(
                        "a quoted character-string is {} bytes, above the {MAX_STRING} one string can hold \
                         (split it into several quoted strings, or give the value unquoted to have it split)",
                        s.len()
                    ));
                }
                strings.push(s);
            }
            _ => {
                return Err(
                    "text between quoted strings; quote the whole value or none of it".into(),
                );
            }
        }
    }
    if strings.is_empty() {
        strings.push(Vec::new());
    }
    Ok(strings)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod new_types_tests;
