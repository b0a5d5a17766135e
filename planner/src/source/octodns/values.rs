//! One octoDNS record value, as YamlProvider reads it, turned into the presentation
//! text [`canonicalize`](dnsplane_common::rdata::canonicalize) reads: a scalar for
//! the address and name types, a mapping of named fields for the others (octoDNS's
//! value classes in `octodns/record/*.py`, release 1.22), and TXT's own rules.
use super::yaml::{is_null, pyyaml_non_string, scalar_text};
use dnsplane_common::RecordType;
use dnsplane_common::error::excerpt;
use dnsplane_common::rdata::MAX_STRING;
use marked_yaml::types::{MarkedMappingNode, Node};

/// The presentation text of one value of `rtype`, or what is wrong with it.
pub(super) fn value_text(rtype: RecordType, node: &Node) -> Result<String, String> {
    match rtype {
        RecordType::A | RecordType::Aaaa | RecordType::Cname | RecordType::Ns | RecordType::Ptr => {
            Ok(text(node)?.to_string())
        }
        RecordType::Txt => {
            if let Some(read) = node.as_scalar().and_then(pyyaml_non_string) {
                return Err(format!(
                    "octoDNS's YAML loader reads the unquoted value {:?} as {read}, not text: quote it",
                    excerpt(node.as_scalar().map_or("", |s| s.as_str()))
                ));
            }
            txt(text(node)?)
        }
        RecordType::Mx => {
            let m = mapping(node, "preference, exchange")?;
            // `priority` and `value` are the old names octoDNS still reads.
            let pref = int(m, &["preference", "priority"], None, u16::MAX.into())?;
            let exchange = field(m, &["exchange", "value"])?;
            Ok(format!("{pref} {exchange}"))
        }
        RecordType::Srv => {
            let m = mapping(node, "priority, weight, port, target")?;
            let n = |k: &str| int(m, &[k], None, u16::MAX.into());
            let (p, w, port) = (n("priority")?, n("weight")?, n("port")?);
            Ok(format!("{p} {w} {port} {}", field(m, &["target"])?))
        }
        RecordType::Caa => {
            let m = mapping(node, "flags, tag, value")?;
            let flags = int(m, &["flags"], Some(0), u8::MAX.into())?;
            let tag = field(m, &["tag"])?;
            // octoDNS keeps the inside of the quoted string, escapes and all, and
            // writes it back between quotes.
            Ok(format!("{flags} {tag} \"{}\"", string(m, "value")?))
        }
        RecordType::Naptr => {
            let m = mapping(
                node,
                "order, preference, flags, service, regexp, replacement",
            )?;
            let order = int(m, &["order"], None, u16::MAX.into())?;
            let pref = int(m, &["preference"], None, u16::MAX.into())?;
            // As CAA's value: the inside of each quoted string, escapes and all.
            let q = |k: &str| string(m, k).map(|v| format!("\"{v}\""));
            Ok(format!(
                "{order} {pref} {} {} {} {}",
                q("flags")?.to_ascii_uppercase(),
                q("service")?,
                q("regexp")?,
                field(m, &["replacement"])?
            ))
        }
        RecordType::Sshfp => {
            let m = mapping(node, "algorithm, fingerprint_type, fingerprint")?;
            let alg = int(m, &["algorithm"], None, u8::MAX.into())?;
            let fp_type = int(m, &["fingerprint_type"], None, u8::MAX.into())?;
            Ok(format!("{alg} {fp_type} {}", field(m, &["fingerprint"])?))
        }
        RecordType::Tlsa => {
            let m = mapping(
                node,
                "certificate_usage, selector, matching_type, certificate_association_data",
            )?;
            // octoDNS's validator requires all four (its value class alone would
            // default the numbers to 0).
            let n = |k: &str| int(m, &[k], None, u8::MAX.into());
            let (usage, selector, matching) =
                (n("certificate_usage")?, n("selector")?, n("matching_type")?);
            let data = field(m, &["certificate_association_data"])?;
            Ok(format!("{usage} {selector} {matching} {data}"))
        }
        RecordType::Ds => {
            let m = mapping(node, "key_tag, algorithm, digest_type, digest")?;
            // Before octoDNS 0.9.x a DS value used DNSKEY's field names for DS's
            // fields; octoDNS still reads them, in this order.
            let old = m.get_node("public_key").is_some() || m.get_node("flags").is_some();
            let [tag, alg, dt, digest] = if old {
                ["flags", "protocol", "algorithm", "public_key"]
            } else {
                ["key_tag", "algorithm", "digest_type", "digest"]
            };
            let key_tag = int(m, &[tag], None, u16::MAX.into())?;
            let algorithm = int(m, &[alg], None, u8::MAX.into())?;
            let digest_type = int(m, &[dt], None, u8::MAX.into())?;
            Ok(format!(
                "{key_tag} {algorithm} {digest_type} {}",
                field(m, &[digest])?
            ))
        }
        RecordType::Svcb | RecordType::Https => {
            let m = mapping(node, "svcpriority, targetname, svcparams")?;
            let priority = int(m, &["svcpriority"], None, u16::MAX.into())?;
            let mut out = format!("{priority} {}", field(m, &["targetname"])?);
            match m.get_node("svcparams") {
                None => {}
                Some(Node::Scalar(s)) if is_null(s) => {}
                Some(Node::Mapping(params)) => {
                    for (key, value) in params.iter() {
                        out.push(' ');
                        out.push_str(key.as_str());
                        if let Some(v) = svcparam(key.as_str(), value)? {
                            out.push('=');
                            out.push_str(&v);
                        }
                    }
                }
                Some(_) => return Err("svcparams must be a mapping of key to value".into()),
            }
            Ok(out)
        }
    }
}

/// A SvcParam's value as presentation text: none, one value, or a list joined
/// with commas (as octoDNS renders it).
fn svcparam(key: &str, node: &Node) -> Result<Option<String>, String> {
    let one = |s: &str| {
        if s.is_empty() || s.contains([' ', '"', '\\', ';', '(', ')']) {
            quoted(s.as_bytes())
        } else {
            s.to_string()
        }
    };
    match node {
        Node::Scalar(s) if is_null(s) => Ok(None),
        Node::Scalar(s) => Ok(Some(one(s.as_str()))),
        Node::Sequence(items) => {
            let mut parts = Vec::new();
            for item in items.iter() {
                match item.as_scalar() {
                    Some(s) if !is_null(s) => parts.push(s.as_str().to_string()),
                    _ => return Err(format!("svcparams.{key}: each item must be text")),
                }
            }
            Ok(Some(one(&parts.join(","))))
        }
        Node::Mapping(_) => Err(format!("svcparams.{key} must be text or a list")),
    }
}

/// TXT and SPF (octoDNS's `_ChunkedValue`): the YAML text is the record's data,
/// with every `;` written `\;`. A value that begins with `"` is the old
/// pre-chunked form: its first and last characters are dropped and every `" "`
/// removed, which joins its strings. The data is then cut into 255-octet
/// character-strings, as octoDNS's `to_rdata_text` cuts it.
pub(super) fn txt(raw: &str) -> Result<String, String> {
    if !raw.is_ascii() {
        return Err(format!(
            "{:?} holds a non-ASCII character, which octoDNS refuses in TXT and SPF values",
            excerpt(raw)
        ));
    }
    let bytes = raw.as_bytes();
    if bytes
        .windows(2)
        .any(|w| w[1] == b';' && (w[0].is_ascii_alphanumeric() || w[0] == b'_'))
    {
        return Err(format!(
            "{:?} has an unescaped ';': octoDNS requires it written \\; in TXT and SPF values",
            excerpt(raw)
        ));
    }
    if raw.contains("\\\\;") {
        return Err(format!(
            "{:?} has a double-escaped ';' (\\\\;), which octoDNS refuses",
            excerpt(raw)
        ));
    }
    let mut v = raw;
    if v.starts_with('"') {
        // Python's v[1:-1]: both ends dropped, whatever the last character is.
        v = if v.len() >= 2 { &v[1..v.len() - 1] } else { "" };
    }
    let data = v.replace("\" \"", "").replace("\\;", ";");
    let strings: Vec<String> = if data.is_empty() {
        vec![quoted(b"")]
    } else {
        data.as_bytes().chunks(MAX_STRING).map(quoted).collect()
    };
    Ok(strings.join(" "))
}

/// `bytes` as one quoted character-string (`"`, `\` escaped; other bytes outside
/// printable ASCII as `\DDD`), which `canonicalize` reads back byte for byte.
pub(super) fn quoted(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

fn text(node: &Node) -> Result<&str, String> {
    match node {
        Node::Scalar(s) if is_null(s) => Err("a value is empty".into()),
        Node::Scalar(s) => Ok(s.as_str()),
        _ => Err("a value of this type is text, not a list or mapping".into()),
    }
}

fn mapping<'n>(node: &'n Node, fields: &str) -> Result<&'n MarkedMappingNode, String> {
    node.as_mapping()
        .ok_or_else(|| format!("a value of this type is a mapping ({fields})"))
}

/// The first of `keys` present (octoDNS's aliases), as text.
fn field<'n>(m: &'n MarkedMappingNode, keys: &[&str]) -> Result<&'n str, String> {
    for key in keys {
        match m.get_node(key) {
            None => continue,
            Some(node) => {
                return match scalar_text(node) {
                    Some(s) if !s.is_empty() => Ok(s),
                    _ => Err(format!("{key} is empty or not text")),
                };
            }
        }
    }
    Err(format!("{} is missing", keys[0]))
}

/// A text field that may be empty (a quoted `''`), but not null or missing.
fn string<'n>(m: &'n MarkedMappingNode, key: &str) -> Result<&'n str, String> {
    match m.get_node(key) {
        None => Err(format!("{key} is missing")),
        Some(node) => scalar_text(node).ok_or_else(|| format!("{key} is empty or not text")),
    }
}

/// A whole number field (octoDNS's `int(...)`), `default` when absent.
fn int(
    m: &MarkedMappingNode,
    keys: &[&str],
    default: Option<u64>,
    max: u64,
) -> Result<u64, String> {
    let Some((key, node)) = keys.iter().find_map(|k| m.get_node(k).map(|n| (*k, n))) else {
        return default.ok_or_else(|| format!("{} is missing", keys[0]));
    };
    let raw = scalar_text(node).ok_or_else(|| format!("{key} is empty or not a number"))?;
    match raw.trim().parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        Ok(n) => Err(format!("{key} {n} is above {max}")),
        Err(_) => Err(format!(
            "{key} {:?} is not a whole number 0..{max}",
            excerpt(raw)
        )),
    }
}
