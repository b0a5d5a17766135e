//! The objects the Kubernetes source has accepted, keep-last-good per object: pure and
//! synchronous (no API, no runtime), so that every rule of "never delete on doubt" is
//! tested without a server.
//!
//! An object's text is its JSON (a JSON object is valid YAML), parsed by the shared
//! manifest parser; locations then name the object and the endpoint
//! (`default/web spec.endpoints[2]`) instead of a line of a JSON text nobody wrote.
use super::kinds::Kind;
use crate::source::dnsendpoint::{Accepted, ParsedFile, RejectedWhat, parse_file_for};
use crate::source::file::merge::merge;
use crate::source::{Snapshot, SourceError};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The `source` written into every origin and error of entries read from the API.
pub const SOURCE_KIND: &str = "kubernetes";
/// [`SOURCE_KIND`] in the one allocation every entry of the source points at (each
/// object's entries used to allocate their own).
static SHARED_SOURCE_KIND: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| SOURCE_KIND.into());

/// The most errors one object reports; the rest are counted (as the file source does
/// per file).
const MAX_ERRORS_PER_OBJECT: usize = 100;

/// `namespace/name`: how an object is named in locations and keyed here.
pub type ObjectName = String;

/// What the source holds of one object.
#[derive(Debug, Clone, Default)]
pub struct ObjectState {
    /// `metadata.generation` of the version last seen (accepted or not).
    pub generation: Option<i64>,
    /// What is in force for it: the last accepted endpoints, plus the last accepted
    /// versions of what its latest version broke.
    pub(crate) accepted: Vec<Accepted>,
    /// The latest version's problems (with what each keeps).
    pub errors: Vec<SourceError>,
}

impl ObjectState {
    /// How many records the object has in force.
    pub fn records(&self) -> usize {
        self.accepted.len()
    }
}

/// Every object of one kind the source holds, by `namespace/name`.
#[derive(Debug, Default)]
pub struct Objects {
    /// What the objects are: DNSEndpoints are read as manifests; any other kind is
    /// translated to a DNSEndpoint spec first ([`super::kinds`]) and named by its kind.
    kind: Kind,
    objects: BTreeMap<ObjectName, ObjectState>,
    /// The configured zones each endpoint is checked against ([`crate::source::zones`]).
    zones: Option<crate::source::zones::ZoneCheck>,
}

impl Objects {
    /// The objects of `kind`.
    pub fn of_kind(kind: Kind) -> Objects {
        Objects {
            kind,
            ..Objects::default()
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Checks every endpoint against `zones`: an object with one in no zone (or that
    /// its zone refuses) keeps its last accepted version.
    pub fn set_zones(&mut self, zones: crate::source::zones::ZoneCheck) {
        self.zones = Some(zones);
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&ObjectState> {
        self.objects.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ObjectName, &ObjectState)> {
        self.objects.iter()
    }

    /// Takes a new version of `name` (its JSON `text`, at `generation`): its valid
    /// endpoints replace the object's; what is broken keeps its last accepted version.
    pub fn apply(&mut self, name: &str, generation: Option<i64>, text: &str) {
        let old = self.objects.remove(name).unwrap_or_default();
        let state = accept(self.kind, name, generation, text, old, self.zones.as_ref());
        self.objects.insert(name.to_string(), state);
    }

    /// Keeps what `name` has in force and shows `errors` instead of its last ones: a
    /// version that cannot be read at all (an annotation), or a load balancer that lost
    /// its address within its grace.
    pub fn hold(&mut self, name: &str, generation: Option<i64>, errors: Vec<SourceError>) {
        let state = self.objects.entry(name.to_string()).or_default();
        state.generation = generation;
        state.errors = errors;
    }

    /// Withdraws an object that was deleted: the one way its records go.
    pub fn delete(&mut self, name: &str) -> bool {
        self.objects.remove(name).is_some()
    }

    /// A complete list of `scope` (a namespace; `None`: all): `listed` replaces the
    /// scope's objects (each kept-last-good against its previous version); objects of
    /// the scope absent from it were deleted.
    pub fn replace_scope<T: AsRef<str>>(
        &mut self,
        scope: Option<&str>,
        listed: Vec<(ObjectName, Option<i64>, T)>,
    ) {
        let in_scope =
            |name: &str| scope.is_none_or(|ns| name.split_once('/').is_some_and(|(n, _)| n == ns));
        let (mut old, kept): (BTreeMap<_, _>, BTreeMap<_, _>) = std::mem::take(&mut self.objects)
            .into_iter()
            .partition(|(name, _)| in_scope(name));
        self.objects = kept;
        for (name, generation, text) in listed {
            let before = old.remove(&name).unwrap_or_default();
            let state = accept(
                self.kind,
                &name,
                generation,
                text.as_ref(),
                before,
                self.zones.as_ref(),
            );
            self.objects.insert(name, state);
        }
        self.compact();
    }

    /// Rebuilds the map of objects from its sorted run, after a list filled it in key
    /// order (which leaves a B-tree's nodes half empty).
    pub fn compact(&mut self) {
        compact(&mut self.objects);
    }

    /// Everything in force, in object order, with `unready` saying why the source is
    /// not ready (empty: ready).
    pub fn snapshot(&self, unready: Vec<String>) -> Snapshot {
        let mut snapshot = Snapshot {
            unready,
            ..Snapshot::default()
        };
        for state in self.objects.values() {
            snapshot
                .entries
                .extend(state.accepted.iter().map(|a| a.entry.clone()));
            snapshot.errors.extend(state.errors.iter().cloned());
        }
        snapshot
    }

    /// How many records are in force.
    pub fn records(&self) -> usize {
        self.objects.values().map(|o| o.accepted.len()).sum()
    }
}

/// `map` rebuilt in one go from its sorted entries: a B-tree filled in key order (as a
/// list fills it) has its nodes half empty, one built from a sorted run full.
pub fn compact<K: Ord, V>(map: &mut BTreeMap<K, V>) {
    *map = std::mem::take(map).into_iter().collect();
}

/// `DNSEndpoint namespace/name`, as the parser names a resource (and ownership records
/// carry it).
pub fn resource_of(name: &str) -> String {
    format!("DNSEndpoint {name}")
}

/// The new state of object `name` from its `text`, given its previous state.
fn accept(
    kind: Kind,
    name: &str,
    generation: Option<i64>,
    text: &str,
    old: ObjectState,
    zones: Option<&crate::source::zones::ZoneCheck>,
) -> ObjectState {
    let source_kind: Arc<str> = SHARED_SOURCE_KIND.clone();
    // A translated object's records name it (`Service default/web`), not the
    // DNSEndpoint spec it was turned into; one allocation for all of them.
    let resource: Option<Arc<str>> =
        (kind != Kind::DnsEndpoint).then(|| format!("{kind} {name}").into());
    let mut parsed: ParsedFile = parse_file_for(name, text, resource.as_ref());
    if let (Some(zones), true) = (zones, parsed.fatal.is_empty()) {
        zones.check_parsed(&mut parsed);
    }
    let kept_note = |n: usize| match n {
        0 => String::new(),
        n => format!("; keeping this object's {n} last accepted record(s)"),
    };
    let accepted = if !parsed.fatal.is_empty() {
        let note = kept_note(old.accepted.len());
        for &i in &parsed.fatal {
            parsed.errors[i].message.push_str(&note);
        }
        old.accepted
    } else {
        let before = (!parsed.rejected.is_empty()).then_some(&old.accepted);
        merge(&mut parsed, before)
    };
    // Where each error stands: the endpoint it is about, else the object.
    let mut places = vec![None; parsed.errors.len()];
    for rejected in &parsed.rejected {
        if let RejectedWhat::Endpoint { slot, .. } = &rejected.what {
            for place in &mut places[rejected.errors.clone()] {
                *place = Some(slot.index);
            }
        }
    }
    let mut errors: Vec<SourceError> = parsed
        .errors
        .into_iter()
        .zip(places)
        .map(|(mut e, index)| {
            e.source = SOURCE_KIND.into();
            e.location = location(kind, name, index);
            e
        })
        .collect();
    if errors.len() > MAX_ERRORS_PER_OBJECT {
        let more = errors.len() - MAX_ERRORS_PER_OBJECT;
        errors.truncate(MAX_ERRORS_PER_OBJECT);
        errors.push(SourceError {
            source: SOURCE_KIND.into(),
            location: name.to_string(),
            record: String::new(),
            message: format!("{more} more error(s) in this object not shown"),
        });
    }
    let mut accepted: Vec<Accepted> = accepted
        .into_iter()
        .map(|mut a| {
            // The parser gave the entry its resource (the object's, for a translated
            // one); a translated object's location says the same, in the same allocation.
            let origin = &mut a.entry.origin;
            origin.source = source_kind.clone();
            origin.location = match kind {
                Kind::DnsEndpoint => location(kind, name, Some(a.slot.index)).into(),
                _ => origin.resource.clone(),
            };
            a
        })
        .collect();
    // Held for as long as the object is: not with the parser's spare capacity (an
    // object of one endpoint would hold room for four).
    accepted.shrink_to_fit();
    ObjectState {
        generation,
        accepted,
        errors,
    }
}

/// `ns/name spec.endpoints[i]`, or `ns/name`; `Service ns/name` for a translated
/// object (its endpoints are not written anywhere a user could find an index).
fn location(kind: Kind, name: &str, index: Option<usize>) -> String {
    match (kind, index) {
        (Kind::DnsEndpoint, Some(i)) => format!("{name} spec.endpoints[{i}]"),
        (Kind::DnsEndpoint, None) => name.to_string(),
        (kind, _) => format!("{kind} {name}"),
    }
}
