//! The JSON external-dns's webhook provider protocol speaks (INTEROP.md §1): its
//! `Endpoint`, `Changes` and `DomainFilter`, as Go's `encoding/json` writes them. Go
//! decodes keys without regard to case, and external-dns before 0.17 wrote `Create`,
//! `UpdateOld`, …: both spellings are read, the lower-camel one is written.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The media type of every request and answer, compared exactly by external-dns.
pub const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

/// One `Endpoint`: a (name, type, set identifier) and its targets. Empty fields are
/// left out, as Go's `omitempty` does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    #[serde(default, alias = "DNSName", alias = "dnsname")]
    pub dns_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "Targets")]
    pub targets: Vec<String>,
    #[serde(default, alias = "RecordType", alias = "recordtype")]
    pub record_type: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "SetIdentifier",
        alias = "setidentifier"
    )]
    pub set_identifier: String,
    /// Seconds; 0 (or absent) means "not set".
    #[serde(
        default,
        rename = "recordTTL",
        skip_serializing_if = "is_zero",
        alias = "RecordTTL",
        alias = "recordTtl",
        alias = "recordttl"
    )]
    pub record_ttl: i64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", alias = "Labels")]
    pub labels: BTreeMap<String, String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "ProviderSpecific",
        alias = "providerspecific"
    )]
    pub provider_specific: Vec<Property>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One `ProviderSpecificProperty`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    #[serde(default, alias = "Name")]
    pub name: String,
    #[serde(default, alias = "Value")]
    pub value: String,
}

/// `plan.Changes`: `update_old[i]` pairs with `update_new[i]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    #[serde(default, alias = "Create")]
    pub create: Vec<Endpoint>,
    #[serde(default, alias = "UpdateOld", alias = "updateold")]
    pub update_old: Vec<Endpoint>,
    #[serde(default, alias = "UpdateNew", alias = "updatenew")]
    pub update_new: Vec<Endpoint>,
    #[serde(default, alias = "Delete")]
    pub delete: Vec<Endpoint>,
}

/// The answer to negotiation, in list form: names without a trailing dot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainFilter {
    pub include: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both key spellings read; the lower-camel one is written, empty fields left out.
    #[test]
    fn go_spellings_read_and_omitempty_written() {
        let old: Changes = serde_json::from_str(
            r#"{"Create":[{"dnsName":"a.example.com","targets":["192.0.2.1"],"recordType":"A"}],"UpdateOld":[],"UpdateNew":[],"Delete":[]}"#,
        )
        .unwrap();
        let new: Changes = serde_json::from_str(
            r#"{"create":[{"dnsName":"a.example.com","targets":["192.0.2.1"],"recordType":"A"}]}"#,
        )
        .unwrap();
        assert_eq!(old, new);
        assert_eq!(
            serde_json::to_string(&new.create[0]).unwrap(),
            r#"{"dnsName":"a.example.com","targets":["192.0.2.1"],"recordType":"A"}"#
        );
        // Go's field tag is `recordTTL`, not the camel case of its name.
        let with_ttl = Endpoint {
            record_ttl: 60,
            set_identifier: "eu".into(),
            ..new.create[0].clone()
        };
        let text = serde_json::to_string(&with_ttl).unwrap();
        assert!(
            text.contains(r#""recordTTL":60"#) && text.contains(r#""setIdentifier":"eu""#),
            "{text}"
        );
    }
}
