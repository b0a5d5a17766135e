//! Reading a zone's sets, whole or at some names ([`super::cover`]), page by page.
use super::sets::Read;
use super::{PAGE, Route53Provider, cover, decode, wire};
use crate::provider::ProviderError;
use crate::provider::call::Pacer;
use dnsplane_common::Name;
use reqwest::Method;
use std::collections::BTreeSet;

impl Route53Provider {
    /// One page of `ListResourceRecordSets` from `start` (name, type, identifier).
    async fn page(
        &self,
        zone: &Name,
        id: &str,
        start: Option<(&str, Option<&str>, Option<&str>)>,
        pacer: &Pacer,
    ) -> Result<wire::RRSetsPage, ProviderError> {
        let max = PAGE.to_string();
        let mut q: Vec<(&str, &str)> = vec![("maxitems", max.as_str())];
        if let Some((name, rtype, ident)) = start {
            q.push(("name", name));
            if let Some(t) = rtype {
                q.push(("type", t));
            }
            if let Some(i) = ident {
                q.push(("identifier", i));
            }
        }
        let url = self.url(&["hostedzone", id, "rrset"], &q);
        let body = self.call(Method::GET, url, None, Some(zone), pacer).await?;
        decode(&body, "ListResourceRecordSets")
    }

    /// The zone's sets, all of them or those at `names`.
    pub(super) async fn read(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<Read, ProviderError> {
        let id = self.zone_id(zone).await?;
        let mut read = Read::default();
        match names {
            None => {
                let mut next: Option<(String, Option<String>, Option<String>)> = None;
                loop {
                    let start = next
                        .as_ref()
                        .map(|(n, t, i)| (n.as_str(), t.as_deref(), i.as_deref()));
                    let page = self.page(zone, &id, start, pacer).await?;
                    for set in page.resource_record_sets.resource_record_set {
                        read.add(zone, &id, set, None);
                    }
                    match (page.is_truncated, page.next_record_name) {
                        (true, Some(n)) => {
                            next = Some((n, page.next_record_type, page.next_record_identifier));
                        }
                        _ => break,
                    }
                }
            }
            Some(names) => {
                let mut cover = cover::Cover::new(names);
                while let Some(start) = cover.next_start() {
                    let mut seen = Vec::new();
                    let mut at = (start.as_str().to_string(), None, None);
                    // Follow the pages while they stop inside or before a wanted name.
                    // (where it stopped; whether that place is known)
                    let (boundary, gaps) = loop {
                        let page = self
                            .page(
                                zone,
                                &id,
                                Some((at.0.as_str(), at.1.as_deref(), at.2.as_deref())),
                                pacer,
                            )
                            .await?;
                        for set in page.resource_record_sets.resource_record_set {
                            if let Ok(n) = Name::parse(&wire::decode_name(&set.name)) {
                                seen.push(n);
                            }
                            read.add(zone, &id, set, Some(names));
                        }
                        let next = match (page.is_truncated, page.next_record_name) {
                            (true, Some(n)) => n,
                            _ => break (None, true),
                        };
                        let next_name = Name::parse(&wire::decode_name(&next)).ok();
                        match next_name {
                            Some(nn) if cover.wants(&nn) => {
                                at = (next, page.next_record_type, page.next_record_identifier);
                            }
                            Some(nn) => break (Some(nn), true),
                            // A name dnsplane cannot read: no gap can be inferred.
                            None => break (None, false),
                        }
                    };
                    seen.dedup();
                    cover.swept(&start, &seen, boundary.as_ref(), gaps);
                }
            }
        }
        let mut spellings = self.spellings.lock();
        for (key, raw) in &read.raw {
            if let Some(set) = read.zone.rrsets.get(key) {
                spellings.insert(key.clone(), (set.clone(), raw.clone()));
            }
        }
        for key in read.zone.rrsets.keys() {
            if !read.raw.contains_key(key) {
                spellings.remove(key);
            }
        }
        Ok(read)
    }
}
