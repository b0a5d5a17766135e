//! The JSON of record sets and zones, both ways, as the API descriptions have it:
//! public zones (`dns.json`, 2018-05-01) write `TTL`, `ARecords`, `CNAMERecord`,
//! `caaRecords`, …; private zones (`privatedns.json`, 2020-06-01) write `ttl`,
//! `aRecords`, `cnameRecord`, …. Property names are read without regard to case, as
//! ARM's deserializer reads them; answers use the descriptions' spelling.
use super::errors::ArmError;
use super::model::{Caa, Data, Kind, Mx, RecordSet, Rtype, Soa, Srv, Zone};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Longest TXT string Azure DNS takes (Azure PowerShell's `TxtRecordMaxLength`).
pub(crate) const TXT_STRING_MAX: usize = 1024;

/// The property holding a type's records.
pub(crate) fn records_property(kind: Kind, t: Rtype) -> &'static str {
    match (kind, t) {
        (Kind::Public, Rtype::A) => "ARecords",
        (Kind::Public, Rtype::Aaaa) => "AAAARecords",
        (Kind::Public, Rtype::Caa) => "caaRecords",
        (Kind::Public, Rtype::Cname) => "CNAMERecord",
        (Kind::Public, Rtype::Mx) => "MXRecords",
        (Kind::Public, Rtype::Ns) => "NSRecords",
        (Kind::Public, Rtype::Ptr) => "PTRRecords",
        (Kind::Public, Rtype::Soa) => "SOARecord",
        (Kind::Public, Rtype::Srv) => "SRVRecords",
        (Kind::Public, Rtype::Txt) => "TXTRecords",
        (Kind::Private, Rtype::A) => "aRecords",
        (Kind::Private, Rtype::Aaaa) => "aaaaRecords",
        (Kind::Private, Rtype::Caa) => "caaRecords",
        (Kind::Private, Rtype::Cname) => "cnameRecord",
        (Kind::Private, Rtype::Mx) => "mxRecords",
        (Kind::Private, Rtype::Ns) => "nsRecords",
        (Kind::Private, Rtype::Ptr) => "ptrRecords",
        (Kind::Private, Rtype::Soa) => "soaRecord",
        (Kind::Private, Rtype::Srv) => "srvRecords",
        (Kind::Private, Rtype::Txt) => "txtRecords",
    }
}

fn ttl_property(kind: Kind) -> &'static str {
    match kind {
        Kind::Public => "TTL",
        Kind::Private => "ttl",
    }
}

/// A property of `obj` whatever its case.
fn prop<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
}

/// What a PUT or PATCH body says about a record set; `None` is "not given".
#[derive(Debug, Default)]
pub(crate) struct SetInput {
    pub ttl: Option<u64>,
    pub metadata: Option<BTreeMap<String, String>>,
    pub data: Option<Data>,
    pub target_resource: Option<String>,
}

fn bad(msg: impl Into<String>) -> ArmError {
    ArmError::bad_request(msg)
}

fn str_field(o: &Map<String, Value>, name: &str, what: &str) -> Result<String, ArmError> {
    match prop(o, name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None => Err(bad(format!("The {what} must be specified."))),
        Some(v) => Err(bad(format!("The {what} must be a string, not {v}."))),
    }
}

fn num_field(o: &Map<String, Value>, name: &str, what: &str, max: u64) -> Result<u64, ArmError> {
    match prop(o, name) {
        Some(v) => v.as_u64().filter(|n| *n <= max).ok_or_else(|| {
            bad(format!(
                "The {what} must be an integer from 0 to {max}, not {v}."
            ))
        }),
        None => Err(bad(format!("The {what} must be specified."))),
    }
}

fn objects<'a>(v: &'a Value, what: &str) -> Result<Vec<&'a Map<String, Value>>, ArmError> {
    let arr = v
        .as_array()
        .ok_or_else(|| bad(format!("{what} must be an array.")))?;
    arr.iter()
        .map(|x| {
            x.as_object()
                .ok_or_else(|| bad(format!("Each entry of {what} must be an object.")))
        })
        .collect()
}

/// Reads the records of type `t` from `v` (the value of its records property).
fn parse_data(kind: Kind, t: Rtype, v: &Value) -> Result<Data, ArmError> {
    let p = records_property(kind, t);
    let u16max = u64::from(u16::MAX);
    Ok(match t {
        Rtype::A => Data::A(
            objects(v, p)?
                .into_iter()
                .map(|o| {
                    let a = str_field(o, "ipv4Address", "IPv4 address")?;
                    a.parse::<std::net::Ipv4Addr>()
                        .map_err(|_| bad(format!("The IPv4 address '{a}' is invalid.")))?;
                    Ok(a)
                })
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Aaaa => Data::Aaaa(
            objects(v, p)?
                .into_iter()
                .map(|o| {
                    let a = str_field(o, "ipv6Address", "IPv6 address")?;
                    a.parse::<std::net::Ipv6Addr>()
                        .map_err(|_| bad(format!("The IPv6 address '{a}' is invalid.")))?;
                    Ok(a)
                })
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Caa => Data::Caa(
            objects(v, p)?
                .into_iter()
                .map(|o| {
                    Ok(Caa {
                        flags: num_field(o, "flags", "CAA flags", 255)? as u8,
                        tag: str_field(o, "tag", "CAA tag")?,
                        value: match prop(o, "value") {
                            Some(Value::String(s)) => s.clone(),
                            _ => return Err(bad("The CAA value must be specified.")),
                        },
                    })
                })
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Cname => {
            let o = v
                .as_object()
                .ok_or_else(|| bad(format!("{p} must be an object.")))?;
            Data::Cname(Some(str_field(o, "cname", "canonical name")?))
        }
        Rtype::Mx => Data::Mx(
            objects(v, p)?
                .into_iter()
                .map(|o| {
                    Ok(Mx {
                        preference: num_field(o, "preference", "MX preference", u16max)? as u16,
                        exchange: str_field(o, "exchange", "MX exchange")?,
                    })
                })
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Ns => Data::Ns(
            objects(v, p)?
                .into_iter()
                .map(|o| str_field(o, "nsdname", "NS domain name"))
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Ptr => Data::Ptr(
            objects(v, p)?
                .into_iter()
                .map(|o| str_field(o, "ptrdname", "PTR domain name"))
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Srv => Data::Srv(
            objects(v, p)?
                .into_iter()
                .map(|o| {
                    Ok(Srv {
                        priority: num_field(o, "priority", "SRV priority", u16max)? as u16,
                        weight: num_field(o, "weight", "SRV weight", u16max)? as u16,
                        port: num_field(o, "port", "SRV port", u16max)? as u16,
                        target: str_field(o, "target", "SRV target")?,
                    })
                })
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Txt => Data::Txt(
            objects(v, p)?
                .into_iter()
                .map(|o| {
                    let strings = prop(o, "value")
                        .and_then(Value::as_array)
                        .filter(|a| !a.is_empty())
                        .ok_or_else(|| bad("A TXT record must have a value: a list of strings."))?;
                    strings
                        .iter()
                        .map(|s| {
                            let s = s
                                .as_str()
                                .ok_or_else(|| bad("TXT values must be strings."))?;
                            if s.chars().count() > TXT_STRING_MAX {
                                return Err(bad(format!(
                                    "A TXT record string is {} characters long; the limit is {TXT_STRING_MAX}.",
                                    s.chars().count()
                                )));
                            }
                            Ok(s.to_string())
                        })
                        .collect::<Result<Vec<_>, ArmError>>()
                })
                .collect::<Result<_, ArmError>>()?,
        ),
        Rtype::Soa => {
            let o = v
                .as_object()
                .ok_or_else(|| bad(format!("{p} must be an object.")))?;
            let n = |name: &str| num_field(o, name, &format!("SOA {name}"), u64::from(u32::MAX));
            Data::Soa(Some(Soa {
                host: prop(o, "host")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                email: str_field(o, "email", "SOA email")?,
                serial: n("serialNumber").unwrap_or(1),
                refresh: n("refreshTime")?,
                retry: n("retryTime")?,
                expire: n("expireTime")?,
                minimum: n("minimumTTL")?,
            }))
        }
    })
}

/// Reads a record-set body for a set of type `t` in a `kind` zone.
pub(crate) fn parse_set(kind: Kind, t: Rtype, body: &[u8]) -> Result<SetInput, ArmError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("The request body is not valid JSON: {e}")))?;
    let top = v
        .as_object()
        .ok_or_else(|| bad("The request body must be a JSON object."))?;
    let mut input = SetInput::default();
    let Some(props) = prop(top, "properties") else {
        return Ok(input);
    };
    let props = props
        .as_object()
        .ok_or_else(|| bad("properties must be an object."))?;
    if let Some(ttl) = prop(props, ttl_property(kind)) {
        input.ttl = Some(
            ttl.as_u64()
                .filter(|n| *n <= i32::MAX as u64)
                .ok_or_else(|| {
                    bad(format!(
                        "The TTL {ttl} is invalid: it must be an integer from 0 to 2147483647."
                    ))
                })?,
        );
    }
    if let Some(m) = prop(props, "metadata") {
        let m = m
            .as_object()
            .ok_or_else(|| bad("metadata must be an object of strings."))?;
        input.metadata = Some(
            m.iter()
                .map(|(k, v)| {
                    v.as_str()
                        .map(|s| (k.clone(), s.to_string()))
                        .ok_or_else(|| bad(format!("metadata '{k}' must be a string.")))
                })
                .collect::<Result<_, ArmError>>()?,
        );
    }
    if kind == Kind::Public
        && let Some(tr) = prop(props, "targetResource")
    {
        input.target_resource = tr
            .as_object()
            .and_then(|o| prop(o, "id"))
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    for other in kind.types() {
        let name = records_property(kind, *other);
        let Some(v) = prop(props, name) else { continue };
        if *other != t {
            // An empty list of another type is harmless; records of it are not.
            if v.as_array().is_some_and(|a| a.is_empty()) {
                continue;
            }
            return Err(bad(format!(
                "The record set of type '{}' cannot contain records of type '{}' ({name}).",
                t.as_str(),
                other.as_str()
            )));
        }
        input.data = Some(parse_data(kind, t, v)?);
    }
    Ok(input)
}

/// The ARM id of a zone.
pub(crate) fn zone_id(z: &Zone) -> String {
    format!(
        "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/{}/{}",
        z.subscription,
        z.resource_group,
        z.kind.segment(),
        z.name
    )
}

fn data_json(kind: Kind, d: &Data) -> Value {
    match d {
        Data::A(v) => v.iter().map(|a| json!({ "ipv4Address": a })).collect(),
        Data::Aaaa(v) => v.iter().map(|a| json!({ "ipv6Address": a })).collect(),
        Data::Caa(v) => v
            .iter()
            .map(|c| json!({ "flags": c.flags, "tag": c.tag, "value": c.value }))
            .collect(),
        Data::Cname(c) => match c {
            Some(c) => json!({ "cname": c }),
            None => Value::Null,
        },
        Data::Mx(v) => v
            .iter()
            .map(|m| json!({ "preference": m.preference, "exchange": m.exchange }))
            .collect(),
        Data::Ns(v) => v.iter().map(|n| json!({ "nsdname": n })).collect(),
        Data::Ptr(v) => v.iter().map(|n| json!({ "ptrdname": n })).collect(),
        Data::Srv(v) => v
            .iter()
            .map(|s| {
                json!({ "priority": s.priority, "weight": s.weight, "port": s.port, "target": s.target })
            })
            .collect(),
        Data::Txt(v) => v.iter().map(|s| json!({ "value": s })).collect(),
        Data::Soa(s) => match s {
            Some(s) => {
                let min = match kind {
                    Kind::Public => "minimumTTL",
                    Kind::Private => "minimumTtl",
                };
                json!({
                    "host": s.host, "email": s.email, "serialNumber": s.serial,
                    "refreshTime": s.refresh, "retryTime": s.retry,
                    "expireTime": s.expire, min: s.minimum,
                })
            }
            None => Value::Null,
        },
    }
}

/// A record set as the API returns it.
pub(crate) fn set_json(z: &Zone, s: &RecordSet) -> Value {
    let kind = z.kind;
    let mut props = Map::new();
    if !s.metadata.is_empty() {
        props.insert("metadata".into(), json!(s.metadata));
    }
    props.insert(ttl_property(kind).into(), json!(s.ttl));
    props.insert("fqdn".into(), json!(z.fqdn(&s.name)));
    match kind {
        Kind::Public => {
            props.insert("provisioningState".into(), json!("Succeeded"));
            props.insert(
                "targetResource".into(),
                match &s.target_resource {
                    Some(id) => json!({ "id": id }),
                    None => json!({}),
                },
            );
        }
        Kind::Private => {
            props.insert("isAutoRegistered".into(), json!(false));
        }
    }
    let d = data_json(kind, &s.data);
    if !d.is_null() {
        props.insert(records_property(kind, s.rtype).into(), d);
    }
    json!({
        "id": format!("{}/{}/{}", zone_id(z), s.rtype.as_str(), s.name),
        "name": s.name,
        "type": format!("Microsoft.Network/{}/{}", kind.segment(), s.rtype.as_str()),
        "etag": s.etag,
        "properties": props,
    })
}

/// A zone as the API returns it; `max_sets` is its record-set limit.
pub(crate) fn zone_json(z: &Zone, max_sets: usize, max_records: usize) -> Value {
    let props = match z.kind {
        Kind::Public => json!({
            "maxNumberOfRecordSets": max_sets,
            "maxNumberOfRecordsPerRecordSet": max_records,
            "numberOfRecordSets": z.sets.len(),
            "nameServers": super::model::NAME_SERVERS,
            "zoneType": "Public",
        }),
        Kind::Private => json!({
            "maxNumberOfRecordSets": max_sets,
            "numberOfRecordSets": z.sets.len(),
            "maxNumberOfVirtualNetworkLinks": 1000,
            "numberOfVirtualNetworkLinks": 0,
            "maxNumberOfVirtualNetworkLinksWithRegistration": 100,
            "numberOfVirtualNetworkLinksWithRegistration": 0,
            "provisioningState": "Succeeded",
            "internalId": format!("emulator-{}", z.etag),
        }),
    };
    json!({
        "id": zone_id(z),
        "name": z.name,
        "type": format!("Microsoft.Network/{}", z.kind.segment()),
        "etag": z.etag,
        "location": "global",
        "tags": z.tags,
        "properties": props,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_and_private_spellings() {
        let body = br#"{"properties":{"TTL":300,"metadata":{"k":"v"},"ARecords":[{"ipv4Address":"192.0.2.1"}]}}"#;
        let i = parse_set(Kind::Public, Rtype::A, body).unwrap();
        assert_eq!(i.ttl, Some(300));
        assert_eq!(i.data, Some(Data::A(vec!["192.0.2.1".into()])));
        // Case does not matter on the way in.
        let i = parse_set(
            Kind::Private,
            Rtype::A,
            br#"{"properties":{"ttl":5,"aRecords":[{"ipv4Address":"10.0.0.1"}]}}"#,
        )
        .unwrap();
        assert_eq!(i.ttl, Some(5));
        let e = parse_set(
            Kind::Public,
            Rtype::A,
            br#"{"properties":{"TTL":1,"TXTRecords":[{"value":["x"]}]}}"#,
        )
        .unwrap_err();
        assert_eq!(e.code, "BadRequest");
        let long = "x".repeat(TXT_STRING_MAX + 1);
        let body = format!(r#"{{"properties":{{"TTL":1,"TXTRecords":[{{"value":["{long}"]}}]}}}}"#);
        assert!(parse_set(Kind::Public, Rtype::Txt, body.as_bytes()).is_err());
        assert!(
            parse_set(
                Kind::Public,
                Rtype::A,
                br#"{"properties":{"TTL":1,"ARecords":[{"ipv4Address":"300.1.1.1"}]}}"#
            )
            .is_err()
        );
    }

    #[test]
    fn answers_use_the_descriptions_names() {
        let z = Zone::new(Kind::Public, "sub", "rg", "example.com");
        let soa = set_json(&z, z.get("@", Rtype::Soa).unwrap());
        assert_eq!(soa["type"], "Microsoft.Network/dnszones/SOA");
        assert_eq!(soa["name"], "@");
        assert_eq!(soa["properties"]["fqdn"], "example.com.");
        assert_eq!(soa["properties"]["SOARecord"]["minimumTTL"], 300);
        assert_eq!(
            soa["id"],
            "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/dnszones/example.com/SOA/@"
        );
        let p = Zone::new(Kind::Private, "sub", "rg", "corp.internal");
        let soa = set_json(&p, p.get("@", Rtype::Soa).unwrap());
        assert_eq!(soa["properties"]["soaRecord"]["minimumTtl"], 10);
        assert_eq!(soa["properties"]["ttl"], 3600);
        assert_eq!(
            zone_json(&z, 10000, 20)["properties"]["numberOfRecordSets"],
            2
        );
    }
}
