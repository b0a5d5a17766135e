//! Route 53's REST-XML: request bodies in (quick-xml + serde, then checked the way the
//! API's schema and validation would), response documents out.
//!
//! Schema problems answer 400 `InvalidInput` "Invalid XML ; cvc-…" like AWS's validating
//! parser; the one verified verbatim is the empty `ResourceRecords` text, the others
//! follow the same parser's forms. A wrong root element answers 400 `MalformedInput`
//! "X is not valid, expected Y" (a real answer). The `Invalid request: Expected exactly
//! one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId]`
//! text is AWS's.
use super::batch::{Action, Change};
use super::errors::ApiError;
use super::model::{Alias, ChangeRec, Geo, RRSet, Vpc, Zone};
use super::names::parse_name;
use super::values::RR_TYPES;
use crate::timefmt::iso8601_millis;
use quick_xml::events::Event;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// The API's XML namespace.
pub(crate) const NS: &str = "https://route53.amazonaws.com/doc/2013-04-01/";

// ---------------------------------------------------------------- XML out

/// A small XML writer with AWS's layout (one line, escaped text).
pub(crate) struct Xml(String);

impl Xml {
    /// `<?xml …?><root xmlns="…">`
    pub fn document(root: &str) -> Xml {
        Xml(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{root} xmlns=\"{NS}\">"
        ))
    }

    pub fn open(&mut self, tag: &str) {
        self.0.push('<');
        self.0.push_str(tag);
        self.0.push('>');
    }

    pub fn close(&mut self, tag: &str) {
        self.0.push_str("</");
        self.0.push_str(tag);
        self.0.push('>');
    }

    pub fn text(&mut self, tag: &str, value: &str) {
        self.open(tag);
        self.0.push_str(&quick_xml::escape::partial_escape(value));
        self.close(tag);
    }

    pub fn opt(&mut self, tag: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.text(tag, v);
        }
    }

    pub fn finish(mut self, root: &str) -> String {
        self.close(root);
        self.0
    }
}

/// `<ChangeInfo>` of change `id`.
pub(crate) fn change_info(x: &mut Xml, id: &str, rec: &ChangeRec, insync: bool) {
    x.open("ChangeInfo");
    x.text("Id", &format!("/change/{id}"));
    x.text("Status", if insync { "INSYNC" } else { "PENDING" });
    x.text("SubmittedAt", &iso8601_millis(rec.submitted));
    x.opt("Comment", rec.comment.as_deref());
    x.close("ChangeInfo");
}

/// `<HostedZone>` of `zone`.
pub(crate) fn hosted_zone(x: &mut Xml, zone: &Zone) {
    x.open("HostedZone");
    x.text("Id", &format!("/hostedzone/{}", zone.id));
    x.text("Name", &zone.name);
    x.text("CallerReference", &zone.caller_reference);
    x.open("Config");
    x.opt("Comment", zone.comment.as_deref());
    x.text("PrivateZone", if zone.private { "true" } else { "false" });
    x.close("Config");
    x.text("ResourceRecordSetCount", &zone.rrsets.len().to_string());
    x.close("HostedZone");
}

/// `<DelegationSet>` of a zone.
pub(crate) fn delegation_set(x: &mut Xml, zone: &Zone) {
    x.open("DelegationSet");
    x.open("NameServers");
    for ns in &zone.name_servers {
        x.text("NameServer", ns);
    }
    x.close("NameServers");
    x.close("DelegationSet");
}

/// `<VPC>` of a private zone.
pub(crate) fn vpc(x: &mut Xml, vpc: &Vpc) {
    x.open("VPC");
    x.text("VPCRegion", &vpc.region);
    x.text("VPCId", &vpc.id);
    x.close("VPC");
}

/// `<ResourceRecordSet>`, elements in the API's order.
pub(crate) fn rrset(x: &mut Xml, rr: &RRSet) {
    x.open("ResourceRecordSet");
    x.text("Name", &rr.name);
    x.text("Type", &rr.rtype);
    x.opt("SetIdentifier", rr.set_identifier.as_deref());
    x.opt("Weight", rr.weight.map(|w| w.to_string()).as_deref());
    x.opt("Region", rr.region.as_deref());
    if let Some(g) = &rr.geo {
        x.open("GeoLocation");
        x.opt("ContinentCode", g.continent.as_deref());
        x.opt("CountryCode", g.country.as_deref());
        x.opt("SubdivisionCode", g.subdivision.as_deref());
        x.close("GeoLocation");
    }
    x.opt("Failover", rr.failover.as_deref());
    x.opt(
        "MultiValueAnswer",
        rr.multi_value_answer
            .map(|b| if b { "true" } else { "false" }),
    );
    x.opt("TTL", rr.ttl.map(|t| t.to_string()).as_deref());
    if !rr.records.is_empty() {
        x.open("ResourceRecords");
        for v in &rr.records {
            x.open("ResourceRecord");
            x.text("Value", v);
            x.close("ResourceRecord");
        }
        x.close("ResourceRecords");
    }
    if let Some(a) = &rr.alias {
        x.open("AliasTarget");
        x.text("HostedZoneId", &a.hosted_zone_id);
        x.text("DNSName", &a.dns_name);
        x.text(
            "EvaluateTargetHealth",
            if a.evaluate_target_health {
                "true"
            } else {
                "false"
            },
        );
        x.close("AliasTarget");
    }
    x.opt("HealthCheckId", rr.health_check_id.as_deref());
    x.close("ResourceRecordSet");
}

// ---------------------------------------------------------------- XML in

fn incomplete(element: &str, expected: &str) -> ApiError {
    ApiError::invalid_xml(format!(
        "cvc-complex-type.2.4.b: The content of element '{element}' is not complete. One of '{{\"{NS}\":{expected}}}' is expected."
    ))
}

fn not_in_enumeration(value: &str, allowed: &[&str]) -> ApiError {
    ApiError::invalid_xml(format!(
        "cvc-enumeration-valid: Value '{value}' is not facet-valid with respect to enumeration '[{}]'. It must be a value from the enumeration.",
        allowed.join(", ")
    ))
}

fn not_a(value: &str, datatype: &str) -> ApiError {
    ApiError::invalid_xml(format!(
        "cvc-datatype-valid.1.2.1: '{value}' is not a valid value for '{datatype}'."
    ))
}

fn integer(value: &str, min: u64, max: u64, type_name: &str) -> Result<u64, ApiError> {
    let v = value.trim();
    let n: u64 = v.parse().map_err(|_| not_a(v, "integer"))?;
    if n < min {
        return Err(ApiError::invalid_xml(format!(
            "cvc-minInclusive-valid: Value '{v}' is not facet-valid with respect to minInclusive '{min}' for type '{type_name}'."
        )));
    }
    if n > max {
        return Err(ApiError::invalid_xml(format!(
            "cvc-maxInclusive-valid: Value '{v}' is not facet-valid with respect to maxInclusive '{max}' for type '{type_name}'."
        )));
    }
    Ok(n)
}

fn boolean(value: &str) -> Result<bool, ApiError> {
    match value.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        v => Err(not_a(v, "boolean")),
    }
}

/// Checks the root element (name and namespace) before the body is parsed.
fn check_root(body: &str, expected: &str) -> Result<(), ApiError> {
    let mut reader = quick_xml::Reader::from_str(body);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name != expected {
                    return Err(ApiError::new(
                        400,
                        "MalformedInput",
                        format!("{name} is not valid, expected {expected}"),
                    ));
                }
                let ns = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == b"xmlns")
                    .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                if ns.as_deref() != Some(NS) {
                    return Err(ApiError::invalid_xml(format!(
                        "cvc-elt.1.a: Cannot find the declaration of element '{name}'."
                    )));
                }
                return Ok(());
            }
            Ok(Event::Eof) => {
                return Err(ApiError::invalid_xml("Premature end of file."));
            }
            Ok(_) => {}
            Err(e) => return Err(ApiError::invalid_xml(e.to_string())),
        }
    }
}

fn body_str(body: &[u8]) -> Result<&str, ApiError> {
    std::str::from_utf8(body)
        .map_err(|_| ApiError::invalid_xml("Invalid byte sequence: the body is not UTF-8."))
}

#[derive(Debug, Deserialize)]
struct ChangeRequestX {
    #[serde(rename = "ChangeBatch")]
    change_batch: Option<ChangeBatchX>,
}

#[derive(Debug, Deserialize)]
struct ChangeBatchX {
    #[serde(rename = "Comment")]
    comment: Option<String>,
    #[serde(rename = "Changes")]
    changes: Option<ChangesX>,
}

#[derive(Debug, Deserialize)]
struct ChangesX {
    #[serde(rename = "Change", default)]
    change: Vec<ChangeX>,
}

#[derive(Debug, Deserialize)]
struct ChangeX {
    #[serde(rename = "Action")]
    action: Option<String>,
    #[serde(rename = "ResourceRecordSet")]
    rrset: Option<RRSetX>,
}

#[derive(Debug, Deserialize)]
struct RRSetX {
    #[serde(rename = "Name")]
    name: Option<String>,
    #[serde(rename = "Type")]
    rtype: Option<String>,
    #[serde(rename = "SetIdentifier")]
    set_identifier: Option<String>,
    #[serde(rename = "Weight")]
    weight: Option<String>,
    #[serde(rename = "Region")]
    region: Option<String>,
    #[serde(rename = "GeoLocation")]
    geo: Option<GeoX>,
    #[serde(rename = "Failover")]
    failover: Option<String>,
    #[serde(rename = "MultiValueAnswer")]
    multi_value_answer: Option<String>,
    #[serde(rename = "TTL")]
    ttl: Option<String>,
    #[serde(rename = "ResourceRecords")]
    records: Option<RecordsX>,
    #[serde(rename = "AliasTarget")]
    alias: Option<AliasX>,
    #[serde(rename = "HealthCheckId")]
    health_check_id: Option<String>,
    #[serde(rename = "TrafficPolicyInstanceId")]
    traffic_policy_instance_id: Option<String>,
    #[serde(rename = "CidrRoutingConfig")]
    cidr_routing_config: Option<IgnoredAny>,
    #[serde(rename = "GeoProximityLocation")]
    geo_proximity_location: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct GeoX {
    #[serde(rename = "ContinentCode")]
    continent: Option<String>,
    #[serde(rename = "CountryCode")]
    country: Option<String>,
    #[serde(rename = "SubdivisionCode")]
    subdivision: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RecordsX {
    #[serde(rename = "ResourceRecord", default)]
    record: Vec<RecordX>,
}

#[derive(Debug, Deserialize)]
struct RecordX {
    #[serde(rename = "Value")]
    value: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AliasX {
    #[serde(rename = "HostedZoneId")]
    hosted_zone_id: Option<String>,
    #[serde(rename = "DNSName")]
    dns_name: Option<String>,
    #[serde(rename = "EvaluateTargetHealth")]
    evaluate_target_health: Option<String>,
}

/// A parsed ChangeResourceRecordSets request.
#[derive(Debug)]
pub(crate) struct ChangeBatchReq {
    pub comment: Option<String>,
    pub changes: Vec<Change>,
}

/// Parses and checks a `ChangeResourceRecordSetsRequest`. Schema and input problems
/// answer `InvalidInput` (the first one); problems with a name are kept on the change
/// for the batch engine, which reports them with the others.
pub(crate) fn parse_change_batch(body: &[u8]) -> Result<ChangeBatchReq, ApiError> {
    let text = body_str(body)?;
    check_root(text, "ChangeResourceRecordSetsRequest")?;
    let req: ChangeRequestX =
        quick_xml::de::from_str(text).map_err(|e| ApiError::invalid_xml(e.to_string()))?;
    let batch = req
        .change_batch
        .ok_or_else(|| incomplete("ChangeResourceRecordSetsRequest", "ChangeBatch"))?;
    let changes = batch
        .changes
        .ok_or_else(|| incomplete("ChangeBatch", "Changes"))?;
    if changes.change.is_empty() {
        return Err(incomplete("Changes", "Change"));
    }
    let mut out = Vec::with_capacity(changes.change.len());
    for c in changes.change {
        out.push(parse_change(c)?);
    }
    Ok(ChangeBatchReq {
        comment: batch.comment,
        changes: out,
    })
}

fn parse_change(c: ChangeX) -> Result<Change, ApiError> {
    let action = match c.action.as_deref().map(str::trim) {
        None => return Err(incomplete("Change", "Action")),
        Some("CREATE") => Action::Create,
        Some("DELETE") => Action::Delete,
        Some("UPSERT") => Action::Upsert,
        Some(other) => return Err(not_in_enumeration(other, &["CREATE", "DELETE", "UPSERT"])),
    };
    let x = c
        .rrset
        .ok_or_else(|| incomplete("Change", "ResourceRecordSet"))?;
    let raw_name = x
        .name
        .ok_or_else(|| incomplete("ResourceRecordSet", "Name"))?;
    let rtype = x
        .rtype
        .map(|t| t.trim().to_string())
        .ok_or_else(|| incomplete("ResourceRecordSet", "Type"))?;
    if !RR_TYPES.contains(&rtype.as_str()) {
        return Err(not_in_enumeration(&rtype, RR_TYPES));
    }
    let describe = format!(
        "[Action={}, Name={}, Type={}, SetIdentifier={}]",
        action.as_str(),
        raw_name,
        rtype,
        x.set_identifier.as_deref().unwrap_or("null")
    );
    if x.cidr_routing_config.is_some()
        || x.geo_proximity_location.is_some()
        || x.traffic_policy_instance_id.is_some()
    {
        return Err(ApiError::invalid_input(format!(
            "Invalid request: CidrRoutingConfig, GeoProximityLocation and TrafficPolicyInstanceId are not supported by the dnsplane Route 53 emulator, in Change with {describe}"
        )));
    }
    if let Some(id) = &x.set_identifier
        && (id.is_empty() || id.chars().count() > 128)
    {
        return Err(ApiError::invalid_xml(format!(
            "cvc-length-valid: Value '{id}' with length = '{}' is not facet-valid with respect to length '1..128' for type 'ResourceRecordSetIdentifier'.",
            id.chars().count()
        )));
    }
    let weight = x
        .weight
        .as_deref()
        .map(|w| integer(w, 0, 255, "ResourceRecordSetWeight"))
        .transpose()?;
    let ttl = x
        .ttl
        .as_deref()
        .map(|t| integer(t, 0, 2_147_483_647, "TTL"))
        .transpose()?;
    let failover = match x.failover.as_deref().map(str::trim) {
        None => None,
        Some(f @ ("PRIMARY" | "SECONDARY")) => Some(f.to_string()),
        Some(f) => return Err(not_in_enumeration(f, &["PRIMARY", "SECONDARY"])),
    };
    let multi_value_answer = x.multi_value_answer.as_deref().map(boolean).transpose()?;
    let records = match x.records {
        None => None,
        Some(r) if r.record.is_empty() => {
            return Err(incomplete("ResourceRecords", "ResourceRecord"));
        }
        Some(r) => Some(
            r.record
                .into_iter()
                .map(|rec| {
                    rec.value
                        .ok_or_else(|| incomplete("ResourceRecord", "Value"))
                })
                .collect::<Result<Vec<String>, ApiError>>()?,
        ),
    };
    let mut problems = Vec::new();
    let alias = match x.alias {
        None => None,
        Some(a) => {
            let hosted_zone_id = a
                .hosted_zone_id
                .ok_or_else(|| incomplete("AliasTarget", "HostedZoneId"))?;
            let dns = a
                .dns_name
                .ok_or_else(|| incomplete("AliasTarget", "DNSName"))?;
            let evaluate = a
                .evaluate_target_health
                .ok_or_else(|| incomplete("AliasTarget", "EvaluateTargetHealth"))?;
            let dns_name = match parse_name(dns.trim()) {
                Ok(n) => n,
                Err(p) => {
                    problems.push(format!("Invalid Resource Record: '{}'", p.message(&dns)));
                    dns.clone()
                }
            };
            Some(Alias {
                hosted_zone_id: hosted_zone_id.trim().to_string(),
                dns_name,
                evaluate_target_health: boolean(&evaluate)?,
            })
        }
    };
    // Exactly one of: an alias, TTL with records, a traffic policy instance.
    let record_data = ttl.is_some() || records.is_some();
    let complete_records = ttl.is_some() && records.is_some();
    let shapes = usize::from(alias.is_some()) + usize::from(complete_records);
    if shapes == 0 || (alias.is_some() && record_data) {
        let found = if shapes == 0 { "none" } else { "more than one" };
        return Err(ApiError::invalid_input(format!(
            "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found {found} in Change with {describe}"
        )));
    }
    let geo = x.geo.map(|g| Geo {
        continent: g.continent,
        country: g.country,
        subdivision: g.subdivision,
    });
    let policies = usize::from(weight.is_some())
        + usize::from(x.region.is_some())
        + usize::from(failover.is_some())
        + usize::from(geo.is_some())
        + usize::from(multi_value_answer.is_some());
    match (&x.set_identifier, policies) {
        (Some(_), 0) | (Some(_), 2..) => {
            let found = if policies == 0 {
                "none"
            } else {
                "more than one"
            };
            return Err(ApiError::invalid_input(format!(
                "Invalid request: Expected exactly one of [Weight, Region, Failover, GeoLocation, MultiValueAnswer, GeoProximityLocation, or CidrRoutingConfig], but found {found} in Change with {describe}"
            )));
        }
        (None, 1..) => {
            return Err(ApiError::invalid_input(format!(
                "Invalid request: Missing field 'SetIdentifier' in Change with {describe}"
            )));
        }
        _ => {}
    }
    let name = match parse_name(raw_name.trim()) {
        Ok(n) => n,
        Err(p) => {
            problems.insert(0, p.message(&raw_name));
            raw_name.clone()
        }
    };
    Ok(Change {
        action,
        rrset: RRSet {
            name,
            rtype,
            set_identifier: x.set_identifier,
            weight,
            region: x.region.map(|r| r.trim().to_string()),
            geo,
            failover,
            multi_value_answer,
            ttl,
            records: records.unwrap_or_default(),
            alias,
            health_check_id: x.health_check_id.map(|h| h.trim().to_string()),
        },
        problems,
    })
}

#[derive(Debug, Deserialize)]
struct CreateZoneX {
    #[serde(rename = "Name")]
    name: Option<String>,
    #[serde(rename = "CallerReference")]
    caller_reference: Option<String>,
    #[serde(rename = "HostedZoneConfig")]
    config: Option<ZoneConfigX>,
    #[serde(rename = "VPC")]
    vpc: Option<VpcX>,
    #[serde(rename = "DelegationSetId")]
    delegation_set_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ZoneConfigX {
    #[serde(rename = "Comment")]
    comment: Option<String>,
    #[serde(rename = "PrivateZone")]
    private: Option<String>,
}

#[derive(Debug, Deserialize)]
struct VpcX {
    #[serde(rename = "VPCRegion")]
    region: Option<String>,
    #[serde(rename = "VPCId")]
    id: Option<String>,
}

/// A parsed CreateHostedZone request.
#[derive(Debug)]
pub(crate) struct CreateZoneReq {
    pub raw_name: String,
    pub caller_reference: String,
    pub comment: Option<String>,
    pub vpc: Option<Vpc>,
}

/// Parses and checks a `CreateHostedZoneRequest`.
pub(crate) fn parse_create_zone(body: &[u8]) -> Result<CreateZoneReq, ApiError> {
    let text = body_str(body)?;
    check_root(text, "CreateHostedZoneRequest")?;
    let x: CreateZoneX =
        quick_xml::de::from_str(text).map_err(|e| ApiError::invalid_xml(e.to_string()))?;
    let raw_name = x
        .name
        .ok_or_else(|| incomplete("CreateHostedZoneRequest", "Name"))?;
    let caller_reference = x
        .caller_reference
        .ok_or_else(|| incomplete("CreateHostedZoneRequest", "CallerReference"))?;
    if caller_reference.is_empty() || caller_reference.chars().count() > 128 {
        return Err(ApiError::invalid_xml(format!(
            "cvc-length-valid: Value '{caller_reference}' with length = '{}' is not facet-valid with respect to length '1..128' for type 'Nonce'.",
            caller_reference.chars().count()
        )));
    }
    if x.delegation_set_id.is_some() {
        return Err(ApiError::invalid_input(
            "Invalid request: DelegationSetId (reusable delegation sets) is not supported by the dnsplane Route 53 emulator",
        ));
    }
    let (comment, private_flag) = match x.config {
        None => (None, None),
        Some(c) => (c.comment, c.private.as_deref().map(boolean).transpose()?),
    };
    let vpc = match x.vpc {
        None => None,
        Some(v) => {
            let region = v.region.ok_or_else(|| incomplete("VPC", "VPCRegion"))?;
            let id = v.id.ok_or_else(|| incomplete("VPC", "VPCId"))?;
            Some(Vpc {
                region: region.trim().to_string(),
                id: id.trim().to_string(),
            })
        }
    };
    if private_flag == Some(true) && vpc.is_none() {
        return Err(ApiError::invalid_input(
            "Invalid request: a private hosted zone needs a VPC (VPCRegion and VPCId)",
        ));
    }
    Ok(CreateZoneReq {
        raw_name,
        caller_reference,
        comment,
        vpc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(changes: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ChangeResourceRecordSetsRequest xmlns=\"{NS}\"><ChangeBatch><Comment>c</Comment><Changes>{changes}</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>"
        )
    }

    #[test]
    fn parses_a_batch() {
        let body = req(
            "<Change><Action>UPSERT</Action><ResourceRecordSet><Name>*.Example.com</Name><Type>TXT</Type><TTL>60</TTL>\
             <ResourceRecords><ResourceRecord><Value>\"a &amp; b\"</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change>\
             <Change><Action>CREATE</Action><ResourceRecordSet><Name>w.example.com.</Name><Type>A</Type><SetIdentifier>one</SetIdentifier><Weight>10</Weight>\
             <AliasTarget><HostedZoneId>Z1</HostedZoneId><DNSName>Target.example.com</DNSName><EvaluateTargetHealth>false</EvaluateTargetHealth></AliasTarget></ResourceRecordSet></Change>",
        );
        let b = parse_change_batch(body.as_bytes()).unwrap();
        assert_eq!(b.comment.as_deref(), Some("c"));
        assert_eq!(b.changes[0].action, Action::Upsert);
        assert_eq!(b.changes[0].rrset.name, "\\052.example.com.");
        assert_eq!(b.changes[0].rrset.records, vec!["\"a & b\""]);
        let alias = b.changes[1].rrset.alias.as_ref().unwrap();
        assert_eq!(alias.dns_name, "target.example.com.");
        assert_eq!(b.changes[1].rrset.weight, Some(10));
    }

    #[test]
    fn input_problems() {
        let e = parse_change_batch(
            req("<Change><Action>CREATE</Action><ResourceRecordSet><Name>portal.example.com</Name><Type>A</Type></ResourceRecordSet></Change>")
                .as_bytes(),
        )
        .unwrap_err();
        assert_eq!(e.code, "InvalidInput");
        assert_eq!(
            e.message,
            "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found none in Change with [Action=CREATE, Name=portal.example.com, Type=A, SetIdentifier=null]"
        );
        let e = parse_change_batch(
            req("<Change><Action>CREATE</Action><ResourceRecordSet><Name>a.example.com</Name><Type>A</Type><TTL>60</TTL><ResourceRecords></ResourceRecords></ResourceRecordSet></Change>")
                .as_bytes(),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "Invalid XML ; cvc-complex-type.2.4.b: The content of element 'ResourceRecords' is not complete. One of '{\"https://route53.amazonaws.com/doc/2013-04-01/\":ResourceRecord}' is expected."
        );
        let e = parse_change_batch(
            req("<Change><Action>MOVE</Action><ResourceRecordSet><Name>a</Name><Type>A</Type></ResourceRecordSet></Change>").as_bytes(),
        )
        .unwrap_err();
        assert!(e.message.contains("cvc-enumeration-valid: Value 'MOVE'"));
        let e = parse_change_batch(b"<ChangeBatch/>").unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            (
                "MalformedInput",
                "ChangeBatch is not valid, expected ChangeResourceRecordSetsRequest"
            )
        );
        let e = parse_change_batch(b"<ChangeResourceRecordSetsRequest><ChangeBatch>").unwrap_err();
        assert_eq!(e.code, "InvalidInput");
        let e = parse_change_batch(b"not xml at all").unwrap_err();
        assert_eq!(e.code, "InvalidInput");
        let e = parse_change_batch(
            req("<Change><Action>CREATE</Action><ResourceRecordSet><Name>a.example.com</Name><Type>A</Type><SetIdentifier>x</SetIdentifier><TTL>60</TTL><ResourceRecords><ResourceRecord><Value>1.2.3.4</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change>")
                .as_bytes(),
        )
        .unwrap_err();
        assert!(e.message.contains("but found none"), "{}", e.message);
    }

    #[test]
    fn writes_escaped_xml() {
        let mut x = Xml::document("R");
        x.text("V", "\"a\" <b> & c");
        assert_eq!(
            x.finish("R"),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<R xmlns=\"{NS}\"><V>\"a\" &lt;b&gt; &amp; c</V></R>"
            )
        );
    }
}
