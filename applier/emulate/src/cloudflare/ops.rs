//! The API calls: routing a request under `/client/v4` to one, and carrying it out.
use super::Inner;
use super::auth::TokenSpec;
use super::batch::{self, BatchInput};
use super::errors::ApiError;
use super::model::{Record, State, Zone, is_identifier, new_id};
use super::records::{Mode, RecordInput, build, check_rules};
use crate::control::ControlPlane;
use http::Method;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::SystemTime;

/// The API's base path.
pub(crate) const BASE: &str = "/client/v4";

/// The calls the emulator answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    ListZones,
    CreateZone,
    GetZone(String),
    DeleteZone(String),
    ListRecords(String),
    CreateRecord(String),
    Batch(String),
    GetRecord(String, String),
    UpdateRecord(String, String),
    EditRecord(String, String),
    DeleteRecord(String, String),
}

/// The operation names fault rules use.
pub(crate) const FAULT_OPS: &[&str] = &[
    "zones",
    "list_records",
    "get_record",
    "create_record",
    "update_record",
    "delete_record",
    "batch",
];

impl Op {
    /// Routes `method path`: outside `/client/v4`, and for a method the path does not
    /// have, Cloudflare's routing errors (404 7000, 405 7001); a call of Cloudflare's
    /// API the emulator does not reproduce, 501 naming it.
    pub fn route(method: &Method, path: &str) -> Result<Op, ApiError> {
        let no_route = || ApiError::new(404, 7000, "No route for that URI");
        let rest = path.strip_prefix(BASE).ok_or_else(no_route)?;
        let rest = rest.trim_end_matches('/');
        let segs: Vec<&str> = rest.split('/').skip(1).collect();
        let bad_method = || {
            ApiError::new(
                405,
                7001,
                format!("Method {method} not available for that URI."),
            )
        };
        let unimplemented = || ApiError::unimplemented(method, &template(&segs));
        let id_ok = |id: &str| {
            if is_identifier(id) {
                Ok(id.to_string())
            } else {
                Err(ApiError::no_route(path))
            }
        };
        Ok(match segs.as_slice() {
            ["zones"] => match *method {
                Method::GET => Op::ListZones,
                Method::POST => Op::CreateZone,
                _ => return Err(bad_method()),
            },
            ["zones", z] => match *method {
                Method::GET => Op::GetZone(id_ok(z)?),
                Method::DELETE => Op::DeleteZone(id_ok(z)?),
                Method::PATCH => return Err(unimplemented()),
                _ => return Err(bad_method()),
            },
            ["zones", z, "dns_records"] => match *method {
                Method::GET => Op::ListRecords(id_ok(z)?),
                Method::POST => Op::CreateRecord(id_ok(z)?),
                _ => return Err(bad_method()),
            },
            ["zones", z, "dns_records", "batch"] => match *method {
                Method::POST => Op::Batch(id_ok(z)?),
                _ => return Err(bad_method()),
            },
            [
                "zones",
                _,
                "dns_records",
                "export" | "import" | "scan" | "usage",
            ] => {
                return Err(unimplemented());
            }
            ["zones", z, "dns_records", r] => {
                let (z, r) = (id_ok(z)?, id_ok(r)?);
                match *method {
                    Method::GET => Op::GetRecord(z, r),
                    Method::PUT => Op::UpdateRecord(z, r),
                    Method::PATCH => Op::EditRecord(z, r),
                    Method::DELETE => Op::DeleteRecord(z, r),
                    _ => return Err(bad_method()),
                }
            }
            // Cloudflare's API is far larger than the emulator: a path it does not
            // know may well be real, so it is 501, never a 404 a client would take
            // for "zone gone".
            _ => return Err(unimplemented()),
        })
    }

    /// The call's name in stats (the API reference's operation names).
    pub fn name(&self) -> &'static str {
        match self {
            Op::ListZones => "ListZones",
            Op::CreateZone => "CreateZone",
            Op::GetZone(_) => "GetZone",
            Op::DeleteZone(_) => "DeleteZone",
            Op::ListRecords(_) => "ListDnsRecords",
            Op::CreateRecord(_) => "CreateDnsRecord",
            Op::Batch(_) => "BatchDnsRecords",
            Op::GetRecord(..) => "GetDnsRecord",
            Op::UpdateRecord(..) => "UpdateDnsRecord",
            Op::EditRecord(..) => "EditDnsRecord",
            Op::DeleteRecord(..) => "DeleteDnsRecord",
        }
    }

    /// The fault-rule operation name.
    pub fn fault_op(&self) -> &'static str {
        match self {
            Op::ListZones | Op::CreateZone | Op::GetZone(_) | Op::DeleteZone(_) => "zones",
            Op::ListRecords(_) => "list_records",
            Op::GetRecord(..) => "get_record",
            Op::CreateRecord(_) => "create_record",
            Op::UpdateRecord(..) | Op::EditRecord(..) => "update_record",
            Op::DeleteRecord(..) => "delete_record",
            Op::Batch(_) => "batch",
        }
    }

    /// The zone the call is on.
    pub fn zone_id(&self) -> Option<&str> {
        match self {
            Op::ListZones | Op::CreateZone => None,
            Op::GetZone(z)
            | Op::DeleteZone(z)
            | Op::ListRecords(z)
            | Op::CreateRecord(z)
            | Op::Batch(z)
            | Op::GetRecord(z, _)
            | Op::UpdateRecord(z, _)
            | Op::EditRecord(z, _)
            | Op::DeleteRecord(z, _) => Some(z),
        }
    }

    /// Whether a success changes state.
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Op::ListZones | Op::GetZone(_) | Op::ListRecords(_) | Op::GetRecord(..)
        )
    }
}

/// A path with its identifiers as the API reference names them:
/// `/zones/{zone_id}/dns_records/{dns_record_id}`.
fn template(segs: &[&str]) -> String {
    let mut out = String::new();
    for (i, seg) in segs.iter().enumerate() {
        let named = match i.checked_sub(1).map(|j| segs[j]) {
            Some("zones") => "{zone_id}",
            Some("accounts") => "{account_id}",
            Some("dns_records")
                if !matches!(*seg, "batch" | "export" | "import" | "scan" | "usage") =>
            {
                "{dns_record_id}"
            }
            _ => seg,
        };
        out.push('/');
        out.push_str(named);
    }
    out
}

/// What a call needs beside the state.
pub(crate) struct Ctx<'a> {
    pub query: &'a HashMap<String, String>,
    pub body: &'a [u8],
    pub token: &'a TokenSpec,
}

/// A successful answer: `result` and, for lists, `result_info`.
pub(crate) struct Reply {
    pub result: Value,
    pub result_info: Option<Value>,
}

impl Reply {
    fn one(result: Value) -> Reply {
        Reply {
            result,
            result_info: None,
        }
    }
}

fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|_| ApiError::invalid(6007, "Malformed JSON in request body"))
}

/// The zone `id`, if the token may see it: an unknown zone and a zone out of the
/// token's reach are both 403 10000, as Cloudflare answers a token.
fn zone<'a>(st: &'a State, token: &TokenSpec, id: &str) -> Result<&'a Zone, ApiError> {
    st.zones
        .get(id)
        .filter(|z| token.allows(&z.id, &z.name))
        .ok_or_else(ApiError::authentication)
}

fn zone_mut<'a>(st: &'a mut State, token: &TokenSpec, id: &str) -> Result<&'a mut Zone, ApiError> {
    st.zones
        .get_mut(id)
        .filter(|z| token.allows(&z.id, &z.name))
        .ok_or_else(ApiError::authentication)
}

/// `page` and `per_page` from the query: `per_page` defaults to `default`, and is held
/// between 5 and `max` (the API schema's bounds).
fn paging(q: &HashMap<String, String>, default: usize, max: usize) -> (usize, usize) {
    let page = q
        .get("page")
        .and_then(|p| p.parse::<usize>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1);
    let per_page = q
        .get("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(default)
        .clamp(5.min(max), max);
    (page, per_page)
}

fn page_of<T: Clone>(items: &[T], page: usize, per_page: usize) -> (Vec<T>, Value) {
    let total = items.len();
    let start = (page - 1).saturating_mul(per_page).min(total);
    let end = start.saturating_add(per_page).min(total);
    let slice = items[start..end].to_vec();
    let info = json!({
        "page": page,
        "per_page": per_page,
        "count": slice.len(),
        "total_count": total,
        "total_pages": total.div_ceil(per_page),
    });
    (slice, info)
}

/// The most records per page of `GET dns_records` (the API schema's maximum).
pub(crate) const MAX_PER_PAGE: usize = 5_000_000;

impl Inner {
    /// Carries out `op`.
    pub(crate) fn run(&self, op: &Op, ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
        let now = SystemTime::now();
        let limits = self.opts.limits();
        match op {
            Op::ListZones => {
                let st = self.lock();
                let want = ctx
                    .query
                    .get("name")
                    .map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase());
                let mut zones: Vec<&Zone> = st
                    .zones
                    .values()
                    .filter(|z| ctx.token.allows(&z.id, &z.name))
                    .filter(|z| want.as_ref().is_none_or(|n| &z.name == n))
                    .collect();
                zones.sort_by(|a, b| a.name.cmp(&b.name));
                let all: Vec<Value> = zones.iter().map(|z| z.to_json(self.opts.plan)).collect();
                let (page, per_page) = paging(ctx.query, 20, 50);
                let (slice, info) = page_of(&all, page, per_page);
                Ok(Reply {
                    result: Value::Array(slice),
                    result_info: Some(info),
                })
            }
            Op::CreateZone => {
                #[derive(serde::Deserialize)]
                struct NewZone {
                    name: String,
                    #[serde(default)]
                    account: Option<Value>,
                }
                let nz: NewZone = parse_body(ctx.body)?;
                if !matches!(ctx.token, TokenSpec::Any(_)) {
                    return Err(ApiError::authentication());
                }
                let account = nz
                    .account
                    .as_ref()
                    .and_then(|a| a.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let id = self.create_zone(&nz.name, None, account.as_deref())?;
                let st = self.lock();
                Ok(Reply::one(st.zones[&id].to_json(self.opts.plan)))
            }
            Op::GetZone(id) => {
                let st = self.lock();
                Ok(Reply::one(
                    zone(&st, ctx.token, id)?.to_json(self.opts.plan),
                ))
            }
            Op::DeleteZone(id) => {
                let mut st = self.lock();
                zone(&st, ctx.token, id)?;
                st.zones.remove(id);
                Ok(Reply::one(json!({ "id": id })))
            }
            Op::ListRecords(id) => {
                let st = self.lock();
                let z = zone(&st, ctx.token, id)?;
                let q = ctx.query;
                let name = q
                    .get("name")
                    .or_else(|| q.get("name.exact"))
                    .map(|n| super::records::record_name(&z.name, n).unwrap_or_default());
                let rtype = q.get("type").map(|t| t.trim().to_ascii_uppercase());
                let content = q.get("content").or_else(|| q.get("content.exact"));
                let records = match &name {
                    Some(n) => z.named(n),
                    None => z.sorted(),
                };
                let matching: Vec<&Record> = records
                    .into_iter()
                    .filter(|r| rtype.as_ref().is_none_or(|t| &r.rtype == t))
                    .filter(|r| content.is_none_or(|c| &r.content.content() == c))
                    .collect();
                let (page, per_page) = paging(q, self.opts.page_default, MAX_PER_PAGE);
                let (slice, info) = page_of(&matching, page, per_page);
                Ok(Reply {
                    result: Value::Array(slice.iter().map(|r| r.to_json()).collect()),
                    result_info: Some(info),
                })
            }
            Op::GetRecord(id, rid) => {
                let st = self.lock();
                let z = zone(&st, ctx.token, id)?;
                let r = z.records.get(rid).ok_or_else(ApiError::no_record)?;
                Ok(Reply::one(r.to_json()))
            }
            Op::CreateRecord(id) => {
                let input: RecordInput = parse_body(ctx.body)?;
                let mut st = self.lock();
                let z = zone_mut(&mut st, ctx.token, id)?;
                let rec = build(z, &input, Mode::Create, limits, now)?;
                check_rules(z, &rec)?;
                let out = rec.to_json();
                z.insert(rec);
                Ok(Reply::one(out))
            }
            Op::UpdateRecord(id, rid) | Op::EditRecord(id, rid) => {
                let input: RecordInput = parse_body(ctx.body)?;
                let mut st = self.lock();
                let z = zone_mut(&mut st, ctx.token, id)?;
                let base = z.records.get(rid).ok_or_else(ApiError::no_record)?.clone();
                let mode = if matches!(op, Op::UpdateRecord(..)) {
                    Mode::Overwrite(&base)
                } else {
                    Mode::Edit(&base)
                };
                let rec = build(z, &input, mode, limits, now)?;
                check_rules(z, &rec)?;
                let out = rec.to_json();
                z.insert(rec);
                Ok(Reply::one(out))
            }
            Op::DeleteRecord(id, rid) => {
                let mut st = self.lock();
                let z = zone_mut(&mut st, ctx.token, id)?;
                z.remove(rid).ok_or_else(ApiError::no_record)?;
                Ok(Reply::one(json!({ "id": rid })))
            }
            Op::Batch(id) => {
                let input: BatchInput = parse_body(ctx.body)?;
                let mut st = self.lock();
                let z = zone_mut(&mut st, ctx.token, id)?;
                let result = batch::run(z, &input, self.opts.batch_limit(), limits, now)?;
                Ok(Reply::one(result))
            }
        }
    }

    /// Creates a zone; `id` chosen or random. Errors in Cloudflare's words.
    pub(crate) fn create_zone(
        &self,
        name: &str,
        id: Option<&str>,
        account: Option<&str>,
    ) -> Result<String, ApiError> {
        let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
        let labels: Vec<&str> = name.split('.').collect();
        let valid = labels.len() >= 2
            && name.len() <= 253
            && labels.iter().all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return Err(ApiError::invalid(
                1097,
                format!("{name:?} is not a valid zone name."),
            ));
        }
        let mut st = self.lock();
        if st.zones.values().any(|z| z.name == name) {
            return Err(ApiError::invalid(1061, format!("{name} already exists")));
        }
        let id = match id {
            Some(id) if !is_identifier(id) || st.zones.contains_key(id) => {
                return Err(ApiError::invalid(
                    1097,
                    format!("zone id {id:?} is taken or malformed"),
                ));
            }
            Some(id) => id.to_string(),
            None => new_id(),
        };
        st.zones.insert(
            id.clone(),
            Zone::new(
                id.clone(),
                name,
                account.unwrap_or(&self.opts.account_id).to_string(),
                SystemTime::now(),
            ),
        );
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_refuses() {
        let r = |m: Method, p: &str| Op::route(&m, p);
        assert_eq!(r(Method::GET, "/client/v4/zones").unwrap(), Op::ListZones);
        assert_eq!(
            r(Method::POST, "/client/v4/zones/abc/dns_records/batch").unwrap(),
            Op::Batch("abc".into())
        );
        assert_eq!(
            r(Method::PATCH, "/client/v4/zones/abc/dns_records/r1").unwrap(),
            Op::EditRecord("abc".into(), "r1".into())
        );
        assert_eq!(r(Method::GET, "/v4/zones").unwrap_err().code, 7000);
        assert_eq!(
            r(Method::DELETE, "/client/v4/zones").unwrap_err().status,
            405
        );
        let e = r(Method::GET, "/client/v4/zones/a..b/dns_records").unwrap_err();
        assert_eq!((e.status, e.code), (400, 7003));
        assert_eq!(
            r(Method::DELETE, "/client/v4/zones/abc").unwrap(),
            Op::DeleteZone("abc".into())
        );
        // Calls of Cloudflare's API the emulator does not reproduce: 501 naming them.
        for (m, p, named) in [
            (
                Method::PATCH,
                "/client/v4/zones/abc",
                "PATCH /zones/{zone_id}",
            ),
            (
                Method::GET,
                "/client/v4/zones/abc/dns_records/export",
                "GET /zones/{zone_id}/dns_records/export",
            ),
            (
                Method::GET,
                "/client/v4/zones/abc/dns_records/r1/x",
                "GET /zones/{zone_id}/dns_records/{dns_record_id}/x",
            ),
            (
                Method::GET,
                "/client/v4/user/tokens/verify",
                "GET /user/tokens/verify",
            ),
        ] {
            let e = r(m, p).unwrap_err();
            assert_eq!(e.status, 501, "{p}");
            assert!(e.message.contains(named), "{p}: {}", e.message);
        }
    }

    #[test]
    fn pages_report_their_position() {
        let items: Vec<u32> = (0..12).collect();
        let (s, info) = page_of(&items, 3, 5);
        assert_eq!(s, vec![10, 11]);
        assert_eq!(info["total_pages"], 3);
        assert_eq!(info["count"], 2);
        assert_eq!(info["total_count"], 12);
        let (s, _) = page_of(&items, 9, 5);
        assert!(s.is_empty());
        let q: HashMap<String, String> = [("per_page".to_string(), "1".to_string())].into();
        assert_eq!(paging(&q, 100, MAX_PER_PAGE), (1, 5));
    }
}
