//! Hosted zones by name: which id an account's zone is (public or private, or named
//! in the config), found with `ListHostedZonesByName`.
use super::{Route53Provider, Visibility, ZoneVisibility, decode, wire};
use crate::provider::call::Pacer;
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::Name;
use reqwest::Method;

impl Route53Provider {
    pub(super) fn visible(&self, z: &wire::HostedZone) -> bool {
        let v = if z.private() {
            Visibility::Private
        } else {
            Visibility::Public
        };
        match self.visibility {
            ZoneVisibility::Any => true,
            ZoneVisibility::Public => v == Visibility::Public,
            ZoneVisibility::Private => v == Visibility::Private,
        }
    }

    /// Hosted zones from `dnsname` on (all of them with `None`), page by page.
    pub(super) async fn hosted_zones(
        &self,
        dnsname: Option<&Name>,
        stop_after: Option<&Name>,
    ) -> Result<Vec<wire::HostedZone>, ProviderError> {
        let mut out = Vec::new();
        let mut next: Option<(String, Option<String>)> =
            dnsname.map(|n| (n.as_str().to_string(), None));
        loop {
            let mut q: Vec<(&str, &str)> = vec![("maxitems", "100")];
            if let Some((name, id)) = &next {
                q.push(("dnsname", name.as_str()));
                if let Some(id) = id {
                    q.push(("hostedzoneid", id.as_str()));
                }
            }
            let url = self.url(&["hostedzonesbyname"], &q);
            let body = self
                .call(Method::GET, url, None, None, &Pacer::default())
                .await?;
            let page: wire::ZonesPage = decode(&body, "ListHostedZonesByName")?;
            let mut past = false;
            for z in page.hosted_zones.hosted_zone {
                let name = Name::parse(&wire::decode_name(&z.name)).ok();
                if let (Some(stop), Some(name)) = (stop_after, &name)
                    && name != stop
                {
                    past = true;
                    break;
                }
                out.push(z);
            }
            if past || !page.is_truncated {
                return Ok(out);
            }
            match page.next_dns_name {
                Some(n) => next = Some((n, page.next_hosted_zone_id)),
                None => return Ok(out),
            }
        }
    }

    /// The hosted zone id of `zone`: from the config, or the one visible zone of that
    /// name. `Permanent` when there is none or more than one.
    pub(super) async fn zone_id(&self, zone: &Name) -> Result<String, ProviderError> {
        if let Some(id) = self.lock_ids().get(zone) {
            return Ok(id.clone());
        }
        let found: Vec<wire::HostedZone> = self
            .hosted_zones(Some(zone), Some(zone))
            .await?
            .into_iter()
            .filter(|z| self.visible(z))
            .collect();
        let ids: Vec<(String, bool)> = found
            .iter()
            .filter_map(|z| wire::bare_zone_id(&z.id).map(|id| (id.to_string(), z.private())))
            .collect();
        match ids.as_slice() {
            [] => Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "zone {zone} does not exist in the Route 53 account{}",
                    match self.visibility {
                        ZoneVisibility::Any => String::new(),
                        ZoneVisibility::Public => " (as a public hosted zone)".into(),
                        ZoneVisibility::Private => " (as a private hosted zone)".into(),
                    }
                ),
            )),
            [(id, _)] => {
                self.lock_ids().insert(zone.clone(), id.clone());
                Ok(id.clone())
            }
            many => Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "zone {zone} is ambiguous: the Route 53 account has {} hosted zones of that name ({}); set zone_ids or zone_visibility in the account",
                    many.len(),
                    many.iter()
                        .map(|(id, private)| format!(
                            "{id} {}",
                            if *private { "private" } else { "public" }
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}
