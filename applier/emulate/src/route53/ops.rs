//! The API calls: routing a request to one, and carrying it out on the state.
use super::batch;
use super::errors::ApiError;
use super::model::{Zone, bare_change_id, bare_zone_id};
use super::names::{parse_name, sort_key};
use super::sigv4::decode_component;
use super::values::RR_TYPES;
use super::wire::{self, Xml};
use super::{Inner, model::RrKey};
use crate::control::ControlPlane;
use http::Method;
use tokio::time::Instant;

/// The Route 53 calls the emulator answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    CreateHostedZone,
    ListHostedZones,
    ListHostedZonesByName,
    GetHostedZoneCount,
    GetHostedZone(String),
    DeleteHostedZone(String),
    ChangeResourceRecordSets(String),
    ListResourceRecordSets(String),
    GetChange(String),
}

/// The operation names fault rules use.
pub(crate) const FAULT_OPS: &[&str] = &["change", "list_rrsets", "get_change", "zones"];

impl Op {
    /// Routes `method path` (the path as sent, percent-encoded).
    pub fn route(method: &Method, raw_path: &str) -> Option<Op> {
        let rest = raw_path.strip_prefix("/2013-04-01/")?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let segs: Vec<String> = rest
            .split('/')
            .map(|s| decode_component(s, false))
            .collect();
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let m = method.clone();
        Some(match (m, segs.as_slice()) {
            (Method::POST, ["hostedzone"]) => Op::CreateHostedZone,
            (Method::GET, ["hostedzone"]) => Op::ListHostedZones,
            (Method::GET, ["hostedzonesbyname"]) => Op::ListHostedZonesByName,
            (Method::GET, ["hostedzonecount"]) => Op::GetHostedZoneCount,
            (Method::GET, ["hostedzone", id]) if !id.is_empty() => {
                Op::GetHostedZone(bare_zone_id(id).to_string())
            }
            (Method::DELETE, ["hostedzone", id]) if !id.is_empty() => {
                Op::DeleteHostedZone(bare_zone_id(id).to_string())
            }
            (Method::POST, ["hostedzone", id, "rrset"]) if !id.is_empty() => {
                Op::ChangeResourceRecordSets(bare_zone_id(id).to_string())
            }
            (Method::GET, ["hostedzone", id, "rrset"]) if !id.is_empty() => {
                Op::ListResourceRecordSets(bare_zone_id(id).to_string())
            }
            (Method::GET, ["change", id]) if !id.is_empty() => {
                Op::GetChange(bare_change_id(id).to_string())
            }
            _ => return None,
        })
    }

    /// AWS's name of the call (stats count by it).
    pub fn name(&self) -> &'static str {
        match self {
            Op::CreateHostedZone => "CreateHostedZone",
            Op::ListHostedZones => "ListHostedZones",
            Op::ListHostedZonesByName => "ListHostedZonesByName",
            Op::GetHostedZoneCount => "GetHostedZoneCount",
            Op::GetHostedZone(_) => "GetHostedZone",
            Op::DeleteHostedZone(_) => "DeleteHostedZone",
            Op::ChangeResourceRecordSets(_) => "ChangeResourceRecordSets",
            Op::ListResourceRecordSets(_) => "ListResourceRecordSets",
            Op::GetChange(_) => "GetChange",
        }
    }

    /// The fault-rule operation name.
    pub fn fault_op(&self) -> &'static str {
        match self {
            Op::ChangeResourceRecordSets(_) => "change",
            Op::ListResourceRecordSets(_) => "list_rrsets",
            Op::GetChange(_) => "get_change",
            _ => "zones",
        }
    }

    /// The zone the call is on, if any (a change's zone for GetChange).
    pub fn zone_id(&self, inner: &Inner) -> Option<String> {
        match self {
            Op::GetHostedZone(id)
            | Op::DeleteHostedZone(id)
            | Op::ChangeResourceRecordSets(id)
            | Op::ListResourceRecordSets(id) => Some(id.clone()),
            Op::GetChange(id) => inner.lock().changes.get(id).and_then(|c| c.zone_id.clone()),
            _ => None,
        }
    }
}

/// A successful answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: String,
    pub location: Option<String>,
}

fn ok(body: String) -> Result<Reply, ApiError> {
    Ok(Reply {
        status: 200,
        body,
        location: None,
    })
}

/// What a call needs besides the state.
pub(crate) struct Ctx<'a> {
    pub query: &'a [(String, String)],
    pub body: &'a [u8],
    /// Changes made by this call never turn INSYNC.
    pub pending_forever: bool,
    /// `http://host:port`, for `Location`.
    pub base_url: &'a str,
}

impl Ctx<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn max_items(raw: Option<&str>, default: usize, cap: usize) -> Result<(usize, String), ApiError> {
    match raw {
        None => Ok((default.min(cap), default.to_string())),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok((n.min(cap), v.trim().to_string())),
            _ => Err(ApiError::invalid_input(format!(
                "Invalid value for maxitems: '{v}'. It must be a positive whole number."
            ))),
        },
    }
}

impl Inner {
    fn insync_at(&self, pending_forever: bool) -> Option<Instant> {
        (!pending_forever).then(|| Instant::now() + self.opts.insync_after)
    }

    /// Carries out `op`.
    pub(crate) fn run(&self, op: &Op, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        match op {
            Op::CreateHostedZone => self.create_hosted_zone(ctx),
            Op::ListHostedZones => self.list_hosted_zones(ctx),
            Op::ListHostedZonesByName => self.list_hosted_zones_by_name(ctx),
            Op::GetHostedZoneCount => {
                let n = self.lock().zones.len();
                let mut x = Xml::document("GetHostedZoneCountResponse");
                x.text("HostedZoneCount", &n.to_string());
                ok(x.finish("GetHostedZoneCountResponse"))
            }
            Op::GetHostedZone(id) => self.get_hosted_zone(id),
            Op::DeleteHostedZone(id) => self.delete_hosted_zone(id, ctx),
            Op::ChangeResourceRecordSets(id) => self.change_rrsets(id, ctx),
            Op::ListResourceRecordSets(id) => self.list_rrsets(id, ctx),
            Op::GetChange(id) => self.get_change(id),
        }
    }

    fn create_hosted_zone(&self, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        let req = wire::parse_create_zone(ctx.body)?;
        let name = parse_name(req.raw_name.trim())
            .map_err(|p| ApiError::new(400, "InvalidDomainName", p.message(&req.raw_name)))?;
        if name == "." {
            return Err(ApiError::new(
                400,
                "InvalidDomainName",
                format!("The domain name is invalid: '{}'", req.raw_name),
            ));
        }
        let mut st = self.lock();
        if st.caller_refs.contains(&req.caller_reference) {
            return Err(ApiError::new(
                409,
                "HostedZoneAlreadyExists",
                "A hosted zone has already been created with the specified caller reference.",
            ));
        }
        let id = st.new_zone_id();
        let zone = Zone::new(
            id.clone(),
            name,
            req.caller_reference.clone(),
            req.comment,
            req.vpc,
        );
        st.caller_refs.insert(req.caller_reference);
        let (cid, rec) = st.new_change(self.insync_at(ctx.pending_forever), None, Some(id.clone()));
        let mut x = Xml::document("CreateHostedZoneResponse");
        wire::hosted_zone(&mut x, &zone);
        wire::change_info(&mut x, &cid, &rec, false);
        wire::delegation_set(&mut x, &zone);
        if let Some(v) = &zone.vpc {
            wire::vpc(&mut x, v);
        }
        st.zones.insert(id.clone(), zone);
        drop(st);
        self.count_commit();
        Ok(Reply {
            status: 201,
            body: x.finish("CreateHostedZoneResponse"),
            location: Some(format!("{}/2013-04-01/hostedzone/{id}", ctx.base_url)),
        })
    }

    fn get_hosted_zone(&self, id: &str) -> Result<Reply, ApiError> {
        let st = self.lock();
        let zone = st.zones.get(id).ok_or_else(|| ApiError::no_such_zone(id))?;
        let mut x = Xml::document("GetHostedZoneResponse");
        wire::hosted_zone(&mut x, zone);
        match &zone.vpc {
            Some(v) => {
                x.open("VPCs");
                wire::vpc(&mut x, v);
                x.close("VPCs");
            }
            None => wire::delegation_set(&mut x, zone),
        }
        ok(x.finish("GetHostedZoneResponse"))
    }

    fn delete_hosted_zone(&self, id: &str, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        let mut st = self.lock();
        let zone = st.zones.get(id).ok_or_else(|| ApiError::no_such_zone(id))?;
        if zone.rrsets.keys().any(|k| !zone.is_apex_default(k)) {
            return Err(ApiError::new(
                400,
                "HostedZoneNotEmpty",
                "The specified hosted zone contains non-required resource record sets and so cannot be deleted.",
            ));
        }
        st.zones.remove(id);
        let (cid, rec) = st.new_change(self.insync_at(ctx.pending_forever), None, None);
        drop(st);
        self.count_commit();
        let mut x = Xml::document("DeleteHostedZoneResponse");
        wire::change_info(&mut x, &cid, &rec, false);
        ok(x.finish("DeleteHostedZoneResponse"))
    }

    fn list_hosted_zones(&self, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        let (max, max_echo) = max_items(ctx.param("maxitems"), 100, 100)?;
        let marker = ctx.param("marker").map(|m| bare_zone_id(m).to_string());
        if let Some(t) = ctx.param("hostedzonetype")
            && t != "PrivateHostedZone"
        {
            return Err(ApiError::invalid_input(format!(
                "Invalid value for hostedzonetype: '{t}'. It must be PrivateHostedZone."
            )));
        }
        let only_private = ctx.param("hostedzonetype").is_some();
        let st = self.lock();
        let zones: Vec<&Zone> = st
            .zones
            .values()
            .filter(|z| !only_private || z.private)
            .filter(|z| marker.as_ref().is_none_or(|m| &z.id >= m))
            .collect();
        let mut x = Xml::document("ListHostedZonesResponse");
        x.open("HostedZones");
        for z in zones.iter().take(max) {
            wire::hosted_zone(&mut x, z);
        }
        x.close("HostedZones");
        x.text("Marker", marker.as_deref().unwrap_or(""));
        let next = zones.get(max);
        x.text("IsTruncated", if next.is_some() { "true" } else { "false" });
        x.opt("NextMarker", next.map(|z| z.id.as_str()));
        x.text("MaxItems", &max_echo);
        ok(x.finish("ListHostedZonesResponse"))
    }

    fn list_hosted_zones_by_name(&self, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        let (max, max_echo) = max_items(ctx.param("maxitems"), 100, 100)?;
        let dns_name = ctx.param("dnsname");
        let zone_id = ctx
            .param("hostedzoneid")
            .map(|z| bare_zone_id(z).to_string());
        if zone_id.is_some() && dns_name.is_none() {
            return Err(ApiError::invalid_input(
                "Invalid request: hostedzoneid requires dnsname (pass NextDNSName and NextHostedZoneId together).",
            ));
        }
        let start = match dns_name {
            None => None,
            Some(n) => {
                Some(sort_key(&parse_name(n.trim()).map_err(|p| {
                    ApiError::new(400, "InvalidDomainName", p.message(n))
                })?))
            }
        };
        let st = self.lock();
        let zones: Vec<&Zone> = st
            .zones_by_name()
            .into_iter()
            .filter(|z| match &start {
                None => true,
                Some(s) => {
                    let k = sort_key(&z.name);
                    match &zone_id {
                        None => &k >= s,
                        Some(id) => (&k, &z.id) >= (s, id),
                    }
                }
            })
            .collect();
        let mut x = Xml::document("ListHostedZonesByNameResponse");
        x.open("HostedZones");
        for z in zones.iter().take(max) {
            wire::hosted_zone(&mut x, z);
        }
        x.close("HostedZones");
        if let Some(n) = dns_name {
            x.text("DNSName", n);
        }
        x.opt("HostedZoneId", zone_id.as_deref());
        let next = zones.get(max);
        x.text("IsTruncated", if next.is_some() { "true" } else { "false" });
        if let Some(z) = next {
            x.text("NextDNSName", &z.name);
            x.text("NextHostedZoneId", &z.id);
        }
        x.text("MaxItems", &max_echo);
        ok(x.finish("ListHostedZonesByNameResponse"))
    }

    fn change_rrsets(&self, id: &str, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        // The zone is looked up first: an unknown zone is NoSuchHostedZone whatever
        // the body holds.
        if !self.lock().zones.contains_key(id) {
            return Err(ApiError::no_such_zone(id));
        }
        let mut req = wire::parse_change_batch(ctx.body)?;
        let rejected = self.rejected_values();
        if !rejected.is_empty() {
            for change in &mut req.changes {
                if change.action == batch::Action::Delete {
                    continue;
                }
                for v in change.rrset.records.iter().filter(|v| rejected.contains(v)) {
                    change.problems.push(format!(
                        "Invalid Resource Record: 'FATAL problem: RejectedValue (the emulator's reject_values refuses this value) encountered with '{v}''"
                    ));
                }
            }
        }
        let before_batch = self.opts.creates_checked_before_batch;
        let mut st = self.lock();
        let zone = st
            .zones
            .get_mut(id)
            .ok_or_else(|| ApiError::no_such_zone(id))?;
        if before_batch {
            // moto's order (Route53Options::creates_checked_before_batch).
            for change in &mut req.changes {
                if change.action == batch::Action::Create
                    && zone.rrsets.contains_key(&change.rrset.key())
                {
                    change.problems.push(format!(
                        "Tried to create resource record set {} but it already exists",
                        change.rrset.describe()
                    ));
                }
            }
        }
        batch::apply(zone, &req.changes).map_err(|m| ApiError::invalid_change_batch(&m))?;
        let (cid, rec) = st.new_change(
            self.insync_at(ctx.pending_forever),
            req.comment,
            Some(id.to_string()),
        );
        drop(st);
        self.count_commit();
        let mut x = Xml::document("ChangeResourceRecordSetsResponse");
        wire::change_info(&mut x, &cid, &rec, false);
        ok(x.finish("ChangeResourceRecordSetsResponse"))
    }

    fn list_rrsets(&self, id: &str, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        let (max, max_echo) = max_items(ctx.param("maxitems"), self.opts.page_default, 300)?;
        let name = ctx.param("name");
        let rtype = ctx.param("type");
        let identifier = ctx.param("identifier");
        if rtype.is_some() && name.is_none() {
            return Err(ApiError::invalid_input(
                "Invalid request: type (StartRecordType) was given without name (StartRecordName).",
            ));
        }
        if let Some(t) = rtype
            && !RR_TYPES.contains(&t)
        {
            return Err(ApiError::invalid_input(format!(
                "Invalid request: '{t}' is not a valid record type."
            )));
        }
        let start = match name {
            None => RrKey {
                rev_name: String::new(),
                rtype: String::new(),
                set_id: None,
            },
            Some(n) => RrKey {
                rev_name: sort_key(
                    &parse_name(n.trim()).map_err(|p| ApiError::invalid_input(p.message(n)))?,
                ),
                rtype: rtype.unwrap_or("").to_string(),
                set_id: rtype.and(identifier).map(str::to_string),
            },
        };
        let st = self.lock();
        let zone = st.zones.get(id).ok_or_else(|| ApiError::no_such_zone(id))?;
        let (page, next) = zone.page(&start, max);
        let mut x = Xml::document("ListResourceRecordSetsResponse");
        x.open("ResourceRecordSets");
        for rr in page {
            wire::rrset(&mut x, rr);
        }
        x.close("ResourceRecordSets");
        x.text("IsTruncated", if next.is_some() { "true" } else { "false" });
        if let Some(k) = &next {
            x.text("NextRecordName", &k.name());
            x.text("NextRecordType", &k.rtype);
            x.opt("NextRecordIdentifier", k.set_id.as_deref());
        }
        x.text("MaxItems", &max_echo);
        ok(x.finish("ListResourceRecordSetsResponse"))
    }

    fn get_change(&self, id: &str) -> Result<Reply, ApiError> {
        let st = self.lock();
        let rec = st.changes.get(id).ok_or_else(|| {
            ApiError::new(
                404,
                "NoSuchChange",
                "A change with the specified change ID does not exist.",
            )
        })?;
        let insync = rec.insync_at.is_some_and(|t| Instant::now() >= t);
        let mut x = Xml::document("GetChangeResponse");
        wire::change_info(&mut x, id, rec, insync);
        ok(x.finish("GetChangeResponse"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let r = |m: Method, p: &str| Op::route(&m, p);
        assert_eq!(
            r(Method::POST, "/2013-04-01/hostedzone"),
            Some(Op::CreateHostedZone)
        );
        assert_eq!(
            r(Method::POST, "/2013-04-01/hostedzone/Z1/rrset/"),
            Some(Op::ChangeResourceRecordSets("Z1".into()))
        );
        assert_eq!(
            r(Method::POST, "/2013-04-01/hostedzone/Z1/rrset"),
            Some(Op::ChangeResourceRecordSets("Z1".into()))
        );
        assert_eq!(
            r(Method::GET, "/2013-04-01/hostedzone/%2Fhostedzone%2FZ1"),
            Some(Op::GetHostedZone("Z1".into()))
        );
        assert_eq!(
            r(Method::GET, "/2013-04-01/change/%2Fchange%2FC1"),
            Some(Op::GetChange("C1".into()))
        );
        assert_eq!(r(Method::PUT, "/2013-04-01/hostedzone"), None);
        assert_eq!(r(Method::GET, "/2013-04-01/healthcheck"), None);
        assert_eq!(
            r(Method::GET, "/2013-04-01/hostedzone//hostedzone/Z1/rrset"),
            None
        );
    }
}
