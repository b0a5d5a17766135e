//! Domain names in the one form dnsplane compares: absolute, lower-case, IDNA (punycode).
use crate::error::ModelError;
use std::fmt;
use std::sync::Arc;

/// A normalised absolute domain name, e.g. `www.example.com.` (the root is `.`).
///
/// Normalising once at the edge means every comparison inside dnsplane is a plain
/// string comparison. The text is shared (`Arc<str>`), so the many copies of a name in
/// the planner's indexes cost a pointer each.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Name(Arc<str>);

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

// Equality and order compare the text, with a fast path for the shared (interned)
// case: the planner compares millions of keys whose zone names are one allocation.
impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
        }
    }
}

impl Name {
    /// Normalises `input`. A missing trailing dot is added: dnsplane never interprets a
    /// name relative to anything but the root, as external-dns does not either.
    pub fn parse(input: &str) -> Result<Name, ModelError> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(ModelError::name(input, "empty name"));
        }
        if trimmed == "." {
            return Ok(Name(".".into()));
        }
        let body = trimmed.strip_suffix('.').unwrap_or(trimmed);
        if body.is_empty() || body.starts_with('.') || body.contains("..") {
            return Err(ModelError::name(input, "empty label"));
        }
        let mut out = String::with_capacity(body.len() + 1);
        for (i, label) in body.split('.').enumerate() {
            let label = normalise_label(input, label, i == 0)?;
            out.push_str(&label);
            out.push('.');
        }
        // 255 octets on the wire = 253 characters of text without the final dot.
        if out.len() > 254 {
            return Err(ModelError::name(input, "longer than 253 characters"));
        }
        Ok(Name(out.into()))
    }

    /// The name as text, with its trailing dot.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `self` is `zone` or below it.
    pub fn is_within(&self, zone: &Name) -> bool {
        if &*zone.0 == "." {
            return true;
        }
        self.0 == zone.0
            || (self.0.len() > zone.0.len()
                && self.0.ends_with(&*zone.0)
                && self.0.as_bytes()[self.0.len() - zone.0.len() - 1] == b'.')
    }

    /// The first label (`www` of `www.example.com.`), empty for the root.
    pub fn first_label(&self) -> &str {
        self.0.split('.').next().unwrap_or("")
    }

    /// Everything after the first label (`example.com.` of `www.example.com.`).
    pub fn parent(&self) -> Option<Name> {
        if &*self.0 == "." {
            return None;
        }
        let (_, rest) = self.0.split_once('.')?;
        if rest.is_empty() {
            Some(Name(".".into()))
        } else {
            Some(Name(rest.into()))
        }
    }

    /// `label.self`, validated.
    pub fn prepend(&self, label: &str) -> Result<Name, ModelError> {
        if &*self.0 == "." {
            Name::parse(&format!("{label}."))
        } else {
            Name::parse(&format!("{label}.{}", self.0))
        }
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
    let idna_err =
        |e: String| ModelError::name(input, format!("label {label:?} is not valid IDNA: {e}"));
    let ascii = if label.is_ascii() {
        let lower = label.to_ascii_lowercase();
        if lower.starts_with("xn--") {
            let (unicode, checked) = idna::domain_to_unicode(&lower);
            checked.map_err(|e| idna_err(format!("{e:?}")))?;
            let again =
                idna::domain_to_ascii_strict(&unicode).map_err(|e| idna_err(format!("{e:?}")))?;
            if again != lower {
                return Err(idna_err(format!(
                    "it decodes to {unicode:?}, which encodes as {again:?}"
                )));
            }
        }
        lower
    } else {
        idna::domain_to_ascii_strict(label).map_err(|e| idna_err(format!("{e:?}")))?
    };
    if ascii.is_empty() {
        return Err(ModelError::name(input, "empty label"));
    }
    if ascii.len() > 63 {
        return Err(ModelError::name(
            input,
            format!("label {label:?} is longer than 63 characters"),
        ));
    }
    if let Some(c) = ascii
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(ModelError::name(
            input,
            format!(
                "character {c:?} is not allowed (letters, digits, '-', '_' and a leading '*' label)"
            ),
        ));
    }
    if ascii.starts_with('-') || ascii.ends_with('-') {
        return Err(ModelError::name(
            input,
            format!("label {label:?} starts or ends with '-'"),
        ));
    }
    Ok(ascii)
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
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
        n.0.to_string()
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
            &format!("{}.com", "x".repeat(64)),
        ] {
            assert!(Name::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let long = vec!["abcdefghi"; 26].join(".");
        assert!(Name::parse(&long).is_err());
    }

    /// What IDNA 2008 / UTS 46 rejects strictly is rejected, not passed on leniently.
    #[test]
    fn idna_is_strict() {
        for bad in [
            "xn--zz.example",         // not valid punycode
            "xn--bcher-kva9.example", // punycode that does not round-trip
            "é b.example",            // a space in an internationalised label
            "bü_cher.example",        // STD3: no underscore in an IDN label
            "-bü.example",            // a leading hyphen
        ] {
            assert!(Name::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        assert_eq!(
            Name::parse("xn--bcher-kva.example").unwrap().as_str(),
            "xn--bcher-kva.example."
        );
        assert_eq!(
            Name::parse("_dmarc.example.com").unwrap().as_str(),
            "_dmarc.example.com."
        );
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
