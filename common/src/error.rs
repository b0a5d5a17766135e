//! Errors of the record model. Each names the record and the problem, so that a user
//! reading a log or a CLI message knows what to fix without looking anything up.
use thiserror::Error;

/// A value, name or RRSet that cannot be part of a zone.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("invalid name {name:?}: {problem}")]
    Name { name: String, problem: String },
    #[error(
        "unsupported record type {0:?} (supported: A, AAAA, CNAME, TXT, MX, SRV, NS, CAA, PTR, SVCB, HTTPS, TLSA, SSHFP, NAPTR, DS)"
    )]
    Type(String),
    #[error("{rtype} value {value:?}: {problem}")]
    Value {
        rtype: String,
        value: String,
        problem: String,
    },
    #[error("{key}: {problem}")]
    RRSet { key: String, problem: String },
    #[error("set identifier {id:?}: {problem}")]
    SetId { id: String, problem: String },
    #[error("provider-specific property {name:?}: {problem}")]
    Property { name: String, problem: String },
}

impl ModelError {
    pub(crate) fn name(name: &str, problem: impl Into<String>) -> Self {
        ModelError::Name {
            name: excerpt(name),
            problem: problem.into(),
        }
    }
}

/// Longest input quoted whole in an error message.
const EXCERPT_CHARS: usize = 80;

/// `input`, or its first characters and its size when it is long: an error about a
/// 70 KB value must not carry the 70 KB into every log line and status answer.
pub fn excerpt(input: &str) -> String {
    match input.char_indices().nth(EXCERPT_CHARS) {
        None => input.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &input[..cut], input.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_inputs_are_shortened_in_errors() {
        assert_eq!(excerpt("short"), "short");
        let long = "é".repeat(100);
        let e = excerpt(&long);
        assert!(e.starts_with(&"é".repeat(EXCERPT_CHARS)), "{e}");
        assert!(e.ends_with("… (200 bytes)"), "{e}");
    }
}
