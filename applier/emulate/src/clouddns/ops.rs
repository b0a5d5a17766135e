//! The API calls: routing a request to one, and carrying it out on the state.
use super::Inner;
use super::change::{self, ChangeMeta};
use super::errors::ApiError;
use super::model::{DoneRule, Zone, page_token, read_page_token};
use super::values::{RR_TYPES, parse_name};
use crate::control::ControlPlane;
use http::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

/// The Cloud DNS v1 calls the emulator answers (each with its project).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    GetProject,
    CreateZone,
    ListZones,
    GetZone(String),
    DeleteZone(String),
    ListRRSets(String),
    CreateChange(String),
    ListChanges(String),
    GetChange(String, String),
    /// A method of Cloud DNS's API the emulator does not reproduce (its Google name):
    /// 501, so that a client never takes it for "zone gone".
    Unimplemented(&'static str),
}

/// The operation names fault rules use.
pub(crate) const FAULT_OPS: &[&str] = &[
    "change",
    "get_change",
    "list_changes",
    "list_rrsets",
    "zones",
];

/// `%XX` decoding of one path segment.
fn decode(seg: &str) -> String {
    let b = seg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(h) = seg.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(h, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Op {
    /// Routes `method path` to `(project, call)`.
    pub fn route(method: &Method, path: &str) -> Option<(String, Op)> {
        let rest = path.strip_prefix("/dns/v1/projects/")?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let segs: Vec<String> = rest.split('/').map(decode).collect();
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let (project, tail) = segs.split_first()?;
        if project.is_empty() {
            return None;
        }
        let op = match (method.clone(), tail) {
            (Method::GET, []) => Op::GetProject,
            (Method::POST, ["managedZones"]) => Op::CreateZone,
            (Method::GET, ["managedZones"]) => Op::ListZones,
            (Method::GET, ["managedZones", z]) => Op::GetZone(z.to_string()),
            (Method::DELETE, ["managedZones", z]) => Op::DeleteZone(z.to_string()),
            (Method::GET, ["managedZones", z, "rrsets"]) => Op::ListRRSets(z.to_string()),
            (Method::POST, ["managedZones", z, "changes"]) => Op::CreateChange(z.to_string()),
            (Method::GET, ["managedZones", z, "changes"]) => Op::ListChanges(z.to_string()),
            (Method::GET, ["managedZones", z, "changes", id]) => {
                Op::GetChange(z.to_string(), id.to_string())
            }
            (m, tail) => Op::Unimplemented(unimplemented(&m, tail)?),
        };
        Some((project.to_string(), op))
    }

    /// Google's method name (stats count by it).
    pub fn name(&self) -> &'static str {
        match self {
            Op::GetProject => "dns.projects.get",
            Op::CreateZone => "dns.managedZones.create",
            Op::ListZones => "dns.managedZones.list",
            Op::GetZone(_) => "dns.managedZones.get",
            Op::DeleteZone(_) => "dns.managedZones.delete",
            Op::ListRRSets(_) => "dns.resourceRecordSets.list",
            Op::CreateChange(_) => "dns.changes.create",
            Op::ListChanges(_) => "dns.changes.list",
            Op::GetChange(..) => "dns.changes.get",
            Op::Unimplemented(name) => name,
        }
    }

    /// The fault-rule operation name.
    pub fn fault_op(&self) -> &'static str {
        match self {
            Op::CreateChange(_) => "change",
            Op::GetChange(..) => "get_change",
            Op::ListChanges(_) => "list_changes",
            Op::ListRRSets(_) => "list_rrsets",
            _ => "zones",
        }
    }

    /// Writes count against the write quota (and its message).
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Op::CreateZone | Op::DeleteZone(_) | Op::CreateChange(_)
        )
    }

    /// The managed zone the call is on, if any.
    pub fn zone(&self) -> Option<&str> {
        match self {
            Op::GetZone(z)
            | Op::DeleteZone(z)
            | Op::ListRRSets(z)
            | Op::CreateChange(z)
            | Op::ListChanges(z)
            | Op::GetChange(z, _) => Some(z),
            _ => None,
        }
    }
}

/// The Google name of a project-scoped `dns/v1` method the emulator does not
/// reproduce (from the discovery document), or `None` for a path the API does not have
/// (a 404, as Google answers it).
fn unimplemented(method: &Method, tail: &[&str]) -> Option<&'static str> {
    // `…/managedZones/z:getIamPolicy` and its kin.
    if let ["managedZones", z] = tail
        && let Some((_, verb)) = z.split_once(':')
    {
        return match (method.clone(), verb) {
            (Method::POST, "getIamPolicy") => Some("dns.managedZones.getIamPolicy"),
            (Method::POST, "setIamPolicy") => Some("dns.managedZones.setIamPolicy"),
            (Method::POST, "testIamPermissions") => Some("dns.managedZones.testIamPermissions"),
            _ => None,
        };
    }
    let name = match (method.clone(), tail) {
        (Method::PATCH, ["managedZones", _]) => "dns.managedZones.patch",
        (Method::PUT, ["managedZones", _]) => "dns.managedZones.update",
        (Method::POST, ["managedZones", _, "rrsets"]) => "dns.resourceRecordSets.create",
        (Method::GET, ["managedZones", _, "rrsets", _, _]) => "dns.resourceRecordSets.get",
        (Method::PATCH, ["managedZones", _, "rrsets", _, _]) => "dns.resourceRecordSets.patch",
        (Method::DELETE, ["managedZones", _, "rrsets", _, _]) => "dns.resourceRecordSets.delete",
        (Method::GET, ["managedZones", _, "dnsKeys"]) => "dns.dnsKeys.list",
        (Method::GET, ["managedZones", _, "dnsKeys", _]) => "dns.dnsKeys.get",
        (Method::GET, ["managedZones", _, "operations"]) => "dns.managedZoneOperations.list",
        (Method::GET, ["managedZones", _, "operations", _]) => "dns.managedZoneOperations.get",
        (Method::GET, ["policies"]) => "dns.policies.list",
        (Method::POST, ["policies"]) => "dns.policies.create",
        (Method::GET, ["policies", _]) => "dns.policies.get",
        (Method::PATCH, ["policies", _]) => "dns.policies.patch",
        (Method::PUT, ["policies", _]) => "dns.policies.update",
        (Method::DELETE, ["policies", _]) => "dns.policies.delete",
        (Method::GET, ["responsePolicies"]) => "dns.responsePolicies.list",
        (Method::POST, ["responsePolicies"]) => "dns.responsePolicies.create",
        (Method::GET, ["responsePolicies", _]) => "dns.responsePolicies.get",
        (Method::PATCH, ["responsePolicies", _]) => "dns.responsePolicies.patch",
        (Method::PUT, ["responsePolicies", _]) => "dns.responsePolicies.update",
        (Method::DELETE, ["responsePolicies", _]) => "dns.responsePolicies.delete",
        (Method::GET, ["responsePolicies", _, "rules"]) => "dns.responsePolicyRules.list",
        (Method::POST, ["responsePolicies", _, "rules"]) => "dns.responsePolicyRules.create",
        (Method::GET, ["responsePolicies", _, "rules", _]) => "dns.responsePolicyRules.get",
        (Method::PATCH, ["responsePolicies", _, "rules", _]) => "dns.responsePolicyRules.patch",
        (Method::PUT, ["responsePolicies", _, "rules", _]) => "dns.responsePolicyRules.update",
        (Method::DELETE, ["responsePolicies", _, "rules", _]) => "dns.responsePolicyRules.delete",
        _ => return None,
    };
    Some(name)
}

/// What a call needs besides the state.
pub(crate) struct Ctx<'a> {
    pub project: &'a str,
    pub query: &'a [(String, String)],
    pub body: &'a [u8],
    /// Changes made by this call never turn `done`.
    pub pending_forever: bool,
}

impl Ctx<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `maxResults` capped at `cap` (the server's page size).
    fn max_results(&self, cap: usize) -> Result<usize, ApiError> {
        match self.param("maxResults") {
            None => Ok(cap),
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n.min(cap)),
                _ => Err(ApiError::invalid("parameters.maxResults", v)),
            },
        }
    }

    fn page_after(&self) -> Result<Option<String>, ApiError> {
        match self.param("pageToken").filter(|t| !t.is_empty()) {
            None => Ok(None),
            Some(t) => read_page_token(t)
                .map(Some)
                .ok_or_else(|| ApiError::invalid("parameters.pageToken", t)),
        }
    }

    fn json_body(&self) -> Result<Value, ApiError> {
        serde_json::from_slice(self.body).map_err(|e| ApiError::parse_error(&e.to_string()))
    }
}

/// Parses the query string (`a=b&c=d`, percent- and `+`-decoded).
pub(crate) fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(&k.replace('+', " ")), decode(&v.replace('+', " ")))
        })
        .collect()
}

/// One page of `items` (sorted by key) after `after`, and the next page's token.
fn page<T>(items: Vec<(String, T)>, after: Option<&str>, max: usize) -> (Vec<T>, Option<String>) {
    let rest: Vec<(String, T)> = items
        .into_iter()
        .filter(|(k, _)| after.is_none_or(|a| k.as_str() > a))
        .collect();
    let more = rest.len() > max;
    let mut out = Vec::new();
    let mut last = None;
    for (k, v) in rest.into_iter().take(max) {
        last = Some(k);
        out.push(v);
    }
    (
        out,
        if more {
            last.map(|l| page_token(&l))
        } else {
            None
        },
    )
}

fn with_token(mut v: Value, token: Option<String>) -> Value {
    if let Some(t) = token {
        v["nextPageToken"] = json!(t);
    }
    v
}

fn zone_name_ok(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

impl Inner {
    fn done_rule(&self) -> DoneRule {
        match self.opts.done_after {
            Some(d) => DoneRule::After(d),
            None => DoneRule::Polls(self.opts.pending_polls),
        }
    }

    /// Creates a zone in `project` (API, control API, seeds, tests).
    pub(crate) fn add_zone(
        &self,
        project: &str,
        name: &str,
        dns_name: &str,
        description: &str,
        visibility: &str,
    ) -> Result<Value, ApiError> {
        if !zone_name_ok(name) {
            return Err(ApiError::invalid("entity.managedZone.name", name));
        }
        let Some(dns) = parse_name(dns_name).filter(|n| n != ".") else {
            return Err(ApiError::invalid("entity.managedZone.dnsName", dns_name));
        };
        if !matches!(visibility, "public" | "private") {
            return Err(ApiError::invalid(
                "entity.managedZone.visibility",
                visibility,
            ));
        }
        let mut st = self.lock();
        if st
            .projects
            .get(project)
            .is_some_and(|p| p.contains_key(name))
        {
            return Err(ApiError::new(
                409,
                "alreadyExists",
                format!("The resource 'entity.managedZone' named '{name}' already exists"),
            ));
        }
        let id = st.new_zone_id();
        let zone = Zone::new(name, &dns, description, visibility, id);
        let v = zone.json();
        st.projects
            .entry(project.to_string())
            .or_default()
            .insert(name.to_string(), zone);
        Ok(v)
    }

    /// Carries out `op`; the answer's JSON.
    pub(crate) fn run(&self, op: &Op, ctx: &Ctx<'_>) -> Result<Value, ApiError> {
        let project = ctx.project;
        match op {
            Op::GetProject => {
                let l = &self.opts.limits;
                Ok(json!({
                    "kind": "dns#project",
                    "id": project,
                    "number": "123456789012",
                    "quota": {
                        "kind": "dns#quota",
                        "managedZones": 10000,
                        "rrsetsPerManagedZone": l.rrsets_per_zone,
                        "rrsetAdditionsPerChange": l.additions_per_change,
                        "rrsetDeletionsPerChange": l.deletions_per_change,
                        "totalRrdataSizePerChange": l.rrdata_bytes_per_change,
                        "resourceRecordsPerRrset": l.rrdatas_per_rrset,
                    }
                }))
            }
            Op::CreateZone => {
                let body = ctx.json_body()?;
                let s = |k: &str| body.get(k).and_then(Value::as_str);
                let name =
                    s("name").ok_or_else(|| ApiError::required("entity.managedZone.name"))?;
                let dns =
                    s("dnsName").ok_or_else(|| ApiError::required("entity.managedZone.dnsName"))?;
                let v = self.add_zone(
                    project,
                    name,
                    dns,
                    s("description").unwrap_or(""),
                    s("visibility").unwrap_or("public"),
                )?;
                self.count_commit();
                Ok(v)
            }
            Op::ListZones => {
                let max = ctx.max_results(self.opts.page_size)?;
                let after = ctx.page_after()?;
                let want = match ctx.param("dnsName") {
                    Some(d) => Some(
                        parse_name(d)
                            .or_else(|| parse_name(&format!("{d}.")))
                            .ok_or_else(|| ApiError::invalid("parameters.dnsName", d))?,
                    ),
                    None => None,
                };
                let st = self.lock();
                let items: Vec<(String, Value)> = st
                    .projects
                    .get(project)
                    .into_iter()
                    .flat_map(|p| p.values())
                    .filter(|z| want.as_ref().is_none_or(|d| &z.dns_name == d))
                    .map(|z| (z.name.clone(), z.json()))
                    .collect();
                let (zones, token) = page(items, after.as_deref(), max);
                Ok(with_token(
                    json!({"kind": "dns#managedZonesListResponse", "managedZones": zones}),
                    token,
                ))
            }
            Op::GetZone(z) => self
                .lock()
                .zone(project, z)
                .map(Zone::json)
                .ok_or_else(|| ApiError::no_such_zone(z)),
            Op::DeleteZone(z) => {
                let mut st = self.lock();
                let zone = st
                    .zone(project, z)
                    .ok_or_else(|| ApiError::no_such_zone(z))?;
                // Google refuses to delete a zone holding more than its apex SOA and NS.
                let apex_only = zone
                    .rrsets
                    .values()
                    .all(|r| r.name == zone.dns_name && matches!(r.rtype.as_str(), "SOA" | "NS"));
                if !apex_only {
                    return Err(ApiError::new(
                        400,
                        "containerNotEmpty",
                        format!(
                            "The resource named '{}' cannot be deleted because it is not empty",
                            zone.name
                        ),
                    ));
                }
                let name = zone.name.clone();
                if let Some(p) = st.projects.get_mut(project) {
                    p.remove(&name);
                }
                drop(st);
                self.count_commit();
                // 204 No Content, as Google answers a deletion.
                Ok(Value::Null)
            }
            Op::Unimplemented(name) => Err(ApiError::new(
                501,
                "notImplemented",
                format!(
                    "The Cloud DNS emulator does not implement {name}; see docs/emulators.md for the methods it serves"
                ),
            )),
            Op::ListRRSets(z) => {
                let max = ctx.max_results(self.opts.page_size)?;
                let after = ctx.page_after()?;
                let name = match ctx.param("name") {
                    Some(n) => {
                        Some(parse_name(n).ok_or_else(|| ApiError::invalid("parameters.name", n))?)
                    }
                    None => None,
                };
                let rtype = ctx.param("type");
                if let Some(t) = rtype {
                    if !RR_TYPES.contains(&t) {
                        return Err(ApiError::invalid("parameters.type", t));
                    }
                    if name.is_none() {
                        // Google documents `type` as usable only with `name`; the
                        // wording is the emulator's.
                        return Err(ApiError::new(
                            400,
                            "invalid",
                            "Invalid value for 'parameters.type': the type filter needs 'parameters.name'",
                        ));
                    }
                }
                let st = self.lock();
                let zone = st
                    .zone(project, z)
                    .ok_or_else(|| ApiError::no_such_zone(z))?;
                let items: Vec<(String, Value)> = zone
                    .rrsets
                    .values()
                    .filter(|r| name.as_ref().is_none_or(|n| &r.name == n))
                    .filter(|r| rtype.is_none_or(|t| r.rtype == t))
                    .map(|r| (format!("{}\t{}", r.name, r.rtype), r.json()))
                    .collect();
                let (rrsets, token) = page(items, after.as_deref(), max);
                Ok(with_token(
                    json!({"kind": "dns#resourceRecordSetsListResponse", "rrsets": rrsets}),
                    token,
                ))
            }
            Op::CreateChange(z) => {
                let body = ctx.json_body()?;
                let mut st = self.lock();
                let zone = st
                    .zone_mut(project, z)
                    .ok_or_else(|| ApiError::no_such_zone(z))?;
                let rec = change::apply(
                    zone,
                    &body,
                    &self.opts.limits,
                    ChangeMeta {
                        pending_forever: ctx.pending_forever,
                        client_operation_id: ctx.param("clientOperationId").map(str::to_string),
                    },
                )?;
                drop(st);
                self.count_commit();
                Ok(rec.json(false))
            }
            Op::ListChanges(z) => {
                if let Some(s) = ctx.param("sortBy")
                    && s != "changeSequence"
                {
                    return Err(ApiError::invalid("parameters.sortBy", s));
                }
                let descending = match ctx.param("sortOrder") {
                    None | Some("ascending") => false,
                    Some("descending") => true,
                    Some(o) => return Err(ApiError::invalid("parameters.sortOrder", o)),
                };
                let max = ctx.max_results(self.opts.page_size)?;
                let after = ctx.page_after()?;
                let rule = self.done_rule();
                let now = Instant::now();
                let st = self.lock();
                let zone = st
                    .zone(project, z)
                    .ok_or_else(|| ApiError::no_such_zone(z))?;
                let mut changes: Vec<&super::model::ChangeRec> = zone.changes.iter().collect();
                if descending {
                    changes.reverse();
                }
                // Keys that sort in the listing's order: the position, zero-padded.
                let items: Vec<(String, Value)> = changes
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (format!("{i:020}"), c.json(c.done(rule, now))))
                    .collect();
                let (changes, token) = page(items, after.as_deref(), max);
                Ok(with_token(
                    json!({"kind": "dns#changesListResponse", "changes": changes}),
                    token,
                ))
            }
            Op::GetChange(z, id) => {
                let rule = self.done_rule();
                let mut st = self.lock();
                let zone = st
                    .zone_mut(project, z)
                    .ok_or_else(|| ApiError::no_such_zone(z))?;
                let c = zone
                    .changes
                    .iter_mut()
                    .find(|c| c.id.to_string() == *id)
                    .ok_or_else(|| ApiError::no_such_change(id))?;
                if !c.done(rule, Instant::now()) {
                    c.polls += 1;
                }
                let done = c.done(rule, Instant::now());
                Ok(c.json(done))
            }
        }
    }
}
