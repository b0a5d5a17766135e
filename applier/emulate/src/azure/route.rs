//! Routing a request to one of the calls the emulator serves: ARM paths under
//! `/subscriptions/{sub}[/resourceGroups/{rg}]/providers/Microsoft.Network/{dnsZones|
//! privateDnsZones}/…` (fixed segments without regard to case, as ARM reads them) and
//! the token endpoint `/{tenant}/oauth2/v2.0/token`.
use super::errors::ArmError;
use super::model::{Kind, Rtype};
use super::throttle::Class;
use http::Method;

/// A zone as a path names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ZoneRef {
    pub kind: Kind,
    pub sub: String,
    pub rg: String,
    pub zone: String,
}

/// A record set as a path names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SetRef {
    pub zone: ZoneRef,
    pub rtype: Rtype,
    pub name: String,
}

/// The calls the emulator answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Token {
        tenant: String,
    },
    ListZones {
        kind: Kind,
        sub: String,
        rg: Option<String>,
    },
    GetZone(ZoneRef),
    PutZone(ZoneRef),
    PatchZone(ZoneRef),
    DeleteZone(ZoneRef),
    /// By type, or every set (`/recordsets`, `/all`) when `rtype` is `None`.
    ListSets {
        zone: ZoneRef,
        rtype: Option<Rtype>,
    },
    GetSet(SetRef),
    PutSet(SetRef),
    PatchSet(SetRef),
    DeleteSet(SetRef),
}

/// The operation names fault rules use.
pub(crate) const FAULT_OPS: &[&str] = &[
    "zones",
    "list_record_sets",
    "get_record_set",
    "put_record_set",
    "patch_record_set",
    "delete_record_set",
    "token",
];

fn unimplemented(method: &Method, path: &str) -> ArmError {
    ArmError::new(
        501,
        "NotImplemented",
        format!(
            "The Azure DNS emulator does not implement {method} {path}; see docs/emulators.md for the calls it serves."
        ),
    )
}

fn bad_method(method: &Method) -> ArmError {
    ArmError::new(
        405,
        "MethodNotAllowed",
        format!("The requested resource does not support http method '{method}'."),
    )
}

fn rtype(kind: Kind, seg: &str) -> Result<Rtype, ArmError> {
    Rtype::parse(seg)
        .filter(|t| kind.types().contains(t))
        .ok_or_else(|| {
            ArmError::bad_request(format!(
                "The record type '{seg}' is not supported in {}. Supported types: {}.",
                kind.segment(),
                kind.types()
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

fn is(seg: &str, word: &str) -> bool {
    seg.eq_ignore_ascii_case(word)
}

fn kind_of(seg: &str) -> Option<Kind> {
    if is(seg, "dnsZones") {
        Some(Kind::Public)
    } else if is(seg, "privateDnsZones") {
        Some(Kind::Private)
    } else {
        None
    }
}

impl Op {
    /// Routes `method path` (the path percent-decoded segment by segment).
    pub fn route(method: &Method, path: &str) -> Result<Op, ArmError> {
        let segs: Vec<String> = path
            .trim_end_matches('/')
            .split('/')
            .skip(1)
            .map(percent_decode)
            .collect();
        let s: Vec<&str> = segs.iter().map(String::as_str).collect();
        if let [tenant, o, v, t] = s.as_slice()
            && is(o, "oauth2")
            && is(v, "v2.0")
            && is(t, "token")
        {
            return match *method {
                Method::POST => Ok(Op::Token {
                    tenant: tenant.to_string(),
                }),
                _ => Err(bad_method(method)),
            };
        }
        let no = || unimplemented(method, path);
        let (sub, rest) = match s.as_slice() {
            [subs, sub, rest @ ..] if is(subs, "subscriptions") => (sub.to_string(), rest),
            _ => return Err(no()),
        };
        let (rg, rest) = match rest {
            [rgs, rg, rest @ ..] if is(rgs, "resourceGroups") => (Some(rg.to_string()), rest),
            rest => (None, rest),
        };
        let (kind, rest) = match rest {
            [p, ns, seg, rest @ ..] if is(p, "providers") && is(ns, "Microsoft.Network") => {
                (kind_of(seg).ok_or_else(no)?, rest)
            }
            _ => return Err(no()),
        };
        let Some(rg) = rg else {
            return match (rest, method) {
                ([], &Method::GET) => Ok(Op::ListZones {
                    kind,
                    sub,
                    rg: None,
                }),
                ([], _) => Err(bad_method(method)),
                _ => Err(no()),
            };
        };
        let zref = |zone: &str| ZoneRef {
            kind,
            sub: sub.clone(),
            rg: rg.clone(),
            zone: zone.trim_end_matches('.').to_string(),
        };
        Ok(match rest {
            [] => match *method {
                Method::GET => Op::ListZones {
                    kind,
                    sub: sub.clone(),
                    rg: Some(rg.clone()),
                },
                _ => return Err(bad_method(method)),
            },
            [zone] => match *method {
                Method::GET => Op::GetZone(zref(zone)),
                Method::PUT => Op::PutZone(zref(zone)),
                Method::PATCH => Op::PatchZone(zref(zone)),
                Method::DELETE => Op::DeleteZone(zref(zone)),
                _ => return Err(bad_method(method)),
            },
            [_, link, ..] if is(link, "virtualNetworkLinks") => return Err(no()),
            [zone, all] if is(all, "all") || (kind == Kind::Public && is(all, "recordsets")) => {
                match *method {
                    Method::GET => Op::ListSets {
                        zone: zref(zone),
                        rtype: None,
                    },
                    _ => return Err(bad_method(method)),
                }
            }
            [zone, t] => match *method {
                Method::GET => Op::ListSets {
                    zone: zref(zone),
                    rtype: Some(rtype(kind, t)?),
                },
                _ => return Err(bad_method(method)),
            },
            [zone, t, name] => {
                let set = SetRef {
                    zone: zref(zone),
                    rtype: rtype(kind, t)?,
                    name: name.to_string(),
                };
                match *method {
                    Method::GET => Op::GetSet(set),
                    Method::PUT => Op::PutSet(set),
                    Method::PATCH => Op::PatchSet(set),
                    Method::DELETE => Op::DeleteSet(set),
                    _ => return Err(bad_method(method)),
                }
            }
            _ => return Err(no()),
        })
    }

    /// The call's name in stats (the API description's operation ids).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Token { .. } => "Token",
            Op::ListZones { rg: None, .. } => "Zones_List",
            Op::ListZones { .. } => "Zones_ListByResourceGroup",
            Op::GetZone(_) => "Zones_Get",
            Op::PutZone(_) => "Zones_CreateOrUpdate",
            Op::PatchZone(_) => "Zones_Update",
            Op::DeleteZone(_) => "Zones_Delete",
            Op::ListSets { rtype: None, .. } => "RecordSets_ListAllByDnsZone",
            Op::ListSets { .. } => "RecordSets_ListByType",
            Op::GetSet(_) => "RecordSets_Get",
            Op::PutSet(_) => "RecordSets_CreateOrUpdate",
            Op::PatchSet(_) => "RecordSets_Update",
            Op::DeleteSet(_) => "RecordSets_Delete",
        }
    }

    /// The fault-rule operation name.
    pub fn fault_op(&self) -> &'static str {
        match self {
            Op::Token { .. } => "token",
            Op::ListZones { .. }
            | Op::GetZone(_)
            | Op::PutZone(_)
            | Op::PatchZone(_)
            | Op::DeleteZone(_) => "zones",
            Op::ListSets { .. } => "list_record_sets",
            Op::GetSet(_) => "get_record_set",
            Op::PutSet(_) => "put_record_set",
            Op::PatchSet(_) => "patch_record_set",
            Op::DeleteSet(_) => "delete_record_set",
        }
    }

    /// Reads, writes or deletes, for the subscription quota.
    pub fn class(&self) -> Class {
        match self {
            Op::Token { .. }
            | Op::ListZones { .. }
            | Op::GetZone(_)
            | Op::ListSets { .. }
            | Op::GetSet(_) => Class::Read,
            Op::DeleteZone(_) | Op::DeleteSet(_) => Class::Delete,
            _ => Class::Write,
        }
    }

    /// The subscription the call is in (none for the token endpoint).
    pub fn subscription(&self) -> Option<&str> {
        match self {
            Op::Token { .. } => None,
            Op::ListZones { sub, .. } => Some(sub),
            _ => self.zone().map(|z| z.sub.as_str()),
        }
    }

    /// The zone the call is on.
    pub fn zone(&self) -> Option<&ZoneRef> {
        match self {
            Op::GetZone(z) | Op::PutZone(z) | Op::PatchZone(z) | Op::DeleteZone(z) => Some(z),
            Op::ListSets { zone, .. } => Some(zone),
            Op::GetSet(s) | Op::PutSet(s) | Op::PatchSet(s) | Op::DeleteSet(s) => Some(&s.zone),
            _ => None,
        }
    }

    /// The resource kind (for the api-version check).
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Op::Token { .. } => None,
            Op::ListZones { kind, .. } => Some(*kind),
            _ => self.zone().map(|z| z.kind),
        }
    }
}

/// `%XX` decoding of one path segment (`@` may arrive as `%40`).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const Z: &str = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/dnsZones";

    #[test]
    fn routes_arm_paths() {
        let r = |m: Method, p: &str| Op::route(&m, p);
        assert!(matches!(
            r(Method::PUT, &format!("{Z}/example.com/A/www")),
            Ok(Op::PutSet(SetRef {
                rtype: Rtype::A,
                ..
            }))
        ));
        let Ok(Op::GetSet(s)) = r(Method::GET, &format!("{Z}/example.com/soa/%40")) else {
            panic!()
        };
        assert_eq!((s.name.as_str(), s.rtype), ("@", Rtype::Soa));
        assert!(matches!(
            r(Method::GET, &format!("{Z}/example.com/recordsets")),
            Ok(Op::ListSets { rtype: None, .. })
        ));
        assert!(matches!(
            r(
                Method::GET,
                "/subscriptions/s/providers/Microsoft.Network/dnszones"
            ),
            Ok(Op::ListZones { rg: None, .. })
        ));
        let p = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones/corp/ALL";
        assert!(matches!(
            r(Method::GET, p),
            Ok(Op::ListSets { rtype: None, .. })
        ));
        let p = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones/corp/NS/x";
        assert_eq!(r(Method::GET, p).unwrap_err().status, 400);
        assert!(matches!(
            r(Method::POST, "/tenant/oauth2/v2.0/token"),
            Ok(Op::Token { .. })
        ));
        assert_eq!(
            r(Method::POST, &format!("{Z}/example.com/A/www"))
                .unwrap_err()
                .status,
            405
        );
        assert_eq!(r(Method::GET, "/other").unwrap_err().status, 501);
        assert_eq!(percent_decode("a%2Ab%4"), "a*b%4");
    }
}
