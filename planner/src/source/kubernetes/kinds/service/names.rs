//! The names and targets a Service's annotations ask for, checked.
//!
//! external-dns splits the `hostname` and `target` annotations
//! (`SplitHostnameAnnotation`) and uses whatever comes out: a label over 63 octets is
//! dropped with a log line (`NewEndpointWithTTL` returns nil), an empty entry becomes a
//! record named "" and a target that is neither an address nor a name becomes a CNAME
//! to it, for the provider to refuse later. A user who wrote the annotation expects
//! either their records or a reason; dnsplane refuses the object instead (a
//! [`Problem`] naming the annotation), and the object keeps its last accepted records.
use super::super::Problem;
use super::super::annotations::{self, Annotations};

/// The longest name (RFC 1035, in presentation form without the trailing dot).
const NAME_MAX: usize = 253;
/// The longest label.
const LABEL_MAX: usize = 63;

/// The names of a `hostname`/`internal-hostname` annotation (`key`: where it was
/// found), each checked with [`check_hostname`].
pub fn hostname_annotation(key: &str, value: &str, problems: &mut Vec<Problem>) -> Vec<String> {
    let names = annotations::split_hostnames(value);
    for name in &names {
        if let Err(why) = check_hostname(name) {
            problems.push(Problem {
                field: Annotations::field(key),
                message: format!("{name:?} is not a host name: {why}"),
            });
        }
    }
    names
}

/// Whether `name` (a trailing dot allowed) can be a record's name: not empty, at most
/// 253 octets, labels of 1 to 63 octets.
pub fn check_hostname(name: &str) -> Result<(), String> {
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() {
        return Err("the name is empty (a stray comma?)".into());
    }
    if bare.len() > NAME_MAX {
        return Err(format!(
            "{} octets, longer than the {NAME_MAX} a name may have",
            bare.len()
        ));
    }
    for label in bare.split('.') {
        if label.is_empty() {
            return Err("it has an empty label (two dots in a row, or a leading dot)".into());
        }
        if label.len() > LABEL_MAX {
            return Err(format!(
                "its label {label:?} has {} octets, more than the {LABEL_MAX} a label may have",
                label.len()
            ));
        }
        if label.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "its label {label:?} holds a space or a control character"
            ));
        }
    }
    Ok(())
}

/// The `target` annotation's targets (`TargetsFromTargetAnnotation`), each an IP
/// address or a host name; anything else is a problem.
pub fn target_annotation(ann: &Annotations<'_>, problems: &mut Vec<Problem>) -> Vec<String> {
    let targets = ann.targets();
    if let Some((key, _)) = ann.get(annotations::TARGET) {
        for t in &targets {
            if let Err(why) = check_target(t) {
                problems.push(Problem {
                    field: Annotations::field(&key),
                    message: format!("{t:?} is neither an IP address nor a host name: {why}"),
                });
            }
        }
    }
    targets
}

/// An IP address, or a host name of letters, digits, `-` and `_` whose last label is
/// not all digits (no top-level domain is, RFC 3696 §2: `1.2.3` is a mistyped
/// address, which external-dns would publish as a CNAME to `1.2.3`).
pub fn check_target(target: &str) -> Result<(), String> {
    if target.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    check_hostname(target)?;
    let last = target
        .trim_end_matches('.')
        .rsplit('.')
        .next()
        .unwrap_or_default();
    if last.chars().all(|c| c.is_ascii_digit()) {
        return Err("it looks like an IPv4 address but is not one".into());
    }
    if let Some(c) = target
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!("{c:?} cannot be in a host name"));
    }
    if target.contains(':') {
        return Err("it looks like an IPv6 address but does not parse".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_are_checked() {
        assert!(check_hostname("foo.example.org.").is_ok());
        assert!(check_hostname("*.example.org").is_ok());
        assert!(check_hostname("").is_err());
        assert!(check_hostname("a..b").is_err());
        assert!(check_hostname(&"a".repeat(64)).is_err());
        let long = vec!["a".repeat(60); 5].join(".");
        assert!(check_hostname(&long).unwrap_err().contains("octets"));
    }

    #[test]
    fn targets_are_addresses_or_names() {
        for ok in [
            "1.2.3.4",
            "2001:DB8::1",
            "lb.example.com",
            "under_score.example",
        ] {
            assert!(check_target(ok).is_ok(), "{ok}");
        }
        for bad in [
            "1.2.3.4/24",
            "http://x",
            "2001:db8::g",
            "a b",
            "1.2.3",
            "10.0.0.256",
        ] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
    }
}
