//! What a read of a zone found, grouped as dnsplane RRSets with the Cloudflare records
//! behind each, and the one atomic batch built from it for a batch of ops (records
//! patched in place, so dashboard settings survive).
use super::*;
use dnsplane_common::routing::cloudflare::PROXIED;

/// A zone's records at the names read, grouped as dnsplane RRSets.
#[derive(Default)]
pub(super) struct Read {
    pub(super) zone: ZoneRead,
    pub(super) records: BTreeMap<RecordKey, Vec<WireRecord>>,
}

impl Read {
    pub(super) fn add(&mut self, zone: &Name, r: WireRecord, names: Option<&BTreeSet<Name>>) {
        let Ok(name) = Name::parse(&format!("{}.", api_name(&r.name))) else {
            tracing::warn!(zone = %zone, record.name = %r.name, "Skipped a Cloudflare record whose name dnsplane cannot represent.");
            return;
        };
        if names.is_some_and(|ns| !ns.contains(&name)) || !name.is_within(zone) {
            return;
        }
        // Types dnsplane does not model (URI, LOC, CERT, …) are neither listed nor written.
        let Ok(rtype) = RecordType::parse(&r.rtype) else {
            return;
        };
        self.zone
            .types
            .entry(name.clone())
            .or_default()
            .insert(rtype);
        self.records
            .entry(RecordKey::new(zone.clone(), name, rtype))
            .or_default()
            .push(r);
    }

    /// Turns the grouped records into RRSets (or opaque keys).
    pub(super) fn finish(mut self) -> Read {
        for (key, recs) in &self.records {
            let values: Option<Vec<String>> = recs
                .iter()
                .map(|r| wire::record_value(key.rtype, r))
                .collect();
            let (proxied, ttl) = proxy::read(key.rtype, recs);
            let props: &[(&str, &str)] = if proxied { &[(PROXIED, "true")] } else { &[] };
            match values.map(|v| RRSet::with_properties(key.clone(), ttl, &v, props)) {
                Some(Ok(set)) => {
                    self.zone.rrsets.insert(key.clone(), set);
                }
                other => {
                    let why = match other {
                        Some(Err(e)) => e.to_string(),
                        _ => "a record's fields make no value".into(),
                    };
                    tracing::warn!(record = %key, error = %why, "A Cloudflare record set dnsplane cannot represent; it is left alone.");
                    self.zone.opaque.insert(key.clone());
                }
            }
        }
        self
    }
}

/// The canonical dnsplane value of a record, if it has one.
fn canonical(rtype: RecordType, r: &WireRecord) -> Option<String> {
    canonicalize(rtype, &wire::record_value(rtype, r)?).ok()
}

/// Merges the fields of `extra` into the object `base`.
fn merged(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
    base
}

/// Adds to a patch of record `r` the settings `after` changes: `proxied` when its
/// status changes, `ttl` when it differs (a proxied record's is 1, automatic; one that
/// stays proxied is left at it). Comments and tags are never touched.
fn settings(patch: &mut Value, after: &RRSet, r: &WireRecord) {
    let proxied = proxy::target(after, r);
    if proxied != (r.proxied == Some(true)) {
        patch["proxied"] = json!(proxied);
    }
    let ttl = if proxied { 1 } else { after.ttl };
    if ttl != r.ttl {
        patch["ttl"] = json!(ttl);
    } else if let Some(p) = patch.as_object_mut() {
        p.remove("ttl");
    }
}

/// The batch that carries `ops` out on the records `read` found (preconditions
/// already checked against it).
pub(super) fn build_batch(ops: &[RRSetOp], read: &Read) -> Batch {
    let mut batch = Batch::default();
    for op in ops.iter().filter(|op| !op.is_assert()) {
        let current: &[WireRecord] = read.records.get(&op.key).map_or(&[], Vec::as_slice);
        let Some(after) = &op.after else {
            batch
                .deletes
                .extend(current.iter().map(|r| json!({ "id": r.id })));
            continue;
        };
        let want: BTreeSet<&str> = after.values().collect();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut kept = Vec::new();
        let mut removed = Vec::new();
        for r in current {
            match canonical(op.key.rtype, r) {
                Some(v) if want.contains(v.as_str()) && seen.insert(v.clone()) => kept.push(r),
                _ => removed.push(r),
            }
        }
        let added: Vec<&str> = after.values().filter(|v| !seen.contains(*v)).collect();
        for r in kept {
            let mut patch = json!({ "id": r.id });
            settings(&mut patch, after, r);
            if patch.as_object().is_some_and(|p| p.len() > 1) {
                batch.patches.push(patch);
            }
        }
        let pairs = removed.len().min(added.len());
        for (r, v) in removed.iter().zip(&added) {
            let mut patch = json!({ "id": r.id, "ttl": after.ttl });
            settings(&mut patch, after, r);
            batch
                .patches
                .push(merged(patch, wire::value_fields(op.key.rtype, v)));
        }
        batch
            .deletes
            .extend(removed[pairs..].iter().map(|r| json!({ "id": r.id })));
        // New values are proxied as asked, or (nothing asked) like the set.
        let proxied =
            proxy::wanted(after).unwrap_or_else(|| current.iter().any(|r| r.proxied == Some(true)));
        for v in &added[pairs..] {
            let mut post = json!({
                "name": api_name(op.key.name.as_str()),
                "type": op.key.rtype.as_str(),
                "ttl": if proxied { 1 } else { after.ttl },
            });
            if proxied {
                post["proxied"] = json!(true);
            } else if proxy::wanted(after).is_some() {
                post["proxied"] = json!(false);
            }
            batch
                .posts
                .push(merged(post, wire::value_fields(op.key.rtype, v)));
        }
    }
    batch
}
