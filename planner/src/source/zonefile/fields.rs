//! The fields of a zone-file record: names (relative to the origin, `@`, escapes), TTLs
//! as BIND reads them (`3600`, `1h30m`), classes, types, and each modelled type's data
//! turned into the text `dnsplane_common::rdata::canonicalize` reads, with the names in
//! it made absolute first.
use super::lexer::Token;
use dnsplane_common::error::excerpt;
use dnsplane_common::{ModelError, Name, RecordType, rdata::canonicalize};

/// Why a name could not be read.
#[derive(Debug)]
pub(super) enum NameError {
    /// A relative name and no origin to complete it: the whole text is misread.
    NoOrigin,
    /// Not a name dnsplane accepts (the message says why).
    Bad(String),
}

/// The absolute name a token stands for: `@` is the origin, a name without a final
/// dot is relative to it. `\X` and `\DDD` escapes are resolved; an escaped dot (a dot
/// inside a label) cannot be held by a [`Name`] and is refused.
pub(super) fn name(raw: &str, origin: Option<&Name>) -> Result<Name, NameError> {
    if raw == "@" {
        return origin.cloned().ok_or(NameError::NoOrigin);
    }
    let (text, absolute) = if raw.contains('\\') || raw.contains('"') {
        unescape_name(raw)?
    } else {
        (raw.to_string(), raw.ends_with('.'))
    };
    let full = if absolute {
        text
    } else {
        let origin = origin.ok_or(NameError::NoOrigin)?;
        if origin.as_str() == "." {
            format!("{text}.")
        } else {
            format!("{text}.{}", origin.as_str())
        }
    };
    Name::parse(&full).map_err(|e| NameError::Bad(e.to_string()))
}

/// A name token with its escapes resolved, and whether it ends with an unescaped dot.
fn unescape_name(raw: &str) -> Result<(String, bool), NameError> {
    let bytes = decode(raw).map_err(NameError::Bad)?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut absolute = false;
    for (i, (b, escaped)) in bytes.iter().copied().enumerate() {
        if b == b'.' && escaped {
            return Err(NameError::Bad(format!(
                "{:?}: an escaped dot (a dot inside a label) is not supported",
                excerpt(raw)
            )));
        }
        absolute = b == b'.' && i + 1 == bytes.len();
        out.push(b);
    }
    String::from_utf8(out)
        .map(|s| (s, absolute))
        .map_err(|_| NameError::Bad(format!("{:?} is not UTF-8 once unescaped", excerpt(raw))))
}

/// The bytes of a token, quotes removed and `\X` / `\DDD` escapes resolved, each with
/// whether it was escaped.
pub(super) fn decode(raw: &str) -> Result<Vec<(u8, bool)>, String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i += 1,
            b'\\' => {
                let digits = bytes
                    .get(i + 1..i + 4)
                    .filter(|d| d.iter().all(u8::is_ascii_digit));
                if let Some(d) = digits {
                    let n = u32::from(d[0] - b'0') * 100
                        + u32::from(d[1] - b'0') * 10
                        + u32::from(d[2] - b'0');
                    let n = u8::try_from(n).map_err(|_| format!("escape \\{n} is above 255"))?;
                    out.push((n, true));
                    i += 4;
                } else if let Some(&c) = bytes.get(i + 1) {
                    out.push((c, true));
                    i += 2;
                } else {
                    return Err("a backslash escapes nothing".into());
                }
            }
            b => {
                out.push((b, false));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Bytes as one quoted character-string in the canonical form (`"`, `\` escaped,
/// printable ASCII as is, anything else `\DDD`).
fn quote(bytes: impl Iterator<Item = u8>, out: &mut String) {
    out.push('"');
    for b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                use std::fmt::Write;
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
}

/// Whether `raw` is one quoted string: a quote first and last, none unescaped between.
fn simple_quoted(raw: &str) -> bool {
    let b = raw.as_bytes();
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return false;
    }
    let mut i = 1;
    while i < b.len() - 1 {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return false,
            _ => i += 1,
        }
    }
    // An escape may not swallow the closing quote (`"a\"`).
    i == b.len() - 1
}

/// A TTL as BIND reads it: a plain number of seconds, or numbers each followed by a
/// unit (`w`, `d`, `h`, `m`, `s`, any case: `1h30m`). `None`: not a TTL (the token is
/// a class or a type); `Some(Err)`: a TTL above 2^32-1.
pub(super) fn ttl(token: &str) -> Option<Result<u32, String>> {
    let bytes = token.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_digit() || bytes.len() > 63 {
        return None;
    }
    let mut total: u64 = 0;
    let mut i = 0;
    let mut units = false;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return None;
        }
        let n: u64 = token[start..i].parse().ok()?;
        if n > u64::from(u32::MAX) {
            return Some(Err(format!("TTL {token:?} is above 2^32-1 seconds")));
        }
        let unit = match bytes.get(i).map(u8::to_ascii_lowercase) {
            None if !units => 1,
            // BIND: a number without a unit after numbers with one is not a TTL.
            None => return None,
            Some(b'w') => 7 * 24 * 3600,
            Some(b'd') => 24 * 3600,
            Some(b'h') => 3600,
            Some(b'm') => 60,
            Some(b's') => 1,
            Some(_) => return None,
        };
        if i < bytes.len() {
            i += 1;
            units = true;
        }
        total += n * unit;
    }
    match u32::try_from(total) {
        Ok(t) => Some(Ok(t)),
        Err(_) => Some(Err(format!("TTL {token:?} is above 2^32-1 seconds"))),
    }
}

/// Whether a token is a class: `Some(true)` for IN, `Some(false)` for another class.
pub(super) fn class(token: &str) -> Option<bool> {
    let is = |c: &str| token.eq_ignore_ascii_case(c);
    if is("IN") || is("CLASS1") {
        return Some(true);
    }
    if ["CH", "CHAOS", "HS", "HESIOD", "NONE", "ANY", "CS"]
        .into_iter()
        .any(is)
    {
        return Some(false);
    }
    token
        .get(..5)
        .filter(|p| p.eq_ignore_ascii_case("CLASS"))
        .and_then(|_| token[5..].parse::<u16>().ok())
        .map(|_| false)
}

/// What a type token names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Modelled(RecordType),
    Soa,
    /// A type dnsplane does not model (read past with a warning).
    Unmodelled,
    /// `TYPE1`: the generic spelling of a type dnsplane models, refused with the
    /// type's own name so it is not silently dropped.
    Generic(RecordType),
}

/// The record types of the IANA registry that BIND reads and dnsplane does not model.
const UNMODELLED: &[&str] = &[
    "A6",
    "AFSDB",
    "AMTRELAY",
    "APL",
    "ATMA",
    "AVC",
    "CDNSKEY",
    "CDS",
    "CERT",
    "CSYNC",
    "DHCID",
    "DLV",
    "DNAME",
    "DNSKEY",
    "DOA",
    "DSYNC",
    "EID",
    "EUI48",
    "EUI64",
    "GID",
    "GPOS",
    "HHIT",
    "HINFO",
    "HIP",
    "BRID",
    "IPSECKEY",
    "ISDN",
    "KEY",
    "KX",
    "L32",
    "L64",
    "LOC",
    "LP",
    "MB",
    "MD",
    "MF",
    "MG",
    "MINFO",
    "MR",
    "NID",
    "NIMLOC",
    "NINFO",
    "NSAP",
    "NSAP-PTR",
    "NSEC",
    "NSEC3",
    "NSEC3PARAM",
    "NULL",
    "NXNAME",
    "NXT",
    "OPENPGPKEY",
    "PX",
    "RESINFO",
    "RKEY",
    "RP",
    "RRSIG",
    "RT",
    "SIG",
    "SINK",
    "SMIMEA",
    "SPF",
    "TA",
    "TALINK",
    "UID",
    "UINFO",
    "UNSPEC",
    "URI",
    "WALLET",
    "WKS",
    "X25",
    "ZONEMD",
];

pub(super) fn kind(token: &str) -> Option<Kind> {
    if token.eq_ignore_ascii_case("SOA") {
        return Some(Kind::Soa);
    }
    if let Some(t) = RecordType::ALL
        .into_iter()
        .find(|t| t.as_str().eq_ignore_ascii_case(token))
    {
        return Some(Kind::Modelled(t));
    }
    if UNMODELLED.iter().any(|u| u.eq_ignore_ascii_case(token)) {
        return Some(Kind::Unmodelled);
    }
    let number: u16 = token
        .get(..4)
        .filter(|p| p.eq_ignore_ascii_case("TYPE"))
        .and_then(|_| token[4..].parse().ok())?;
    let modelled = RecordType::ALL
        .into_iter()
        .find(|t| type_number(*t) == number);
    Some(match (number, modelled) {
        (6, _) => Kind::Soa,
        (_, Some(t)) => Kind::Generic(t),
        (_, None) => Kind::Unmodelled,
    })
}

fn type_number(t: RecordType) -> u16 {
    match t {
        RecordType::A => 1,
        RecordType::Ns => 2,
        RecordType::Cname => 5,
        RecordType::Ptr => 12,
        RecordType::Mx => 15,
        RecordType::Txt => 16,
        RecordType::Aaaa => 28,
        RecordType::Srv => 33,
        RecordType::Naptr => 35,
        RecordType::Ds => 43,
        RecordType::Sshfp => 44,
        RecordType::Tlsa => 52,
        RecordType::Svcb => 64,
        RecordType::Https => 65,
        RecordType::Caa => 257,
    }
}

/// A problem with a record's data: the byte offset of the token it is about, and why.
#[derive(Debug)]
pub(super) struct FieldError {
    pub(super) line: usize,
    pub(super) at: usize,
    pub(super) no_origin: bool,
    pub(super) message: String,
}

/// The canonical value of one record of type `rtype` whose data is `data`.
/// `end` (line, byte offset) is where the data would start, for an error about
/// missing fields.
pub(super) fn value(
    rtype: RecordType,
    data: &[Token<'_>],
    end: (usize, usize),
    origin: Option<&Name>,
) -> Result<String, FieldError> {
    let at = end.1;
    let line_of = |at: usize| data.iter().find(|t| t.at == at).map_or(end.0, |t| t.line);
    let err = |at: usize, message: String| FieldError {
        line: line_of(at),
        at,
        no_origin: false,
        message,
    };
    if let Some(first) = data.first()
        && first.raw == "\\#"
    {
        return Err(err(
            first.at,
            format!(
                "the generic form (RFC 3597 \\#) is not read; write the {rtype} data in its own form"
            ),
        ));
    }
    let count = |n: usize, shape: &str| -> Result<(), FieldError> {
        if data.len() == n {
            return Ok(());
        }
        let at = data.get(n).map_or(at, |t| t.at);
        Err(err(
            at,
            format!(
                "{rtype} data is \"{shape}\" ({n} field(s)), not {} field(s)",
                data.len()
            ),
        ))
    };
    let host = |t: &Token<'_>| -> Result<String, FieldError> {
        match name(t.raw, origin) {
            Ok(n) => Ok(n.to_string()),
            Err(NameError::NoOrigin) => Err(FieldError {
                line: t.line,
                at: t.at,
                no_origin: true,
                message: format!(
                    "{:?} is a relative name, and there is no $ORIGIN or zone to complete it",
                    excerpt(t.raw)
                ),
            }),
            Err(NameError::Bad(m)) => Err(err(t.at, m)),
        }
    };
    let text = |t: &Token<'_>| -> Result<String, FieldError> {
        // Fast paths: a plain word, or one quoted string, is already what
        // `canonicalize` reads (it resolves the same escapes).
        if !t.raw.contains(['\\', '"']) {
            return Ok(format!("\"{}\"", t.raw));
        }
        if simple_quoted(t.raw) {
            return Ok(t.raw.to_string());
        }
        let bytes = decode(t.raw).map_err(|m| err(t.at, m))?;
        let mut s = String::with_capacity(bytes.len() + 2);
        quote(bytes.into_iter().map(|(b, _)| b), &mut s);
        Ok(s)
    };
    let plain = |t: &Token<'_>| -> Result<String, FieldError> {
        if !t.raw.contains(['\\', '"']) {
            return Ok(t.raw.to_string());
        }
        let bytes: Vec<u8> = decode(t.raw)
            .map_err(|m| err(t.at, m))?
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        String::from_utf8(bytes).map_err(|_| err(t.at, "not UTF-8 once unescaped".into()))
    };
    let raw = |tokens: &[Token<'_>]| -> String {
        tokens.iter().map(|t| t.raw).collect::<Vec<_>>().join(" ")
    };
    let text_value = match rtype {
        RecordType::A | RecordType::Aaaa => {
            count(1, "<address>")?;
            plain(&data[0])?
        }
        RecordType::Cname | RecordType::Ns | RecordType::Ptr => {
            count(1, "<name>")?;
            host(&data[0])?
        }
        RecordType::Mx => {
            count(2, "<preference> <exchange>")?;
            format!("{} {}", plain(&data[0])?, host(&data[1])?)
        }
        RecordType::Srv => {
            count(4, "<priority> <weight> <port> <target>")?;
            format!(
                "{} {} {} {}",
                plain(&data[0])?,
                plain(&data[1])?,
                plain(&data[2])?,
                host(&data[3])?
            )
        }
        RecordType::Naptr => {
            count(
                6,
                "<order> <preference> <flags> <services> <regexp> <replacement>",
            )?;
            format!(
                "{} {} {} {} {} {}",
                plain(&data[0])?,
                plain(&data[1])?,
                text(&data[2])?,
                text(&data[3])?,
                text(&data[4])?,
                host(&data[5])?
            )
        }
        RecordType::Caa => {
            count(3, "<flags> <tag> <value>")?;
            format!(
                "{} {} {}",
                plain(&data[0])?,
                plain(&data[1])?,
                text(&data[2])?
            )
        }
        RecordType::Txt => {
            if data.is_empty() {
                return Err(err(at, "TXT data is missing".into()));
            }
            let mut s = String::new();
            for (i, t) in data.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                s.push_str(&text(t)?);
            }
            s
        }
        RecordType::Svcb | RecordType::Https => {
            if data.len() < 2 {
                count(2, "<priority> <target> [<key>=<value> ...]")?;
            }
            format!(
                "{} {} {}",
                plain(&data[0])?,
                host(&data[1])?,
                raw(&data[2..])
            )
        }
        RecordType::Tlsa | RecordType::Sshfp | RecordType::Ds => {
            if data.is_empty() {
                return Err(err(at, format!("{rtype} data is missing")));
            }
            raw(data)
        }
    };
    canonicalize(rtype, &text_value).map_err(|e| {
        let message = match e {
            ModelError::Value { problem, .. } => problem,
            other => other.to_string(),
        };
        err(data.first().map_or(at, |t| t.at), message)
    })
}
