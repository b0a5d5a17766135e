//! `PlanProposed`: the dry run of a desired state that is not in force
//! (`dnsplane plan --desired`, a pull request's plan). The proposed records are
//! checked as a push is (each refusal named at its field), placed in a desired index
//! of their own that lives for the call, and each zone is planned against it exactly
//! as `Plan` plans against the state in force: the same planner, the same guard.
use super::PlannerService;
use super::admission::Ticket;
use super::encode::held_to_pb;
use super::plan::{PlanItem, plan_items};
use crate::desired::DesiredIndex;
use crate::engine::Engine;
use dnsplane_common::convert::FieldError;
use dnsplane_common::grpc::invalid_argument;
use dnsplane_common::pb;
use std::collections::BTreeMap;
use tonic::{Response, Status};

/// The source name the proposed records are checked and indexed under.
const PROPOSED: &str = "proposed";

/// The most records one proposed state may hold (a million-record zone plans).
pub(super) const MAX_PROPOSED_RECORDS: usize = 2_000_000;

impl PlannerService {
    pub(super) async fn plan_proposed_admitted(
        &self,
        t: &mut Ticket,
        mut stream: tonic::Streaming<pb::PlanProposedChunk>,
    ) -> Result<Response<pb::PlanResponse>, Status> {
        let mut first: Option<pb::PlanProposedChunk> = None;
        let mut records = Vec::new();
        let mut last = false;
        let mut chunks = 0usize;
        while let Some(mut chunk) = stream.message().await? {
            if last {
                return Err(FieldError::new(
                    "last",
                    format!("chunk {chunks} follows the chunk marked last; nothing planned"),
                )
                .into());
            }
            records.append(&mut chunk.records);
            if records.len() > MAX_PROPOSED_RECORDS {
                return Err(FieldError::new(
                    "records",
                    format!("more than {MAX_PROPOSED_RECORDS} records proposed; nothing planned"),
                )
                .into());
            }
            last = chunk.last;
            chunks += 1;
            first.get_or_insert(chunk);
        }
        let Some(first) = first.filter(|_| last) else {
            return Err(FieldError::new(
                "last",
                format!(
                    "the stream ended after {chunks} chunk(s) without one marked last (cancelled?); nothing planned"
                ),
            )
            .into());
        };
        let zones = self.scoped_zones(t, &first.zones)?;
        let zones = self.targets_of(&zones, &first.account)?;
        let request = pb::PutDesiredRequest {
            source: PROPOSED.into(),
            records,
        };
        let zones_cfg = &self.engine.config().zones;
        let started = std::time::Instant::now();
        let count = request.records.len();
        let proposed = Engine::cpu(|| {
            let (entries, checked) = super::validate_push_checked(zones_cfg, &request)?;
            let mut index = DesiredIndex::new(zones_cfg);
            index.update_source_checked(PROPOSED, checked, &entries, Vec::new());
            Ok::<_, Vec<FieldError>>(index)
        })
        .map_err(|errors| invalid_argument(&errors))?;
        let checked = started.elapsed();
        let empty = BTreeMap::new();
        let mut out = Vec::with_capacity(zones.len());
        for zone in &zones {
            let mut zp = pb::ZonePlan {
                zone: zone.zone.to_string(),
                account: zone.account.to_string(),
                ..Default::default()
            };
            let desired = proposed.zone(&zone.zone).unwrap_or(&empty);
            match self
                .engine
                .preview_against(zone, first.fresh, Some(desired))
                .await
            {
                Err(e) => zp.error = e.to_string(),
                Ok(preview) => {
                    zp.held = preview.held.as_ref().map(|h| held_to_pb(h, None));
                    for item in plan_items(&preview) {
                        match item {
                            PlanItem::Change(c) => zp.changes.push(c),
                            PlanItem::Blocked(b) => zp.blocked.push(*b),
                        }
                    }
                }
            }
            out.push(zp);
        }
        tracing::info!(
            records = count,
            zones = zones.len(),
            changes = out.iter().map(|z| z.changes.len()).sum::<usize>(),
            checked_ms = checked.as_millis() as u64,
            planned_ms = (started.elapsed() - checked).as_millis() as u64,
            "Planned a proposed desired state (nothing kept)."
        );
        Ok(Response::new(pb::PlanResponse {
            zones: out,
            next_page_token: String::new(),
        }))
    }
}
