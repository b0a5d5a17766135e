//! external-dns's planner, ported: what external-dns v0.22.0 would plan given what a
//! webhook's `GET /records` reports (current) and what it wants (desired). A webhook
//! server is right only if, once it has taken a change, its own listing makes this
//! planner plan nothing: any difference is an update external-dns sends on every loop,
//! forever (INTEROP.md §1.5.2).
//!
//! Read in kubernetes-sigs/external-dns at tag `v0.22.0` (commit
//! 994f908d4abdfe5fbf38f2f61613ed570432e43a), Apache-2.0; written anew from its
//! behaviour, each function naming the Go one it follows:
//! - `endpoint/endpoint.go`: `Targets.Same`, `Targets.Less`, `Targets.IsLess`,
//!   `TTL.IsConfigured`, `FilterEndpointsByOwnerID`, `RemoveDuplicates`, `Endpoint.Key`;
//! - `plan/plan.go`: `Plan.Calculate`, `calculateChanges`, `appendTakenDNSNameChanges`,
//!   `calculatePlanTableRowChanges`, `appendEndpointUpdates`, `targetChanged`,
//!   `shouldUpdateTTL`, `providerSpecificChanged`, `filterRecordsForPlan`,
//!   `IsManagedRecord`, `Changes.HasChanges`;
//! - `plan/conflict.go`: the `PerResource` resolver (`ResolveCreate`, `ResolveUpdate`,
//!   `ResolveRecordTypes`, `compareEndpoints`);
//! - `plan/policy.go`: `SyncPolicy` (changes as they are);
//! - `internal/idna/idna.go`: `NormalizeDNSName`.
//!
//! v0.22.0 has no `Endpoint.SameProviderSpecific`: the planner compares properties with
//! `providerSpecificChanged` (by name, values exactly, order aside), ported here.
//!
//! Left out, as the tests do not need them: the domain filter (every endpoint given is
//! in the zone), the upsert-only and create-only policies, IDNA mapping beyond
//! lower-casing (the tests' names are ASCII) and IPv6 zones (`%eth0`).
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// `endpoint.OwnerLabelKey`.
pub const OWNER_LABEL: &str = "owner";
/// `endpoint.ResourceLabelKey`.
pub const RESOURCE_LABEL: &str = "resource";

/// external-dns's `endpoint.Endpoint`, as its webhook JSON carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    #[serde(default)]
    pub dns_name: String,
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default)]
    pub record_type: String,
    #[serde(default)]
    pub set_identifier: String,
    #[serde(default, rename = "recordTTL")]
    pub record_ttl: i64,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub provider_specific: Vec<Property>,
}

/// `endpoint.ProviderSpecificProperty`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    pub name: String,
    pub value: String,
}

impl Endpoint {
    /// An endpoint from the webhook's JSON (`serde_json::Value`).
    pub fn from_json(v: &serde_json::Value) -> Endpoint {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("not an endpoint: {e}: {v}"))
    }

    /// `Endpoint.Key`: name, type and set identifier, as given.
    fn key(&self) -> (String, String, String) {
        (
            self.dns_name.clone(),
            self.record_type.clone(),
            self.set_identifier.clone(),
        )
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }
}

/// Go's `netip.ParseAddr`, for what the tests give (no zones).
fn ip(s: &str) -> Option<IpAddr> {
    s.parse().ok()
}

/// `Targets.Less`: two IP addresses by their text in canonical form, anything else by
/// its bytes.
fn targets_less(a: &str, b: &str) -> bool {
    match (ip(a), ip(b)) {
        (Some(x), Some(y)) => x.to_string() < y.to_string(),
        _ => a < b,
    }
}

fn by_less(a: &str, b: &str) -> Ordering {
    if targets_less(a, b) {
        Ordering::Less
    } else if targets_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// `Targets.Same`: as many targets; once both are sorted (`sort.Stable` by
/// `Targets.Less`), each pair equal without regard to case, or, failing that, both IP
/// addresses with the same canonical form. No unquoting, no trimming: `"a b"` and
/// `a b` differ. As in Go, the first pair of equal IP addresses that are spelled
/// differently decides for all that follow.
pub fn targets_same(t: &[String], o: &[String]) -> bool {
    if t.len() != o.len() {
        return false;
    }
    let (mut t, mut o) = (t.to_vec(), o.to_vec());
    t.sort_by(|a, b| by_less(a, b));
    o.sort_by(|a, b| by_less(a, b));
    for (a, b) in t.iter().zip(&o) {
        if !a.eq_ignore_ascii_case(b) && a.to_lowercase() != b.to_lowercase() {
            return match (ip(a), ip(b)) {
                (Some(x), Some(y)) => x.to_string() == y.to_string(),
                _ => false,
            };
        }
    }
    true
}

/// Go's `netip.Addr.Less`: IPv4 before IPv6, then by address.
fn ip_less(a: IpAddr, b: IpAddr) -> bool {
    let rank = |x: IpAddr| match x {
        IpAddr::V4(v) => (0, v.to_ipv6_mapped().octets()),
        IpAddr::V6(v) => (1, v.octets()),
    };
    rank(a) < rank(b)
}

/// `Targets.IsLess`: fewer targets first; then, once sorted, at the first pair that
/// differs, IP addresses before names, each kind in its order.
pub fn targets_is_less(t: &[String], o: &[String]) -> bool {
    if t.len() != o.len() {
        return t.len() < o.len();
    }
    let (mut t, mut o) = (t.to_vec(), o.to_vec());
    t.sort_by(|a, b| by_less(a, b));
    o.sort_by(|a, b| by_less(a, b));
    for (a, b) in t.iter().zip(&o) {
        if a != b {
            return match (ip(a), ip(b)) {
                (Some(x), Some(y)) => ip_less(x, y),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => a < b,
            };
        }
    }
    false
}

/// `compareEndpoints` (conflict.go).
fn compare_endpoints(a: &Endpoint, b: &Endpoint) -> Ordering {
    if targets_is_less(&a.targets, &b.targets) {
        Ordering::Less
    } else if targets_is_less(&b.targets, &a.targets) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// `idna.NormalizeDNSName`: trimmed, lower case (the tests' names are ASCII), with a
/// final dot.
pub fn normalize_dns_name(name: &str) -> String {
    let mut s = name.trim().to_lowercase();
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}

/// `plan.Changes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    pub create: Vec<Endpoint>,
    pub update_old: Vec<Endpoint>,
    pub update_new: Vec<Endpoint>,
    pub delete: Vec<Endpoint>,
}

impl Changes {
    /// `Changes.HasChanges`: creates or deletes, or updates whose new side is not
    /// exactly their old one.
    pub fn has_changes(&self) -> bool {
        !self.create.is_empty() || !self.delete.is_empty() || self.update_new != self.update_old
    }

    /// How many endpoints the plan writes (creates, updates, deletes).
    pub fn count(&self) -> usize {
        self.create.len() + self.update_new.len() + self.delete.len()
    }
}

/// `plan.Plan`, with the sync policy (`--policy=sync`).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub current: Vec<Endpoint>,
    pub desired: Vec<Endpoint>,
    /// `--managed-record-types` (external-dns's default is A, AAAA and CNAME: TXT is
    /// planned only when a user adds it).
    pub managed_records: Vec<String>,
    /// `--exclude-record-types`.
    pub exclude_records: Vec<String>,
    /// `--txt-owner-id`; empty: no owner filter, every difference counts.
    pub owner_id: String,
    /// `--migrate-from-txt-owner`.
    pub old_owner_id: String,
}

/// Every record type dnsplane models, for `managed_records`: the strictest comparison.
pub fn all_types() -> Vec<String> {
    [
        "A", "AAAA", "CNAME", "TXT", "MX", "SRV", "NS", "CAA", "PTR", "NAPTR",
    ]
    .map(String::from)
    .to_vec()
}

/// A row of the plan table: the current and desired endpoints at one (name, set).
#[derive(Default)]
struct Row {
    current: Vec<Endpoint>,
    candidates: Vec<Endpoint>,
    /// By record type: (current, candidates).
    records: BTreeMap<String, (Option<Endpoint>, Vec<Endpoint>)>,
}

/// `PerResource.ResolveCreate`: the first endpoint with the least targets.
fn resolve_create(candidates: &[Endpoint]) -> Endpoint {
    let mut min = &candidates[0];
    for c in &candidates[1..] {
        if compare_endpoints(c, min) == Ordering::Less {
            min = c;
        }
    }
    min.clone()
}

/// `PerResource.ResolveUpdate`: the candidate from the resource that holds the name,
/// else the least.
fn resolve_update(current: &Endpoint, candidates: &[Endpoint]) -> Endpoint {
    let resource = current.label(RESOURCE_LABEL).unwrap_or("");
    let mut sorted = candidates.to_vec();
    sorted.sort_by(compare_endpoints);
    sorted
        .iter()
        .find(|c| c.label(RESOURCE_LABEL).unwrap_or("") == resource)
        .cloned()
        .unwrap_or_else(|| resolve_create(&sorted))
}

/// `PerResource.ResolveRecordTypes`: a CNAME candidate beside others is dropped (its
/// current record kept, to be deleted).
fn resolve_record_types(row: &Row) -> BTreeMap<String, (Option<Endpoint>, Vec<Endpoint>)> {
    if row.candidates.len() <= 1 {
        return row.records.clone();
    }
    let cname = row.candidates.iter().any(|c| c.record_type == "CNAME");
    let other = row.candidates.iter().any(|c| c.record_type != "CNAME");
    if !(cname && other) {
        return row.records.clone();
    }
    row.records
        .iter()
        .map(|(t, (current, candidates))| match t.as_str() {
            "CNAME" => (t.clone(), (current.clone(), Vec::new())),
            _ => (t.clone(), (current.clone(), candidates.clone())),
        })
        .collect()
}

/// `shouldUpdateTTL`: only a configured (positive) desired TTL counts.
fn should_update_ttl(desired: &Endpoint, current: &Endpoint) -> bool {
    desired.record_ttl > 0 && desired.record_ttl != current.record_ttl
}

/// `providerSpecificChanged`: the same names with the same values, order aside.
fn provider_specific_changed(desired: &Endpoint, current: &Endpoint) -> bool {
    let mut wanted: BTreeMap<&str, &str> = desired
        .provider_specific
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    for c in &current.provider_specific {
        match wanted.remove(c.name.as_str()) {
            Some(v) if v == c.value => {}
            _ => return true,
        }
    }
    !wanted.is_empty()
}

/// `FilterEndpointsByOwnerID`.
fn owned_by(owner: &str, eps: Vec<Endpoint>) -> Vec<Endpoint> {
    eps.into_iter()
        .filter(|e| e.label(OWNER_LABEL) == Some(owner))
        .collect()
}

/// `RemoveDuplicates`: the first endpoint of each key.
fn remove_duplicates(eps: Vec<Endpoint>) -> Vec<Endpoint> {
    let mut seen = std::collections::BTreeSet::new();
    eps.into_iter().filter(|e| seen.insert(e.key())).collect()
}

impl Plan {
    /// `filterRecordsForPlan` and `IsManagedRecord` (every endpoint is in the domain).
    fn managed<'a>(&self, eps: &'a [Endpoint]) -> impl Iterator<Item = &'a Endpoint> {
        eps.iter().filter(|e| {
            !self.exclude_records.contains(&e.record_type)
                && self.managed_records.contains(&e.record_type)
        })
    }

    /// `Plan.Calculate` and `calculateChanges`.
    pub fn calculate(&self) -> Changes {
        let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
        // addCurrent, then addCandidate (`newPlanKey` makes the row and its type).
        for e in self.managed(&self.current) {
            let row = rows
                .entry((normalize_dns_name(&e.dns_name), e.set_identifier.clone()))
                .or_default();
            row.current.push(e.clone());
            row.records.entry(e.record_type.clone()).or_default().0 = Some(e.clone());
        }
        for e in self.managed(&self.desired) {
            let row = rows
                .entry((normalize_dns_name(&e.dns_name), e.set_identifier.clone()))
                .or_default();
            row.candidates.push(e.clone());
            row.records
                .entry(e.record_type.clone())
                .or_default()
                .1
                .push(e.clone());
        }

        let mut changes = Changes::default();
        for row in rows.values() {
            if row.current.is_empty() {
                for (_, candidates) in resolve_record_types(row).values() {
                    if !candidates.is_empty() {
                        changes.create.push(resolve_create(candidates));
                    }
                }
            } else if row.candidates.is_empty() {
                changes.delete.extend(row.current.iter().cloned());
            } else {
                self.append_taken_dns_name_changes(&mut changes, row);
            }
        }
        // SyncPolicy.Apply: the changes as they are.
        if !self.owner_id.is_empty() {
            changes.delete = remove_duplicates(owned_by(&self.owner_id, changes.delete));
            changes.update_old = owned_by(&self.owner_id, changes.update_old);
            changes.update_new = owned_by(&self.owner_id, changes.update_new);
        }
        changes
    }

    /// `appendTakenDNSNameChanges`: creates at a taken name only when this owner owns
    /// all that is there.
    fn append_taken_dns_name_changes(&self, changes: &mut Changes, row: &Row) {
        let row_changes = self.row_changes(row);
        changes.delete.extend(row_changes.delete);
        changes.update_new.extend(row_changes.update_new);
        changes.update_old.extend(row_changes.update_old);
        if row_changes.create.is_empty() {
            return;
        }
        let owners_match = self.owner_id.is_empty()
            || row
                .current
                .iter()
                .all(|c| c.label(OWNER_LABEL) == Some(self.owner_id.as_str()));
        if owners_match {
            changes.create.extend(row_changes.create);
        }
    }

    /// `calculatePlanTableRowChanges`.
    fn row_changes(&self, row: &Row) -> Changes {
        let mut changes = Changes::default();
        for (current, candidates) in resolve_record_types(row).values() {
            match (current, candidates.is_empty()) {
                (Some(c), true) => changes.delete.push(c.clone()),
                (None, false) => changes.create.push(resolve_create(candidates)),
                (Some(c), false) => self.append_endpoint_updates(&mut changes, c, candidates),
                (None, true) => {}
            }
        }
        changes
    }

    /// `appendEndpointUpdates`: an update when the TTL (if configured), the targets
    /// (`Targets.Same`) or the provider-specific properties differ, or the owner is
    /// being migrated; the new side inherits the current owner (`inheritOwner`).
    fn append_endpoint_updates(
        &self,
        changes: &mut Changes,
        current: &Endpoint,
        candidates: &[Endpoint],
    ) {
        let mut update = resolve_update(current, candidates);
        let migrating = !self.old_owner_id.is_empty()
            && current.label(OWNER_LABEL).unwrap_or("") != self.old_owner_id;
        if should_update_ttl(&update, current)
            || !targets_same(&update.targets, &current.targets)
            || provider_specific_changed(&update, current)
            || migrating
        {
            let mut current = current.clone();
            let owner = current
                .labels
                .entry(OWNER_LABEL.to_string())
                .or_default()
                .clone();
            update.labels.insert(OWNER_LABEL.to_string(), owner);
            changes.update_new.push(update);
            changes.update_old.push(current);
        }
    }
}

/// What external-dns would plan, strictly (every type managed, no owner filter), when
/// it wants `desired` and the webhook lists `current`.
pub fn plan_strict(desired: &[Endpoint], current: &[Endpoint]) -> Changes {
    Plan {
        current: current.to_vec(),
        desired: desired.to_vec(),
        managed_records: all_types(),
        ..Plan::default()
    }
    .calculate()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|t| t.to_string()).collect()
    }

    /// The cases of external-dns's own `TestSameSuccess`/`TestSameFailures` that bear
    /// on a webhook's answers.
    #[test]
    fn targets_same_as_external_dns() {
        assert!(targets_same(&s(&["8.8.8.8"]), &s(&["8.8.8.8"])));
        assert!(targets_same(
            &s(&["example.org", "EXAMPLE.ORG"]),
            &s(&["example.org", "example.org"])
        ));
        assert!(targets_same(
            &s(&["2001:db8::1", "192.0.2.1"]),
            &s(&["192.0.2.1", "2001:0db8:0:0:0:0:0:1"])
        ));
        assert!(!targets_same(&s(&["a"]), &s(&["a", "b"])));
        assert!(!targets_same(&s(&["example.org"]), &s(&["example.org."])));
        assert!(!targets_same(
            &s(&["v=spf1 -all"]),
            &s(&["\"v=spf1 -all\""])
        ));
    }

    #[test]
    fn a_converged_world_plans_nothing_and_a_quoted_txt_is_an_update() {
        let ep = |name: &str, t: &str, targets: &[&str]| Endpoint {
            dns_name: name.into(),
            record_type: t.into(),
            targets: s(targets),
            ..Endpoint::default()
        };
        let desired = vec![
            ep("a.example.com", "A", &["192.0.2.1"]),
            ep("t.example.com", "TXT", &["v=spf1 -all"]),
        ];
        assert_eq!(plan_strict(&desired, &desired).count(), 0);
        let listed = vec![
            ep("A.example.com.", "A", &["192.0.2.1"]),
            ep("t.example.com", "TXT", &["\"v=spf1 -all\""]),
        ];
        let plan = plan_strict(&desired, &listed);
        assert_eq!(plan.update_new.len(), 1, "{plan:?}");
        assert_eq!(plan.count(), 1);
        // TXT is not managed by default: external-dns's default plans nothing.
        let default = Plan {
            current: listed,
            desired,
            managed_records: s(&["A", "AAAA", "CNAME"]),
            ..Plan::default()
        };
        assert_eq!(default.calculate().count(), 0);
    }
}
