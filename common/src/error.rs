//! Errors of the record model. Each names the record and the problem, so that a user
//! reading a log or a CLI message knows what to fix without looking anything up.
use thiserror::Error;

/// A value, name or RRSet that cannot be part of a zone.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("invalid name {name:?}: {problem}")]
    Name { name: String, problem: String },
    #[error("unsupported record type {0:?} (supported: A, AAAA, CNAME, TXT, MX, SRV, NS, CAA)")]
    Type(String),
    #[error("{rtype} value {value:?}: {problem}")]
    Value {
        rtype: String,
        value: String,
        problem: String,
    },
    #[error("{key}: {problem}")]
    RRSet { key: String, problem: String },
}

impl ModelError {
    pub(crate) fn name(name: &str, problem: impl Into<String>) -> Self {
        ModelError::Name {
            name: name.to_string(),
            problem: problem.into(),
        }
    }
}
