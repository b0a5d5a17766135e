//! RRSets, the ops that change them, and changes (an RRSet op plus its ownership ops).
use crate::error::ModelError;
use crate::name::Name;
use crate::rdata::{RecordType, canonicalize};
use crate::routing::{self, SetId};
use values::Values;
pub use values::{PropertyIter, ValueIter};

mod values;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// Largest TTL a resolver honours (RFC 2181 §8).
pub const MAX_TTL: u32 = 2_147_483_647;
/// Values one RRSet may hold; far above any real use, low enough to bound a message.
pub const MAX_VALUES: usize = 1_000;
pub use crate::rdata::MAX_RDATA;
pub use crate::wire::MAX_MESSAGE;

/// `(zone, name, type, set)`: the identity of an RRSet. `set` is [`SetId::NONE`] but
/// for the sets of a routing policy (several RRSets of one name and type that a
/// provider such as Route 53 answers by weight, region, …).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordKey {
    pub zone: Name,
    pub name: Name,
    pub rtype: RecordType,
    pub set: SetId,
}

impl RecordKey {
    pub fn new(zone: Name, name: Name, rtype: RecordType) -> Self {
        RecordKey {
            zone,
            name,
            rtype,
            set: SetId::NONE,
        }
    }

    /// The same key in routing-policy set `set`.
    pub fn in_set(mut self, set: SetId) -> Self {
        self.set = set;
        self
    }
}

impl fmt::Display for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.rtype)?;
        if !self.set.is_none() {
            write!(f, " [set {:?}]", self.set.as_str())?;
        }
        Ok(())
    }
}

impl fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self} (zone {})", self.zone)
    }
}

/// The entries of `map` at `name` (every record type), in key order. Keys sort by
/// (zone, name, type), so this is a range, never a scan of the zone.
pub fn at_name<'a, V>(
    map: &'a BTreeMap<RecordKey, V>,
    zone: &Name,
    name: &Name,
) -> impl Iterator<Item = (&'a RecordKey, &'a V)> + 'a {
    let name = name.clone();
    map.range(RecordKey::new(zone.clone(), name.clone(), RecordType::ALL[0])..)
        .take_while(move |(k, _)| k.name == name)
}

/// An RRSet: its key, TTL and canonical values, sorted and without duplicates.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RRSet {
    pub key: RecordKey,
    pub ttl: u32,
    /// Shared, so an observed RRSet equal to the desired one can point at the same
    /// values.
    values: Values,
}

impl RRSet {
    /// Builds an RRSet from values in any accepted spelling; canonicalises, sorts,
    /// de-duplicates and checks the per-type rules.
    pub fn new<S: AsRef<str>>(key: RecordKey, ttl: u32, values: &[S]) -> Result<RRSet, ModelError> {
        RRSet::with_properties::<S, &str, &str>(key, ttl, values, &[])
    }

    /// [`RRSet::new`] with provider-specific properties ([`routing`]), in any accepted
    /// spelling. An alias (`alias=true`) holds its target's DNS name as its one value
    /// and has no TTL of its own (it is kept as 0, whatever is asked).
    pub fn with_properties<S: AsRef<str>, N: AsRef<str>, V: AsRef<str>>(
        key: RecordKey,
        ttl: u32,
        values: &[S],
        properties: &[(N, V)],
    ) -> Result<RRSet, ModelError> {
        let properties = routing::canonical_properties(properties)?;
        let alias = routing::is_alias(properties.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let mut canon = Vec::with_capacity(values.len());
        for v in values {
            canon.push(canonical_value(key.rtype, alias, v.as_ref())?);
        }
        RRSet::from_canonical_with(key, ttl, canon, properties)
    }

    /// Builds an RRSet from values already in canonical form (read back from a store
    /// that only ever holds canonical values); still sorts and checks the set rules.
    pub fn from_canonical(
        key: RecordKey,
        ttl: u32,
        values: Vec<String>,
    ) -> Result<RRSet, ModelError> {
        RRSet::from_canonical_with(key, ttl, values, Vec::new())
    }

    /// [`RRSet::from_canonical`] with canonical properties
    /// ([`routing::canonical_properties`]).
    pub fn from_canonical_with(
        key: RecordKey,
        ttl: u32,
        mut values: Vec<String>,
        properties: Vec<(String, String)>,
    ) -> Result<RRSet, ModelError> {
        let pairs = || properties.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let alias = routing::is_alias(pairs());
        // An alias has no TTL of its own; a proxied record's is automatic.
        let ttl = routing::fixed_ttl(pairs()).unwrap_or(ttl);
        values.sort();
        values.dedup();
        let problem = |p: String| ModelError::RRSet {
            key: key.to_string(),
            problem: p,
        };
        if values.is_empty() {
            return Err(problem("an RRSet needs at least one value".into()));
        }
        if values.len() > MAX_VALUES {
            return Err(problem(format!(
                "{} values, above the limit of {MAX_VALUES}",
                values.len()
            )));
        }
        if ttl > MAX_TTL {
            return Err(problem(format!("TTL {ttl} is above {MAX_TTL}")));
        }
        if alias && values.len() > 1 {
            return Err(problem(format!(
                "an alias holds exactly one target, not {}",
                values.len()
            )));
        }
        if key.rtype == RecordType::Cname && values.len() > 1 {
            return Err(problem(format!(
                "a CNAME holds exactly one target, not {}",
                values.len()
            )));
        }
        if key.rtype == RecordType::Cname && key.name == key.zone {
            return Err(problem(
                "a CNAME cannot sit at the zone apex (beside SOA and NS)".into(),
            ));
        }
        if !key.name.is_within(&key.zone) {
            return Err(problem(format!("name is outside zone {}", key.zone)));
        }
        // What a DNS answer can carry (`wire`): each value in one record, the whole set
        // in one 64 KiB TCP answer.
        // (An alias is answered with its target's records, not with a name.)
        if !alias {
            crate::wire::check_answer(&key.name, key.rtype, &values).map_err(problem)?;
        }
        Ok(RRSet {
            key,
            ttl,
            values: Values::with_properties(ttl, &values, &properties),
        })
    }

    pub fn values(&self) -> ValueIter<'_> {
        self.values.iter()
    }

    /// The provider-specific properties ([`routing`]), sorted by name.
    pub fn properties(&self) -> PropertyIter<'_> {
        self.values.properties()
    }

    /// The value of property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        routing::property(self.properties(), name)
    }

    /// The properties as owned pairs.
    pub fn properties_vec(&self) -> Vec<(String, String)> {
        self.properties()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// True when this is an alias (values are the target's DNS name).
    pub fn is_alias(&self) -> bool {
        routing::is_alias(self.properties())
    }

    /// The values as owned strings.
    pub fn values_vec(&self) -> Vec<String> {
        self.values().map(str::to_string).collect()
    }

    /// The same data under another key (e.g. an interned one).
    pub fn with_key(&self, key: RecordKey) -> RRSet {
        RRSet {
            key,
            ttl: self.ttl,
            values: self.values.clone(),
        }
    }

    /// Shares `data`'s value storage when the TTL and values are equal.
    pub fn share_values_with_data(&mut self, data: &RRData) {
        if data.same_as(self) {
            self.values = data.values.clone();
        }
    }

    /// Shares `other`'s value storage when the data is equal (saves memory in indexes
    /// that hold both a desired and an observed copy).
    pub fn share_values_with(&mut self, other: &RRSet) {
        if self.same_data(other) {
            self.values = other.values.clone();
        }
    }

    /// This desired RRSet as it compares with (and is written over) `observed`
    /// ([`routing::settle`]): a property kept when absent taken from `observed`, one
    /// restating absence dropped, the TTL those impose. `None` when nothing changes.
    pub fn settled(&self, observed: &RRSet) -> Option<RRSet> {
        let properties = routing::settle(self.properties(), observed.properties())?;
        let pairs = || properties.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let ttl = routing::fixed_ttl(pairs()).unwrap_or(self.ttl);
        // What it becomes is what is observed: share that (no allocation).
        if ttl == observed.ttl
            && self.values().eq(observed.values())
            && pairs().eq(observed.properties())
        {
            return Some(observed.clone());
        }
        // Values already checked; a kept property changes no rule on them.
        Some(RRSet {
            key: self.key.clone(),
            ttl,
            values: Values::with_properties(ttl, &self.values_vec(), &properties),
        })
    }

    /// Same TTL and values (the keys are assumed equal).
    pub fn same_data(&self, other: &RRSet) -> bool {
        self.ttl == other.ttl && self.values == other.values
    }

    /// Rough wire size, used to keep batches under provider byte limits.
    pub fn approx_bytes(&self) -> usize {
        self.key.name.as_str().len()
            + self.key.set.as_str().len()
            + 16
            + self.values.iter().map(|v| v.len() + 12).sum::<usize>()
            + self
                .properties()
                .map(|(n, v)| n.len() + v.len() + 8)
                .sum::<usize>()
    }
}

impl fmt::Display for RRSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.key.name,
            self.ttl,
            self.key.rtype,
            self.values.iter().collect::<Vec<_>>().join(" | ")
        )?;
        for (n, v) in self.properties() {
            write!(f, " {n}={v}")?;
        }
        Ok(())
    }
}

/// An RRSet's TTL and values without its key, for an index that holds the key as its
/// map key (a million-record index would otherwise hold every key twice). Made only
/// from a checked [`RRSet`], so [`RRData::rrset`] needs no checks again. One word: the
/// TTL lives in the values' allocation.
#[derive(Clone)]
pub struct RRData {
    /// Shared with the RRSet it came from when that RRSet's TTL is the one its values
    /// were made with (always, but for an RRSet whose `ttl` was changed after).
    values: Values,
}

impl RRData {
    pub fn of(rrset: &RRSet) -> RRData {
        let values = if rrset.values.ttl() == rrset.ttl {
            rrset.values.clone()
        } else {
            rrset.values.with_ttl(rrset.ttl)
        };
        RRData { values }
    }

    pub fn ttl(&self) -> u32 {
        self.values.ttl()
    }

    /// The RRSet at `key`.
    pub fn rrset(&self, key: &RecordKey) -> RRSet {
        RRSet {
            key: key.clone(),
            ttl: self.ttl(),
            values: self.values.clone(),
        }
    }

    pub fn values(&self) -> ValueIter<'_> {
        self.values.iter()
    }

    /// The values as owned strings.
    pub fn values_vec(&self) -> Vec<String> {
        self.values().map(str::to_string).collect()
    }

    /// The provider-specific properties, sorted by name.
    pub fn properties(&self) -> PropertyIter<'_> {
        self.values.properties()
    }

    /// Same TTL and values as `rrset`.
    pub fn same_as(&self, rrset: &RRSet) -> bool {
        self.ttl() == rrset.ttl && self.values == rrset.values
    }
}

impl PartialEq for RRData {
    fn eq(&self, other: &RRData) -> bool {
        self.ttl() == other.ttl() && self.values == other.values
    }
}

impl Eq for RRData {}

impl fmt::Debug for RRData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RRData")
            .field("ttl", &self.ttl())
            .field("values", &self.values)
            .finish()
    }
}

/// One write to one RRSet with its precondition: `before` is what must be there now
/// (`None`: nothing), `after` is what must be there afterwards (`None`: nothing).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RRSetOp {
    pub key: RecordKey,
    pub before: Option<RRSet>,
    pub after: Option<RRSet>,
}

impl RRSetOp {
    pub fn create(after: RRSet) -> Self {
        RRSetOp {
            key: after.key.clone(),
            before: None,
            after: Some(after),
        }
    }
    pub fn update(before: RRSet, after: RRSet) -> Self {
        RRSetOp {
            key: after.key.clone(),
            before: Some(before),
            after: Some(after),
        }
    }
    pub fn delete(before: RRSet) -> Self {
        RRSetOp {
            key: before.key.clone(),
            before: Some(before),
            after: None,
        }
    }

    /// True when the precondition holds against `current`.
    pub fn precondition_holds(&self, current: Option<&RRSet>) -> bool {
        same(self.before.as_ref(), current)
    }

    /// True when `current` already is the target (a property the target leaves to
    /// the provider, [`routing::settle`], is whatever `current` holds).
    pub fn at_target(&self, current: Option<&RRSet>) -> bool {
        match (&self.after, current) {
            (Some(after), Some(cur)) => after.settled(cur).as_ref().unwrap_or(after).same_data(cur),
            (after, cur) => same(after.as_ref(), cur),
        }
    }

    /// True when the op writes nothing (an assertion).
    pub fn is_assert(&self) -> bool {
        same(self.before.as_ref(), self.after.as_ref())
    }
}

fn same(a: Option<&RRSet>, b: Option<&RRSet>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_data(b),
        _ => false,
    }
}

/// Kinds of change, named after the op on the record itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum ChangeKind {
    Create,
    Update,
    Delete,
    /// Ownership is taken: the record already equals the desired one and only
    /// ownership is written, or (taking over from external-dns) it is updated in place
    /// and external-dns's marks go in the same change.
    Adopt,
    /// Ownership is handed to external-dns (`dnsplane release`): the record asserted
    /// unchanged, dnsplane's ownership record deleted, external-dns's mark written.
    Release,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Create => "create",
            ChangeKind::Update => "update",
            ChangeKind::Delete => "delete",
            ChangeKind::Adopt => "adopt",
            ChangeKind::Release => "release",
        }
    }
}

/// The unit of change and of outcome: `ops[0]` is the record, the rest its ownership
/// records. All ops commit together or not at all.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Change {
    pub id: String,
    pub kind: ChangeKind,
    pub ops: Vec<RRSetOp>,
}

impl Change {
    /// Builds a change and its stable id.
    pub fn new(kind: ChangeKind, ops: Vec<RRSetOp>) -> Change {
        let id = change_id(&ops);
        Change { id, kind, ops }
    }

    /// The key of the record this change is about.
    pub fn key(&self) -> &RecordKey {
        &self.ops[0].key
    }

    pub fn approx_bytes(&self) -> usize {
        self.ops
            .iter()
            .map(|op| {
                op.before.as_ref().map_or(0, RRSet::approx_bytes)
                    + op.after.as_ref().map_or(0, RRSet::approx_bytes)
            })
            .sum()
    }
}

/// A value's canonical form; an alias's value is its target's DNS name, whatever the
/// record's type.
fn canonical_value(rtype: RecordType, alias: bool, value: &str) -> Result<String, ModelError> {
    if alias {
        return Ok(Name::parse(value)?.to_string());
    }
    canonicalize(rtype, value)
}

/// A hash of (zone, key, before, after) of every op: the same change planned twice, by
/// any planner, gets the same id.
pub fn change_id(ops: &[RRSetOp]) -> String {
    let mut h = Sha256::new();
    for op in ops {
        h.update(op.key.zone.as_str());
        h.update([0]);
        h.update(op.key.name.as_str());
        h.update([0]);
        h.update(op.key.rtype.as_str());
        if !op.key.set.is_none() {
            h.update([4]);
            h.update(op.key.set.as_str());
        }
        for side in [&op.before, &op.after] {
            match side {
                None => h.update([1]),
                Some(r) => {
                    h.update([2]);
                    h.update(r.ttl.to_be_bytes());
                    for v in r.values() {
                        h.update(v.as_bytes());
                        h.update([0]);
                    }
                    for (n, v) in r.properties() {
                        h.update([5]);
                        h.update(n.as_bytes());
                        h.update([0]);
                        h.update(v.as_bytes());
                    }
                }
            }
        }
        h.update([3]);
    }
    let digest = h.finalize();
    digest[..12].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    /// The planner holds a few keys and values per record: a name and a set of values
    /// are one thin pointer each, so that a million records do not pay for fat ones.
    #[test]
    fn names_and_keys_stay_small() {
        assert_eq!(std::mem::size_of::<crate::Name>(), 8);
        assert_eq!(std::mem::size_of::<RecordKey>(), 24);
        assert_eq!(std::mem::size_of::<RRData>(), 8);
        assert_eq!(std::mem::size_of::<Option<RRData>>(), 8);
    }

    /// Values kept packed read back as they were given, in order: several, long,
    /// non-ASCII, empty; sets that differ only in how their text splits differ.
    #[test]
    fn packed_values_read_back_whole() {
        let long = "x".repeat(70_000);
        let given = ["\"a b\"", "", "\"ü\"", long.as_str(), ""];
        let v = Values::new(300, &given);
        assert_eq!(v.iter().collect::<Vec<_>>(), given);
        assert_eq!(v.iter().len(), 5);
        assert_eq!(v.ttl(), 300);
        assert!(Values::new(1, &["ab", "c"]) != Values::new(1, &["a", "bc"]));
        assert!(Values::new(1, &[""]) != Values::new(1, &[] as &[&str]));
        assert!(
            Values::new(1, &["a"]) == Values::new(2, &["a"]),
            "the TTL is the holder's"
        );
        assert_eq!(Values::new(1, &[] as &[&str]).iter().count(), 0);
    }

    /// Properties are data: packed after the values, read back sorted, and two sets
    /// that differ only in them differ; an alias holds a name and no TTL.
    #[test]
    fn properties_are_data() {
        let k = || {
            RecordKey::new(
                Name::parse("example.com").unwrap(),
                Name::parse("www.example.com").unwrap(),
                RecordType::A,
            )
        };
        let weighted = RRSet::with_properties(
            k().in_set(SetId::new("eu").unwrap()),
            60,
            &["192.0.2.1"],
            &[("aws/weight", "10")],
        )
        .unwrap();
        assert_eq!(weighted.values(), ["192.0.2.1"]);
        assert_eq!(weighted.property("aws/weight"), Some("10"));
        let heavier = RRSet::with_properties(
            weighted.key.clone(),
            60,
            &["192.0.2.1"],
            &[("aws/weight", "20")],
        )
        .unwrap();
        assert!(!weighted.same_data(&heavier));
        assert_ne!(
            change_id(&[RRSetOp::create(weighted.clone())]),
            change_id(&[RRSetOp::create(heavier.clone())])
        );
        let data = RRData::of(&weighted);
        assert_eq!(data.rrset(&weighted.key), weighted);
        assert_eq!(
            weighted.to_string(),
            "www.example.com. 60 A 192.0.2.1 aws/weight=10"
        );
        let alias =
            RRSet::with_properties(k(), 300, &["LB-1.Elb.Amazonaws.com"], &[("alias", "true")])
                .unwrap();
        assert_eq!(alias.values(), ["lb-1.elb.amazonaws.com."]);
        assert_eq!(alias.ttl, 0);
        assert!(alias.is_alias());
        assert!(
            RRSet::with_properties(
                k(),
                300,
                &["a.example.", "b.example."],
                &[("alias", "true")]
            )
            .is_err()
        );
        assert!(
            RRSet::new(k(), 300, &["lb.example."]).is_err(),
            "a plain A holds an address"
        );
    }

    /// Cloudflare's proxy status: `true` fixes the TTL at 1 (automatic); a desired set
    /// without it settles to what is observed (a set proxied by hand stays proxied, no
    /// change planned), `false` over a DNS-only set (read without it) settles to
    /// nothing, and `false` over a proxied one stays, to be written.
    #[test]
    fn the_proxy_status_settles_against_what_is_observed() {
        const P: &str = routing::cloudflare::PROXIED;
        let k = || {
            RecordKey::new(
                Name::parse("example.com").unwrap(),
                Name::parse("www.example.com").unwrap(),
                RecordType::A,
            )
        };
        let rr = |ttl, props: &[(&str, &str)]| {
            RRSet::with_properties(k(), ttl, &["192.0.2.1"], props).unwrap()
        };
        let proxied = rr(300, &[(P, "TRUE")]);
        assert_eq!((proxied.ttl, proxied.property(P)), (1, Some("true")));
        let plain = rr(300, &[]);
        let off = rr(300, &[(P, "false")]);
        assert_eq!(off.property(P), Some("false"), "an instruction, kept");
        // Absent: whatever is there, with the TTL that imposes.
        let kept = plain.settled(&proxied).unwrap();
        assert!(kept.same_data(&proxied), "{kept}");
        assert_eq!(plain.settled(&plain), None);
        assert!(RRSetOp::update(proxied.clone(), plain.clone()).at_target(Some(&proxied)));
        // `false` over DNS-only restates it; over proxied it is a change.
        assert!(off.settled(&plain).unwrap().same_data(&plain));
        assert!(RRSetOp::update(proxied.clone(), off.clone()).at_target(Some(&plain)));
        assert_eq!(off.settled(&proxied), None);
        assert!(!off.same_data(&proxied));
        // `true` over DNS-only is a change too.
        assert_eq!(proxied.settled(&plain), None);
        assert!(!RRSetOp::create(proxied.clone()).at_target(Some(&plain)));
        // Other values: settled, not the observed set.
        let moved = RRSet::new(k(), 300, &["192.0.2.9"])
            .unwrap()
            .settled(&proxied)
            .unwrap();
        assert_eq!((moved.ttl, moved.property(P)), (1, Some("true")));
        assert_eq!(moved.values(), ["192.0.2.9"]);
    }

    /// The TTL kept beside the values is the RRSet's, also for an RRSet whose TTL
    /// was changed after it was made; equal values with another TTL are other data.
    #[test]
    fn rrdata_keeps_the_rrsets_ttl() {
        let key = RecordKey::new(
            Name::parse("example.com").unwrap(),
            Name::parse("a.example.com").unwrap(),
            RecordType::A,
        );
        let mut r = RRSet::new(key.clone(), 60, &["192.0.2.1"]).unwrap();
        let at_60 = RRData::of(&r);
        r.ttl = 300;
        let at_300 = RRData::of(&r);
        assert_eq!((at_60.ttl(), at_300.ttl()), (60, 300));
        assert_ne!(at_60, at_300);
        assert!(at_300.same_as(&r) && !at_60.same_as(&r));
        assert_eq!(at_300.rrset(&key), r);
        assert_eq!(at_60.values(), r.values());
    }

    use super::*;

    fn key(name: &str, t: RecordType) -> RecordKey {
        RecordKey::new(
            Name::parse("example.com").unwrap(),
            Name::parse(name).unwrap(),
            t,
        )
    }

    /// What no DNS answer could carry is refused: a 70 KB TXT value, a set too large
    /// for one 64 KiB TCP message; a long TXT string is split at 255 bytes, not refused.
    #[test]
    fn sets_must_fit_a_dns_answer() {
        let k = key("t.example.com", RecordType::Txt);
        let e = RRSet::new(k.clone(), 60, &["x".repeat(70_000)]).unwrap_err();
        assert!(e.to_string().contains("above the 65535"), "{e}");
        assert!(
            e.to_string().len() < 400,
            "the value is not quoted whole: {e}"
        );
        let ok = RRSet::new(k.clone(), 60, &["x".repeat(1000)]).unwrap();
        assert_eq!(
            crate::rdata::wire_len(RecordType::Txt, ok.values().next().unwrap()),
            1000 + 4
        );
        // 40 values of 2,000 bytes: each fits, the set does not.
        let many: Vec<String> = (0..40)
            .map(|i| format!("{i}{}", "y".repeat(2000)))
            .collect();
        let e = RRSet::new(k, 60, &many).unwrap_err();
        assert!(e.to_string().contains("one TCP message"), "{e}");
        for (t, v, len) in [
            (RecordType::A, "192.0.2.1", 4),
            (RecordType::Aaaa, "2001:db8::1", 16),
            (RecordType::Cname, "a.example.com.", 15),
            (RecordType::Mx, "10 mx.example.com.", 18),
            (RecordType::Srv, "1 2 3 s.example.com.", 21),
            (RecordType::Txt, "\"a\\\"b\" \"\\065\"", 6),
            (RecordType::Caa, "0 issue \"ca.example\"", 17),
        ] {
            assert_eq!(crate::rdata::wire_len(t, v), len, "{t} {v}");
        }
    }

    #[test]
    fn values_are_sorted_and_deduplicated() {
        let r = RRSet::new(
            key("a.example.com", RecordType::A),
            60,
            &["192.0.2.2", "192.0.2.1", "192.0.2.2"],
        )
        .unwrap();
        assert_eq!(r.values(), ["192.0.2.1", "192.0.2.2"]);
    }

    #[test]
    fn set_rules() {
        assert!(RRSet::new(key("a.example.com", RecordType::Cname), 60, &["x.", "y."]).is_err());
        assert!(RRSet::new(key("example.com", RecordType::Cname), 60, &["x."]).is_err());
        assert!(RRSet::new(key("a.other.com", RecordType::A), 60, &["192.0.2.1"]).is_err());
        assert!(RRSet::new::<&str>(key("a.example.com", RecordType::A), 60, &[]).is_err());
        assert!(
            RRSet::new(
                key("a.example.com", RecordType::A),
                MAX_TTL + 1,
                &["192.0.2.1"]
            )
            .is_err()
        );
    }

    #[test]
    fn change_ids_are_stable_and_distinct() {
        let a = RRSet::new(key("a.example.com", RecordType::A), 60, &["192.0.2.1"]).unwrap();
        let b = RRSet::new(key("a.example.com", RecordType::A), 60, &["192.0.2.2"]).unwrap();
        let c1 = Change::new(ChangeKind::Create, vec![RRSetOp::create(a.clone())]);
        let c2 = Change::new(ChangeKind::Create, vec![RRSetOp::create(a.clone())]);
        let c3 = Change::new(
            ChangeKind::Update,
            vec![RRSetOp::update(a.clone(), b.clone())],
        );
        let c4 = Change::new(ChangeKind::Update, vec![RRSetOp::update(b, a)]);
        assert_eq!(c1.id, c2.id);
        assert_ne!(c1.id, c3.id);
        assert_ne!(c3.id, c4.id);
    }
}
