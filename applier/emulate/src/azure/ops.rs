//! Carrying out the ARM calls on the state: zones (get, list, create, update,
//! delete) and record sets (get, list by type or all with `$top` and `nextLink`,
//! create or replace, update, delete), with the ETag conditions (`If-Match`,
//! `If-None-Match`) and Azure DNS's limits.
use super::errors::ArmError;
use super::model::{
    Data, Kind, RecordSet, Rtype, State, Zone, ZoneKey, name_key, new_etag, zone_key,
};
use super::options::AzureOptions;
use super::route::{Op, SetRef, ZoneRef};
use super::wire::{self, set_json, zone_json};
use http::HeaderMap;
use serde_json::{Value, json};
use std::collections::HashMap;

/// What a call needs besides the state.
pub(crate) struct Ctx<'a> {
    pub query: &'a HashMap<String, String>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// `http://host:port` as the client addressed it, for `nextLink`.
    pub base: String,
    pub path: &'a str,
    pub opts: &'a AzureOptions,
}

/// A successful answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: Option<Value>,
    /// Whether state changed.
    pub committed: bool,
}

fn ok(status: u16, body: Value, committed: bool) -> Result<Reply, ArmError> {
    Ok(Reply {
        status,
        body: Some(body),
        committed,
    })
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn unquote(s: &str) -> &str {
    let s = s.strip_prefix("W/").unwrap_or(s);
    s.trim_matches('"')
}

/// Checks `If-Match` / `If-None-Match` against the resource's ETag (`None`: it does
/// not exist). `what` names the resource in the message.
pub(crate) fn precondition(
    h: &HeaderMap,
    current: Option<&str>,
    what: &str,
) -> Result<(), ArmError> {
    if let Some(m) = header(h, "if-match") {
        match current {
            None => {
                return Err(ArmError::precondition(format!(
                    "The condition '{m}' in the If-Match header was not satisfied: {what} does not exist."
                )));
            }
            Some(cur) => {
                if m != "*" && !m.split(',').any(|e| unquote(e.trim()) == cur) {
                    return Err(ArmError::precondition(format!(
                        "The condition '{m}' in the If-Match header was not satisfied: {what} has been changed since it was read."
                    )));
                }
            }
        }
    }
    if let Some(n) = header(h, "if-none-match")
        && let Some(cur) = current
        && (n == "*" || n.split(',').any(|e| unquote(e.trim()) == cur))
    {
        return Err(ArmError::precondition(format!(
            "The condition '{n}' in the If-None-Match header was not satisfied: {what} already exists."
        )));
    }
    Ok(())
}

fn max_sets(opts: &AzureOptions, kind: Kind) -> usize {
    match kind {
        Kind::Public => opts.max_record_sets,
        Kind::Private => opts.max_private_record_sets,
    }
}

fn key(z: &ZoneRef) -> ZoneKey {
    zone_key(z.kind, &z.sub, &z.rg, &z.zone)
}

/// The zone of a nested call, or ARM's 404s.
fn parent<'s>(st: &'s mut State, z: &ZoneRef) -> Result<&'s mut Zone, ArmError> {
    if !st.has_group(&z.sub, &z.rg) {
        return Err(ArmError::no_resource_group(&z.rg));
    }
    st.zones
        .get_mut(&key(z))
        .ok_or_else(|| ArmError::no_parent(z.kind.segment(), &z.zone))
}

fn page_size(cx: &Ctx<'_>) -> Result<Option<usize>, ArmError> {
    match cx.query.get("$top") {
        None => Ok(None),
        Some(t) => t
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .map(Some)
            .ok_or_else(|| {
                ArmError::bad_request(format!(
                    "The value '{t}' of $top is invalid: it must be a positive integer."
                ))
            }),
    }
}

/// One page of `items` (sorted by their token), from `$skipToken`, with `nextLink`.
fn page(cx: &Ctx<'_>, items: Vec<(String, Value)>) -> Result<Value, ArmError> {
    let top = page_size(cx)?;
    let size = top.unwrap_or(cx.opts.page_size);
    let from = match cx.query.get("$skipToken") {
        None => String::new(),
        Some(t) => hex::decode(t)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ArmError::bad_request(format!("The $skipToken '{t}' is invalid.")))?,
    };
    let mut rest = items.into_iter().filter(|(k, _)| *k >= from);
    let value: Vec<Value> = rest.by_ref().take(size).map(|(_, v)| v).collect();
    let mut body = json!({ "value": value });
    if let Some((next, _)) = rest.next() {
        let mut q = vec![format!(
            "api-version={}",
            cx.query.get("api-version").cloned().unwrap_or_default()
        )];
        if let Some(t) = top {
            q.push(format!("$top={t}"));
        }
        if let Some(s) = cx.query.get("$recordsetnamesuffix") {
            q.push(format!("$recordsetnamesuffix={s}"));
        }
        q.push(format!("$skipToken={}", hex::encode(next)));
        body["nextLink"] = json!(format!("{}{}?{}", cx.base, cx.path, q.join("&")));
    }
    Ok(body)
}

/// Runs one call (not the token endpoint) on the state.
pub(crate) fn run(st: &mut State, op: &Op, cx: &Ctx<'_>) -> Result<Reply, ArmError> {
    match op {
        Op::Token { .. } => Err(ArmError::server(500)),
        Op::ListZones { kind, sub, rg } => {
            if let Some(rg) = rg
                && !st.has_group(sub, rg)
            {
                return Err(ArmError::no_resource_group(rg));
            }
            let items = st
                .zones
                .iter()
                .filter(|((k, s, g, _), _)| {
                    k == kind
                        && s.eq_ignore_ascii_case(sub)
                        && rg.as_ref().is_none_or(|rg| g.eq_ignore_ascii_case(rg))
                })
                .map(|((_, s, g, n), z)| {
                    (
                        format!("{s}/{g}/{n}"),
                        zone_json(z, max_sets(cx.opts, *kind), cx.opts.max_records_per_set),
                    )
                })
                .collect();
            ok(200, page(cx, items)?, false)
        }
        Op::GetZone(z) => {
            if !st.has_group(&z.sub, &z.rg) {
                return Err(ArmError::no_resource_group(&z.rg));
            }
            let zone = st
                .zones
                .get(&key(z))
                .ok_or_else(|| ArmError::no_zone(z.kind.segment(), &z.zone, &z.rg))?;
            ok(
                200,
                zone_json(zone, max_sets(cx.opts, z.kind), cx.opts.max_records_per_set),
                false,
            )
        }
        Op::PutZone(z) | Op::PatchZone(z) => put_zone(st, z, matches!(op, Op::PatchZone(_)), cx),
        Op::DeleteZone(z) => {
            if !st.has_group(&z.sub, &z.rg) {
                return Err(ArmError::no_resource_group(&z.rg));
            }
            let current = st.zones.get(&key(z)).map(|z| z.etag.clone());
            precondition(
                cx.headers,
                current.as_deref(),
                &format!("zone '{}'", z.zone),
            )?;
            match st.zones.remove(&key(z)) {
                Some(_) => ok(200, Value::Null, true).map(|mut r| {
                    r.body = None;
                    r
                }),
                None => Ok(Reply {
                    status: 204,
                    body: None,
                    committed: false,
                }),
            }
        }
        Op::ListSets { zone, rtype } => {
            let z = parent(st, zone)?;
            let suffix = cx
                .query
                .get("$recordsetnamesuffix")
                .map(|s| name_key(s.trim_start_matches('.')));
            let items = z
                .sets
                .iter()
                .filter(|((_, t), _)| rtype.is_none_or(|r| r == *t))
                .filter(|((n, _), _)| match &suffix {
                    None => true,
                    Some(s) if s.is_empty() || s == "@" => true,
                    Some(s) => n == s || n.ends_with(&format!(".{s}")),
                })
                .map(|((n, t), s)| (format!("{n}\u{1}{}", t.as_str()), set_json(z, s)))
                .collect();
            ok(200, page(cx, items)?, false)
        }
        Op::GetSet(s) => {
            let (sub, rg) = (s.zone.sub.clone(), s.zone.rg.clone());
            let z = parent(st, &s.zone)?;
            let set = z
                .get(&s.name, s.rtype)
                .ok_or_else(|| ArmError::no_record_set(&s.name, &rg, &sub))?;
            ok(200, set_json(z, set), false)
        }
        Op::PutSet(s) | Op::PatchSet(s) => write_set(st, s, matches!(op, Op::PatchSet(_)), cx),
        Op::DeleteSet(s) => {
            let z = parent(st, &s.zone)?;
            if s.name == "@" && matches!(s.rtype, Rtype::Soa | Rtype::Ns) {
                return Err(ArmError::bad_request(format!(
                    "The {} record set at the zone apex cannot be deleted.",
                    s.rtype.as_str()
                )));
            }
            let current = z.get(&s.name, s.rtype).map(|x| x.etag.clone());
            precondition(cx.headers, current.as_deref(), &describe(s))?;
            match z.sets.remove(&(name_key(&s.name), s.rtype)) {
                Some(_) => Ok(Reply {
                    status: 200,
                    body: None,
                    committed: true,
                }),
                None => Ok(Reply {
                    status: 204,
                    body: None,
                    committed: false,
                }),
            }
        }
    }
}

fn describe(s: &SetRef) -> String {
    format!("the record set '{}' of type {}", s.name, s.rtype.as_str())
}

fn put_zone(st: &mut State, z: &ZoneRef, patch: bool, cx: &Ctx<'_>) -> Result<Reply, ArmError> {
    if !st.has_group(&z.sub, &z.rg) {
        return Err(ArmError::no_resource_group(&z.rg));
    }
    let body: Value = serde_json::from_slice(cx.body)
        .map_err(|e| ArmError::bad_request(format!("The request body is not valid JSON: {e}")))?;
    let current = st.zones.get(&key(z)).map(|z| z.etag.clone());
    precondition(
        cx.headers,
        current.as_deref(),
        &format!("zone '{}'", z.zone),
    )?;
    if patch && current.is_none() {
        return Err(ArmError::no_zone(z.kind.segment(), &z.zone, &z.rg));
    }
    if !patch && body.get("location").and_then(Value::as_str).is_none() {
        return Err(ArmError::new(
            400,
            "LocationRequired",
            "The location property is required for this definition.",
        ));
    }
    let tags = match body.get("tags") {
        Some(Value::Object(m)) => Some(
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect(),
        ),
        _ => None,
    };
    let created = current.is_none();
    let zone = st
        .zones
        .entry(key(z))
        .or_insert_with(|| Zone::new(z.kind, &z.sub, &z.rg, &z.zone));
    if let Some(t) = tags {
        zone.tags = t;
    }
    if !created {
        zone.etag = new_etag();
    }
    let body = zone_json(zone, max_sets(cx.opts, z.kind), cx.opts.max_records_per_set);
    ok(if created { 201 } else { 200 }, body, true)
}

fn write_set(st: &mut State, s: &SetRef, patch: bool, cx: &Ctx<'_>) -> Result<Reply, ArmError> {
    let (sub, rg) = (s.zone.sub.clone(), s.zone.rg.clone());
    let kind = s.zone.kind;
    let z = parent(st, &s.zone)?;
    let input = wire::parse_set(kind, s.rtype, cx.body)?;
    if s.rtype == Rtype::Soa && s.name != "@" {
        return Err(ArmError::bad_request(
            "SOA record sets can only be written at the zone apex ('@').",
        ));
    }
    if s.name.is_empty() || s.name.ends_with('.') || s.name.len() > 253 {
        return Err(ArmError::bad_request(format!(
            "The record set name '{}' is invalid: give it relative to the zone, without a trailing dot ('@' for the apex).",
            s.name
        )));
    }
    let existing = z.get(&s.name, s.rtype).cloned();
    precondition(
        cx.headers,
        existing.as_ref().map(|e| e.etag.as_str()),
        &describe(s),
    )?;
    let mut set = match (&existing, patch) {
        (None, true) => return Err(ArmError::no_record_set(&s.name, &rg, &sub)),
        (Some(e), true) => e.clone(),
        (_, false) => {
            let ttl = input.ttl.ok_or_else(|| {
                ArmError::bad_request("The TTL property of the record set must be specified.")
            })?;
            RecordSet {
                name: existing
                    .as_ref()
                    .map_or_else(|| s.name.clone(), |e| e.name.clone()),
                rtype: s.rtype,
                ttl,
                metadata: Default::default(),
                data: Data::empty(s.rtype),
                etag: String::new(),
                target_resource: None,
            }
        }
    };
    if let Some(ttl) = input.ttl {
        set.ttl = ttl;
    }
    if let Some(m) = input.metadata {
        set.metadata = m;
    }
    if !patch || input.target_resource.is_some() {
        set.target_resource = input.target_resource;
    }
    if let Some(d) = input.data {
        if let (Data::Soa(Some(new)), Some(Data::Soa(Some(old)))) =
            (&d, existing.as_ref().map(|e| &e.data))
            && !new.host.is_empty()
            && !new.host.eq_ignore_ascii_case(&old.host)
        {
            return Err(ArmError::bad_request(
                "The host of the zone's SOA record cannot be changed.",
            ));
        }
        set.data = match (d, existing.as_ref().map(|e| &e.data)) {
            (Data::Soa(Some(mut new)), Some(Data::Soa(Some(old)))) => {
                new.host = old.host.clone();
                Data::Soa(Some(new))
            }
            (d, _) => d,
        };
    } else if !patch && s.rtype == Rtype::Soa {
        set.data = existing
            .as_ref()
            .map_or(Data::Soa(None), |e| e.data.clone());
    }
    let limit = match s.rtype {
        Rtype::Txt => cx.opts.max_txt_records_per_set,
        _ => cx.opts.max_records_per_set,
    };
    if set.data.len() > limit {
        return Err(ArmError::bad_request(format!(
            "The record set '{}' of type {} has {} records; the limit is {limit} records per record set.",
            s.name,
            s.rtype.as_str(),
            set.data.len()
        )));
    }
    if set.target_resource.is_some() && set.data.len() > 0 {
        return Err(ArmError::bad_request(
            "A record set that is an alias (targetResource) cannot also hold records.",
        ));
    }
    if existing.is_none() {
        z.check_cname(&s.name, s.rtype)?;
        let max = max_sets(cx.opts, kind);
        if z.sets.len() >= max {
            return Err(ArmError::new(
                400,
                "QuotaExceeded",
                format!(
                    "The zone '{}' already holds the most record sets allowed ({max}); the record set '{}' of type {} cannot be created.",
                    z.name,
                    s.name,
                    s.rtype.as_str()
                ),
            ));
        }
    }
    set.etag = new_etag();
    let body = set_json(z, &set);
    z.insert(set);
    ok(if existing.is_none() { 201 } else { 200 }, body, true)
}
