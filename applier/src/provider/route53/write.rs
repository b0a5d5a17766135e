//! Writing one batch: the "absent" preconditions checked by a read, the ops as one
//! `ChangeResourceRecordSets` (a DELETE of each set as it was, a CREATE of each as it
//! will be), and the servers that check CREATEs before the batch ([`super::upsert`]).
use super::upsert;
use super::wire::{self, Action, OutChange};
use super::{Route53Provider, decode, sets};
use crate::provider::call::Pacer;
use crate::provider::{ErrorClass, Provider, ProviderError, precondition};
use dnsplane_common::{Name, RRSetOp, RecordType};
use reqwest::Method;
use std::collections::BTreeSet;

impl Route53Provider {
    /// The ops in one change batch, each with its precondition.
    pub(super) async fn write(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        crate::provider::ensure_in_zone(zone, ops)?;
        // A set or property this driver cannot write is refused before any call (the
        // batch algorithm refuses it first; this guards a direct call).
        let caps = self.capabilities();
        if let Some((op, why)) = ops
            .iter()
            .find_map(|op| Some((op, caps.op_refusal(self.driver(), op)?)))
        {
            return Err(ProviderError::new(ErrorClass::Invalid, why).with_key(op.key.clone()));
        }
        // "Absent" is the one precondition Route 53 cannot check in a batch.
        let absent = precondition::absent_names(ops);
        if !absent.is_empty() {
            let read = self.read(zone, Some(&absent), pacer).await?;
            self.cache.refresh(zone, &absent, &read.zone);
            precondition::check_absent(ops, &read.zone.rrsets, &read.zone.opaque)?;
        }
        if ops
            .iter()
            .all(|op| op.before.is_none() && op.after.is_none())
        {
            return Ok(());
        }
        let id = self.zone_id(zone).await?;
        let mut changes: Vec<OutChange<'_>> = Vec::new();
        for op in ops {
            if let Some(before) = &op.before {
                // In the spelling Route 53 holds it in.
                let body = self
                    .spellings
                    .for_delete(before)
                    .unwrap_or_else(|| sets::body_of(before, &id));
                changes.push(OutChange {
                    action: Action::Delete,
                    key: &op.key,
                    body,
                });
            }
            if let Some(after) = &op.after {
                changes.push(OutChange {
                    action: Action::Create,
                    key: &op.key,
                    body: sets::body_of(after, &id),
                });
            }
        }
        if self.upsert.on() {
            upsert::upsert_after_delete(&mut changes);
        }
        let url = self.url(&["hostedzone", &id, "rrset"], &[]);
        let send = |changes: &[OutChange<'_>]| {
            let body = wire::change_batch("dnsplane", changes);
            self.exchange(Method::POST, url.clone(), Some(body), Some(zone), pacer)
        };
        let answer = match send(&changes).await {
            Ok(answer) => answer,
            Err((_, body))
                if !self.upsert.on() && upsert::refused_in_order(zone, &changes, &body) =>
            {
                if self.upsert.learn() {
                    tracing::warn!(
                        zone = %zone,
                        endpoint = %self.api,
                        "This Route 53 endpoint refused a CREATE that follows the DELETE of the same record set in one change batch (\"… but it already exists\"): it checks each CREATE against the zone as it was before the batch, as moto and LocalStack do (AWS applies a batch in order). From now on this account sends UPSERT after such a DELETE; the DELETE still checks the set's values."
                    );
                }
                upsert::upsert_after_delete(&mut changes);
                send(&changes).await.map_err(|(e, _)| e)?
            }
            // Only where the server was seen checking CREATEs before the batch (moto):
            // against AWS a refused CREATE is a conflict, settled without this read.
            Err((e, body)) if self.upsert.on() => {
                let refused = upsert::refused_creates(zone, &changes, &body);
                if refused.is_empty() {
                    return Err(e);
                }
                // Refused as existing: a read says whether the server is right (a
                // conflict) or checks against sets it held before (moto). moto names
                // only the first CREATE it refuses, so every set the batch CREATEs is
                // read, and each one found absent goes again as UPSERT.
                let creates: Vec<(Name, RecordType)> = changes
                    .iter()
                    .filter(|c| c.action == Action::Create)
                    .map(|c| (c.key.name.clone(), c.key.rtype))
                    .collect();
                let names: BTreeSet<Name> = creates.iter().map(|(n, _)| n.clone()).collect();
                let read = self.read(zone, Some(&names), pacer).await?;
                let held = |n: &Name, t: RecordType| {
                    read.zone
                        .rrsets
                        .keys()
                        .chain(read.zone.opaque.iter())
                        .any(|k| &k.name == n && k.rtype == t)
                };
                if refused.iter().any(|(n, t)| held(n, *t)) {
                    return Err(e);
                }
                let absent: Vec<(Name, RecordType)> =
                    creates.into_iter().filter(|(n, t)| !held(n, *t)).collect();
                tracing::info!(zone = %zone, sets = absent.len(), "This Route 53 endpoint refused a CREATE of a record set a read finds absent (it checks CREATEs against sets it held before, as moto does): sent again as UPSERT.");
                upsert::upsert_creates(&mut changes, &absent);
                send(&changes).await.map_err(|(e, _)| e)?
            }
            Err((e, _)) => return Err(e),
        };
        // Committed: the cache follows. (A failed batch leaves it: Route 53 checks
        // every precondition itself, so a stale entry costs a conflict and the read
        // that settles it, never a wrong write.)
        self.cache.committed(zone, ops);
        if let Some(limit) = self.wait_insync {
            match decode::<wire::ChangeAnswer>(&answer, "ChangeResourceRecordSets") {
                Ok(a) => self.wait_insync(&a.change_info.id, limit, pacer).await?,
                Err(e) => {
                    tracing::warn!(zone = %zone, error = %e, "Route 53 accepted the change but its answer names no change to wait for.");
                }
            }
        }
        Ok(())
    }
}
