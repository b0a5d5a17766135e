//! From names and targets to endpoints, as external-dns's `endpoint` package does it
//! (`SuitableType`, `EndpointsForHostname`, `MergeEndpoints`), with the checks
//! external-dns leaves to a log line: a name or a target dnsplane cannot publish is a
//! [`Problem`] naming where it came from, not a record silently dropped.
use super::{Endpoint, Problem};
use dnsplane_common::name::Name;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The record type for `target` (external-dns `SuitableType`): A for an IPv4 address,
/// AAAA for an IPv6 one, CNAME for anything else.
pub fn suitable_type(target: &str) -> &'static str {
    match target.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => "A",
        Ok(IpAddr::V6(_)) => "AAAA",
        Err(_) => "CNAME",
    }
}

/// What every endpoint of one object shares: TTL, set identifier, provider-specific.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    pub ttl: Option<i64>,
    pub set_identifier: String,
    pub provider_specific: Vec<(String, String)>,
}

/// One endpoint per record type for `hostname` (external-dns `EndpointsForHostname`):
/// the targets grouped by [`suitable_type`], in the order A, AAAA, CNAME; none when
/// there are no targets. The trailing dot of the name and of the targets is removed
/// (`NewEndpointWithTTL`).
pub fn endpoints_for_hostname(
    hostname: &str,
    targets: &[String],
    shared: &Shared,
) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for record_type in ["A", "AAAA", "CNAME"] {
        let of_type: Vec<String> = targets
            .iter()
            .filter(|t| suitable_type(t) == record_type)
            .map(|t| t.trim_end_matches('.').to_string())
            .collect();
        if of_type.is_empty() {
            continue;
        }
        out.push(Endpoint {
            dns_name: hostname.trim_end_matches('.').to_string(),
            record_type: record_type.to_string(),
            targets: of_type,
            ttl: shared.ttl,
            set_identifier: shared.set_identifier.clone(),
            provider_specific: shared.provider_specific.clone(),
        });
    }
    out
}

/// Endpoints of the same name, type, set identifier and TTL become one, their targets
/// sorted and deduplicated (external-dns `MergeEndpoints`). A CNAME is merged only with
/// a CNAME of the same first target: a name has one canonical name, and two objects
/// naming different ones is a conflict for the planner to report, not to hide.
pub fn merge_endpoints(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    type Key = (String, String, String, Option<i64>, Option<String>);
    let mut merged: BTreeMap<Key, Endpoint> = BTreeMap::new();
    for ep in endpoints {
        let single = ep.record_type == "CNAME" || ep.record_type == "DNAME";
        if single && ep.targets.is_empty() {
            continue;
        }
        let key = (
            ep.dns_name.clone(),
            ep.record_type.clone(),
            ep.set_identifier.clone(),
            ep.ttl,
            single.then(|| ep.targets[0].clone()),
        );
        match merged.get_mut(&key) {
            Some(existing) => existing.targets.extend(ep.targets),
            None => {
                merged.insert(key, ep);
            }
        }
    }
    merged
        .into_values()
        .map(|mut ep| {
            ep.targets.sort();
            ep.targets.dedup();
            ep
        })
        .collect()
}

/// `host` if dnsplane can publish it (a name of at most 253 octets, labels of at most
/// 63, no empty label; a leading `*.` is a wildcard), or a problem at `field`.
/// external-dns logs "label … is longer than 63 characters" and drops the record.
pub fn check_host(field: &str, host: &str) -> Result<(), Problem> {
    Name::parse(host).map(|_| ()).map_err(|e| Problem {
        field: field.to_string(),
        message: format!("{host:?} is not a name dnsplane can publish: {e}"),
    })
}

/// `target` if it is an IP address or a name (the `target` annotation), or a problem
/// at `field`.
pub fn check_target(field: &str, target: &str) -> Result<(), Problem> {
    if target.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let bad = |why: String| Problem {
        field: field.to_string(),
        message: format!("target {target:?} is neither an IP address nor a host name: {why}"),
    };
    if target.contains('*') {
        return Err(bad("a target cannot be a wildcard".into()));
    }
    Name::parse(target)
        .map(|_| ())
        .map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_grouped_by_type_in_external_dns_order() {
        let targets: Vec<String> = ["lb.example.com.", "2001:db8::1", "10.0.0.1"]
            .map(String::from)
            .to_vec();
        let eps = endpoints_for_hostname("web.example.com.", &targets, &Shared::default());
        let got: Vec<(&str, &str, Vec<String>)> = eps
            .iter()
            .map(|e| {
                (
                    e.dns_name.as_str(),
                    e.record_type.as_str(),
                    e.targets.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("web.example.com", "A", vec!["10.0.0.1".to_string()]),
                ("web.example.com", "AAAA", vec!["2001:db8::1".to_string()]),
                (
                    "web.example.com",
                    "CNAME",
                    vec!["lb.example.com".to_string()]
                ),
            ]
        );
    }

    #[test]
    fn bad_hosts_and_targets_name_their_field() {
        let long = format!("{}.example.org", "a".repeat(64));
        assert_eq!(
            check_host("spec.rules[0].host", &long).unwrap_err().field,
            "spec.rules[0].host"
        );
        assert!(check_host("f", &format!("{}.org", "a.".repeat(130))).is_err());
        assert!(check_host("f", "*.example.org").is_ok());
        assert!(check_target("f", "lb.example.com").is_ok());
        assert!(check_target("f", "2001:db8::1").is_ok());
        for bad in [
            "not a target",
            "lb.example.com:443",
            "a..b",
            "*.example.com",
            "",
        ] {
            assert!(check_target("f", bad).is_err(), "{bad}");
        }
    }
}
