//! Domain names in the one form dnsplane compares: absolute, lower-case, IDNA (punycode).
use crate::error::ModelError;
use crate::shared::SharedStr;
use std::fmt;

/// A normalised absolute domain name, e.g. `www.example.com.` (the root is `.`).
///
/// Normalising once at the edge means every comparison inside dnsplane is a plain
/// string comparison. The text is shared behind one thin pointer ([`SharedStr`]), so the
/// many copies of a name in the planner's indexes cost 8 bytes each.
// Equality, order and hash are the text's (`SharedStr`'s, with a fast path for one
// shared allocation: the planner compares millions of keys whose zone names are one).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Name(SharedStr);

impl Name {
    /// Normalises `input`. A missing trailing dot is added: dnsplane never interprets a
    /// name relative to anything but the root, as external-dns does not either.
    pub fn parse(input: &str) -> Result<Name, ModelError> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(ModelError::name(input, "empty name"));
        }
        if trimmed == "." {
            return Ok(Name(SharedStr::new(".")));
        }
        let body = trimmed.strip_suffix('.').unwrap_or(trimmed);
        if body.is_empty() || body.starts_with('.') || body.contains("..") {
            return Err(ModelError::name(input, "empty label"));
        }
        // Cheap bound before any IDNA work: no input this long can fit 255 octets
        // (an internationalised label only grows when encoded).
        if body.len() > 4 * MAX_WIRE_LEN {
            return Err(ModelError::name(
                input,
                format!("{} characters, far above the 255-octet limit", body.len()),
            ));
        }
        let mut out = String::with_capacity(body.len() + 1);
        let mut idn = false;
        for (i, label) in body.split('.').enumerate() {
            let ascii = normalise_label(input, label, i == 0)?;
            idn |= !label.is_ascii() || ascii.starts_with("xn--");
            out.push_str(&ascii);
            out.push('.');
        }
        // On the wire: a length octet per label, the labels, and the root's zero octet,
        // i.e. the text (with its final dot) plus one.
        let wire = out.len() + 1;
        if wire > MAX_WIRE_LEN {
            return Err(ModelError::name(
                input,
                format!("{wire} octets on the wire, above the limit of {MAX_WIRE_LEN}"),
            ));
        }
        if idn {
            check_bidi(input, &out)?;
        }
        Ok(Name(SharedStr::new(&out)))
    }

    /// The same name in an allocation of its own. For an index that keeps names long:
    /// a name parsed from a file sits among the parse's short-lived allocations, and
    /// keeping it keeps their memory pages from going back to the system; copies made
    /// together lie together.
    pub fn detached(&self) -> Name {
        Name(SharedStr::new(self.as_str()))
    }

    /// Whether both are one allocation (interned or cloned), not merely equal.
    pub fn shares_text_with(&self, other: &Name) -> bool {
        self.0.same_allocation(&other.0)
    }

    /// The name as text, with its trailing dot.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// True when `self` is `zone` or below it.
    pub fn is_within(&self, zone: &Name) -> bool {
        let (name, zone) = (self.0.as_bytes(), zone.0.as_bytes());
        if zone == b"." {
            return true;
        }
        name == zone
            || (name.len() > zone.len()
                && name.ends_with(zone)
                && name[name.len() - zone.len() - 1] == b'.')
    }

    /// The first label (`www` of `www.example.com.`), empty for the root.
    pub fn first_label(&self) -> &str {
        self.as_str().split('.').next().unwrap_or("")
    }

    /// Everything after the first label (`example.com.` of `www.example.com.`).
    pub fn parent(&self) -> Option<Name> {
        if self.as_str() == "." {
            return None;
        }
        let (_, rest) = self.as_str().split_once('.')?;
        if rest.is_empty() {
            Some(Name(SharedStr::new(".")))
        } else {
            Some(Name(SharedStr::new(rest)))
        }
    }

    /// `label.self`, validated.
    pub fn prepend(&self, label: &str) -> Result<Name, ModelError> {
        if self.as_str() == "." {
            Name::parse(&format!("{label}."))
        } else {
            Name::parse(&format!("{label}.{}", self.as_str()))
        }
    }
}

/// The most octets a name takes on the wire (RFC 1035 §2.3.4).
pub const MAX_WIRE_LEN: usize = 255;
/// The most octets of one label (RFC 1035 §2.3.4).
pub const MAX_LABEL_LEN: usize = 63;

/// The Bidi rule of IDNA 2008 (RFC 5893) holds for a whole name, not label by label: once
/// one label is right-to-left, every label must pass it (`1.مثال` is refused although
/// each label alone is fine). Checked over the host-name labels only: `*` and
/// underscore labels (`_dmarc`, `_sip._tcp`) are not host names and IDNA does not
/// apply to them (RFC 8552).
fn check_bidi(input: &str, ascii: &str) -> Result<(), ModelError> {
    let hosts: Vec<&str> = ascii
        .trim_end_matches('.')
        .split('.')
        .filter(|l| *l != "*" && !l.starts_with('_'))
        .collect();
    if hosts.is_empty() {
        return Ok(());
    }
    let uts46 = idna::uts46::Uts46::new();
    uts46
        .to_ascii(
            hosts.join(".").as_bytes(),
            idna::uts46::AsciiDenyList::STD3,
            idna::uts46::Hyphens::Allow,
            idna::uts46::DnsLength::Ignore,
        )
        .map(|_| ())
        .map_err(|_| {
            ModelError::name(
                input,
                "not valid IDNA: a right-to-left label makes every label follow the Bidi rule (RFC 5893)",
            )
        })
}

/// Code points UTS 46 maps to nothing (`ignored`): `ex\u{AD}ample` would become
/// `example` silently, so the name written would not be the name given. Refused.
fn dropped_by_idna(c: char) -> Option<&'static str> {
    match c {
        '\u{AD}' => Some("soft hyphen"),
        '\u{34F}' => Some("combining grapheme joiner"),
        '\u{180B}'..='\u{180D}' | '\u{180F}' => Some("Mongolian free variation selector"),
        '\u{200B}' => Some("zero width space"),
        '\u{2060}' => Some("word joiner"),
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => Some("variation selector"),
        '\u{FEFF}' => Some("zero width no-break space"),
        '\u{1BCA0}'..='\u{1BCA3}' => Some("shorthand format control"),
        _ => None,
    }
}

fn normalise_label(input: &str, label: &str, first: bool) -> Result<String, ModelError> {
    if label == "*" {
        return if first {
            Ok("*".into())
        } else {
            Err(ModelError::name(
                input,
                "'*' is only allowed as the first label",
            ))
        };
    }
    // Internationalised labels follow IDNA 2008 as UTS 46 applies it, strictly (STD3
    // rules, hyphen rules, lengths): what a resolver would refuse is refused here, not
    // passed on leniently. Plain ASCII labels follow the DNS rules below (underscores
    // stay allowed: `_dmarc`, `_sip._tcp`).
    let shown = crate::error::excerpt(label);
    let idna_err = |why: String| {
        ModelError::name(
            input,
            format!("label {shown:?} is not valid IDNA 2008 (UTS 46): {why}"),
        )
    };
    let ascii = if label.is_ascii() {
        let lower = label.to_ascii_lowercase();
        if lower.starts_with("xn--") {
            let (unicode, checked) = idna::domain_to_unicode(&lower);
            checked.map_err(|_| idna_err("not valid punycode".into()))?;
            let again =
                idna::domain_to_ascii_strict(&unicode).map_err(|_| idna_err(idna_why(&unicode)))?;
            if again != lower {
                return Err(idna_err(format!(
                    "it decodes to {unicode:?}, which encodes as {again:?}"
                )));
            }
            check_idna2008_code_points(&unicode).map_err(idna_err)?;
        }
        lower
    } else {
        if let Some((c, what)) = label
            .chars()
            .find_map(|c| dropped_by_idna(c).map(|w| (c, w)))
        {
            return Err(ModelError::name(
                input,
                format!(
                    "label {shown:?} contains U+{:04X} ({what}), which IDNA drops without a trace; remove it",
                    u32::from(c)
                ),
            ));
        }
        let ascii = idna::domain_to_ascii_strict(label).map_err(|_| idna_err(idna_why(label)))?;
        // The code points after UTS 46 mapping (case folding, width, compatibility).
        let (mapped, _) = idna::domain_to_unicode(&ascii);
        check_idna2008_code_points(&mapped).map_err(idna_err)?;
        ascii
    };
    if ascii.is_empty() {
        return Err(ModelError::name(input, "empty label"));
    }
    if ascii.len() > MAX_LABEL_LEN {
        return Err(ModelError::name(
            input,
            format!(
                "label {:?} is {} octets, above the limit of {MAX_LABEL_LEN}",
                crate::error::excerpt(label),
                ascii.len()
            ),
        ));
    }
    // `/` is in the names of classless reverse zones (RFC 2317 §4: `0/25.2.0.192.
    // in-addr.arpa`), which PowerDNS, BIND and Route 53 (as `\057`) all serve.
    if let Some(c) = ascii
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/')))
    {
        return Err(ModelError::name(
            input,
            format!(
                "character {c:?} is not allowed (letters, digits, '-', '_', '/' and a leading '*' label)"
            ),
        ));
    }
    if ascii.starts_with('-') || ascii.ends_with('-') {
        return Err(ModelError::name(
            input,
            format!(
                "label {:?} starts or ends with '-'",
                crate::error::excerpt(label)
            ),
        ));
    }
    Ok(ascii)
}

/// IDNA 2008's own code-point rule (RFC 5892 §2), which UTS 46 relaxes: a label holds
/// letters, digits and combining marks (general categories Ll, Lo, Lm, Mn, Mc, Nd)
/// and `-`, never symbols, punctuation or emoji (`i♥dns`, `😀`), which UTS 46 alone
/// would pass. The exceptions of RFC 5892 §2.6 are honoured (ß and final sigma are
/// valid; the tatweel and the Hangul old jamo are not); the five CONTEXTO punctuation
/// marks (middle dot, keraia, geresh, gershayim, katakana middle dot) are allowed
/// without checking their context.
fn check_idna2008_code_points(unicode: &str) -> Result<(), String> {
    use icu_properties::CodePointMapData;
    use icu_properties::props::GeneralCategory as Gc;
    let categories = CodePointMapData::<Gc>::new();
    for c in unicode.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            continue;
        }
        let valid = match c {
            // PVALID and CONTEXTO exceptions.
            '\u{df}' | '\u{3c2}' | '\u{6fd}' | '\u{6fe}' | '\u{f0b}' | '\u{3007}' | '\u{b7}'
            | '\u{375}' | '\u{5f3}' | '\u{5f4}' | '\u{30fb}' => true,
            // DISALLOWED exceptions, combining half marks, old Hangul jamo.
            '\u{640}'
            | '\u{7fa}'
            | '\u{302e}'
            | '\u{302f}'
            | '\u{3031}'..='\u{3035}'
            | '\u{303b}'
            | '\u{fe20}'..='\u{fe2f}'
            | '\u{1100}'..='\u{11ff}'
            | '\u{a960}'..='\u{a97f}'
            | '\u{d7b0}'..='\u{d7ff}' => false,
            // CONTEXTJ (zero-width joiners): UTS 46 has checked their context.
            '\u{200c}' | '\u{200d}' => true,
            _ => matches!(
                categories.get(c),
                Gc::LowercaseLetter
                    | Gc::OtherLetter
                    | Gc::ModifierLetter
                    | Gc::NonspacingMark
                    | Gc::SpacingMark
                    | Gc::DecimalNumber
            ),
        };
        if !valid {
            return Err(format!(
                "{c:?} (U+{:04X}) is not a letter, digit or mark, which IDNA 2008 disallows",
                c as u32
            ));
        }
    }
    Ok(())
}

/// Why UTS 46 refused `label` (the `idna` crate only says that it did), as far as a
/// cheap look tells; the rest is the code-point, joiner and Bidi rules.
fn idna_why(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    if let Some(c) = chars
        .iter()
        .find(|c| c.is_ascii() && !(c.is_ascii_alphanumeric() || **c == '-'))
    {
        return format!("{c:?} is not allowed in an internationalised label");
    }
    if chars.first() == Some(&'-') || chars.last() == Some(&'-') {
        return "a hyphen in the first or last position".into();
    }
    if chars.get(2) == Some(&'-') && chars.get(3) == Some(&'-') {
        return "hyphens in the third and fourth positions".into();
    }
    "a code point IDNA 2008 disallows, or a broken joiner or Bidi rule".into()
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl TryFrom<String> for Name {
    type Error = ModelError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Name::parse(&s)
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.as_str().to_string()
    }
}

impl std::str::FromStr for Name {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Name::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UTS 46 drops a soft hyphen (and the other `ignored` code points) without a
    /// trace: `ex\u{AD}ample.com` would be written as `example.com`. Refused, naming
    /// the code point (issue 35).
    #[test]
    fn code_points_idna_drops_are_refused_by_name() {
        for (input, code) in [
            ("ex\u{AD}ample.com.", "U+00AD (soft hyphen)"),
            ("caf\u{E9}\u{200B}.example.", "U+200B (zero width space)"),
            ("\u{FEFF}b\u{FC}cher.example.", "U+FEFF"),
            (
                "b\u{FC}\u{FE0F}cher.example.",
                "U+FE0F (variation selector)",
            ),
        ] {
            let e = Name::parse(input).expect_err(input).to_string();
            assert!(
                e.contains(code) && e.contains("remove it"),
                "{input:?}: {e}"
            );
        }
        // The same names without them are fine.
        assert_eq!(
            Name::parse("b\u{FC}cher.example.").unwrap().as_str(),
            "xn--bcher-kva.example."
        );
    }

    #[test]
    fn normalises_case_dot_and_idna() {
        assert_eq!(
            Name::parse("WWW.Example.COM").unwrap().as_str(),
            "www.example.com."
        );
        assert_eq!(
            Name::parse("www.example.com.").unwrap().as_str(),
            "www.example.com."
        );
        assert_eq!(
            Name::parse("bücher.example").unwrap().as_str(),
            "xn--bcher-kva.example."
        );
        assert_eq!(
            Name::parse("*.Apps.example.com").unwrap().as_str(),
            "*.apps.example.com."
        );
        assert_eq!(
            Name::parse("_acme-challenge.example.com").unwrap().as_str(),
            "_acme-challenge.example.com."
        );
        // A classless reverse zone (RFC 2317).
        assert_eq!(
            Name::parse("1.0/25.2.0.192.in-addr.arpa").unwrap().as_str(),
            "1.0/25.2.0.192.in-addr.arpa."
        );
    }

    #[test]
    fn rejects_bad_names() {
        for bad in [
            "",
            "a..b",
            ".a",
            "a.*.b",
            "-a.b",
            "a b.c",
            "a\\057b.c",
            &format!("{}.com", "x".repeat(64)),
        ] {
            assert!(Name::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let long = vec!["abcdefghi"; 26].join(".");
        assert!(Name::parse(&long).is_err());
    }

    /// What IDNA 2008 / UTS 46 rejects strictly is rejected, not passed on leniently,
    /// with a reason that says which rule.
    #[test]
    fn idna_is_strict() {
        for (bad, why) in [
            ("xn--zz.example", "not valid punycode"),
            ("xn--abc.example", "not valid punycode"),
            ("xn--bcher-kva9.example", "not valid punycode"),
            // Decodes to plain ASCII: not an A-label.
            ("xn--bcher-.example", "not valid punycode"),
            // Upper case inside the punycode decodes to another label.
            ("xn--bcher-KVA9.example", "not valid punycode"),
            ("é b.example", "' ' is not allowed"),
            ("bü_cher.example", "'_' is not allowed"),
            ("-bü.example", "first or last position"),
            ("bücher-.example", "first or last position"),
            ("ab--ü.example", "third and fourth"),
            // A zero-width joiner outside the context that allows it.
            ("a\u{200d}b.example", "joiner"),
            // A label starting with a combining mark.
            ("\u{301}a.example", "disallows"),
            // Symbols and emoji: valid under UTS 46 alone, disallowed by IDNA 2008.
            ("i♥dns.example", "U+2665"),
            ("😀.example", "U+1F600"),
            ("xn--53h.example", "U+2615"), // ☕, as an A-label
            ("\u{628}\u{640}\u{628}.example", "U+0640"), // the Arabic tatweel
            // The Bidi rule holds across the whole name: a digit-first label beside a
            // right-to-left one.
            ("1.\u{5d0}\u{5d1}", "Bidi rule"),
            ("a.xn--mgbh0fb.1x", "Bidi rule"),
        ] {
            let e = Name::parse(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad:?} should be rejected"));
            assert!(e.to_string().contains(why), "{bad:?}: {e}");
        }
        for (good, ascii) in [
            ("xn--bcher-kva.example", "xn--bcher-kva.example."),
            ("XN--BCHER-KVA.Example", "xn--bcher-kva.example."),
            ("Bücher.example", "xn--bcher-kva.example."),
            ("straße.de", "xn--strae-oqa.de."),
            ("ﬁ.example", "fi.example."), // a compatibility ligature, mapped
            ("παράδειγμα.δοκιμή", "xn--hxajbheg2az3al.xn--jxalpdlp."),
            ("مثال.example", "xn--mgbh0fb.example."),
            ("例え.テスト", "xn--r8jz45g.xn--zckzah."),
            // Underscore and wildcard labels sit outside IDNA, also beside an IDN.
            ("_dmarc.\u{5d0}\u{5d1}.example", "_dmarc.xn--4dbc.example."),
            ("*.bücher.example", "*.xn--bcher-kva.example."),
            ("_dmarc.example.com", "_dmarc.example.com."),
        ] {
            assert_eq!(Name::parse(good).unwrap().as_str(), ascii, "{good:?}");
        }
    }

    /// Lengths are counted in octets on the wire, after IDNA encoding.
    #[test]
    fn wire_lengths() {
        let label63 = "a".repeat(63);
        let name = format!("{label63}.{label63}.{label63}.{}", "b".repeat(61));
        assert_eq!(Name::parse(&name).unwrap().as_str().len() + 1, 255);
        let e = Name::parse(&format!("{name}b")).unwrap_err().to_string();
        assert!(
            e.contains("256 octets on the wire, above the limit of 255"),
            "{e}"
        );
        // 30 characters, far more than 63 octets once encoded.
        let cjk: String = (0..30)
            .filter_map(|i| char::from_u32(0x4e00 + i * 97))
            .collect();
        let e = Name::parse(&format!("{cjk}.example"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("IDNA"), "{e}");
        // Hostile sizes are refused before any IDNA work, and not echoed whole.
        let e = Name::parse(&"ü.".repeat(100_000)).unwrap_err().to_string();
        assert!(e.contains("far above") && e.len() < 300, "{e}");
    }

    #[test]
    fn within_and_parent() {
        let zone = Name::parse("example.com").unwrap();
        assert!(Name::parse("a.example.com").unwrap().is_within(&zone));
        assert!(zone.is_within(&zone));
        assert!(!Name::parse("aexample.com").unwrap().is_within(&zone));
        assert_eq!(
            Name::parse("a.example.com").unwrap().parent().unwrap(),
            zone
        );
        assert_eq!(zone.prepend("_x").unwrap().as_str(), "_x.example.com.");
        assert_eq!(Name::parse("com").unwrap().parent().unwrap().as_str(), ".");
        assert!(
            Name::parse(".").unwrap().parent().is_none(),
            "the root has no parent"
        );
    }
}
