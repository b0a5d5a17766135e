//! Reads of Azure: pages of listings (`$top`, `nextLink`; every page must answer),
//! a zone read whole or name by name, and the whole read the listing cache keeps.
use super::wire::{self, Page, Parsed, ReadSet, WireSet};
use super::{AzureProvider, PAGE, PER_NAME_READ_LIMIT};
use crate::provider::call::Pacer;
use crate::provider::precondition::ZoneRead;
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::Name;
use reqwest::{Method, Url};
use std::collections::BTreeSet;

impl AzureProvider {
    /// Follows `nextLink`s from `first`; every page must answer, or the read fails.
    pub(super) async fn pages<T: serde::de::DeserializeOwned>(
        &self,
        first: Url,
        pacer: &Pacer,
    ) -> Result<Vec<T>, ProviderError> {
        let mut out = Vec::new();
        let mut next = Some(first);
        while let Some(url) = next.take() {
            let what = format!("GET {}", url.path());
            let a = self.send(Method::GET, url, &[], None, pacer).await?;
            if a.status != 200 {
                return Err(self.fail(&a, &what, false, None));
            }
            let page: Page<T> = serde_json::from_slice(&a.body).map_err(|e| {
                ProviderError::new(
                    ErrorClass::Transient,
                    format!("{what}: cannot decode Azure's answer: {e}"),
                )
            })?;
            out.extend(page.value);
            if let Some(link) = page.next_link.filter(|l| !l.trim().is_empty()) {
                next = Some(self.next_link(&link, &what)?);
            }
        }
        Ok(out)
    }

    /// A `nextLink`, which must point at the endpoint (the token goes with it).
    fn next_link(&self, link: &str, what: &str) -> Result<Url, ProviderError> {
        let url = Url::parse(link).map_err(|e| {
            ProviderError::new(
                ErrorClass::Transient,
                format!("{what}: Azure's nextLink {link:?} is not a URL: {e}"),
            )
        })?;
        if url.origin() != self.base.origin() {
            return Err(ProviderError::new(
                ErrorClass::Transient,
                format!(
                    "{what}: Azure's nextLink points at {}, not at the endpoint",
                    url.origin().ascii_serialization()
                ),
            ));
        }
        Ok(url)
    }

    /// The record sets of `zone` (those named `suffix` by Azure's suffix filter, or
    /// all), as a read.
    async fn list_sets(
        &self,
        zone: &Name,
        suffix: Option<&str>,
        pacer: &Pacer,
    ) -> Result<Vec<ReadSet>, ProviderError> {
        let z = zone.as_str().trim_end_matches('.');
        let top = PAGE.to_string();
        let mut q: Vec<(&str, &str)> = vec![("$top", &top)];
        if let Some(s) = suffix {
            q.push(("$recordsetnamesuffix", s));
        }
        let url = self.url(&[z, self.flavor.list_segment()], &q);
        let sets: Vec<WireSet> = self.pages(url, pacer).await.map_err(|e| {
            if e.class == ErrorClass::Invalid {
                // A listing refused outright (a 4xx) is the zone or the request,
                // not one record: nothing a retry or a bisection mends.
                ProviderError {
                    class: ErrorClass::Permanent,
                    ..e
                }
            } else {
                e
            }
        })?;
        Ok(sets
            .iter()
            .filter(|w| suffix.is_none_or(|s| w.name.eq_ignore_ascii_case(s)))
            .map(|w| wire::from_wire(self.flavor, zone, w))
            .collect())
    }

    /// A read of `zone`, whole or at `names`; every set's etag is remembered.
    pub(super) async fn read(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<ZoneRead, ProviderError> {
        let sets = match names {
            Some(ns) if ns.len() <= PER_NAME_READ_LIMIT => {
                let mut all = Vec::new();
                for n in ns {
                    let rel = wire::relative_name(zone, n);
                    all.extend(self.list_sets(zone, Some(&rel), pacer).await?);
                }
                all
            }
            _ => self.list_sets(zone, None, pacer).await?,
        };
        let mut read = ZoneRead::default();
        for s in &sets {
            let key = match &s.parsed {
                Parsed::Set(set) => set.key.clone(),
                Parsed::Opaque(k) => k.clone(),
                Parsed::Skip => continue,
            };
            if names.is_some_and(|ns| !ns.contains(&key.name)) {
                continue;
            }
            self.learn(&key, Some(s));
            read.types
                .entry(key.name.clone())
                .or_default()
                .insert(key.rtype);
            match &s.parsed {
                Parsed::Set(set) => {
                    read.rrsets.insert(key, set.clone());
                }
                _ => {
                    read.opaque.insert(key);
                }
            }
        }
        Ok(read)
    }
}
