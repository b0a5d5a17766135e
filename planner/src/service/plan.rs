//! `Plan`: the dry run of the desired state in force, in pages (each planned afresh),
//! and the order every plan lists its entries in (shared with `PlanProposed`).
use super::PlannerService;
use super::admission::Ticket;
use super::encode::{held_to_pb, record_state_to_pb};
use dnsplane_common::convert::FieldError;
use dnsplane_common::pb;
use tonic::{Response, Status};

/// Page size limits for plans.
const DEFAULT_PLAN_PAGE: usize = 1_000;
const MAX_PLAN_PAGE: usize = 10_000;

impl PlannerService {
    pub(super) async fn plan_admitted(
        &self,
        t: &mut Ticket,
        req: pb::PlanRequest,
    ) -> Result<Response<pb::PlanResponse>, Status> {
        let zones = self.scoped_zones(t, &req.zones)?;
        let zones = self.targets_of(&zones, &req.account)?;
        let page_size = match req.page_size as usize {
            0 => DEFAULT_PLAN_PAGE,
            n => n.min(MAX_PLAN_PAGE),
        };
        // The token is "<target index>:<items of that target already returned>".
        let (first_zone, mut skip) = if req.page_token.is_empty() {
            (0, 0)
        } else {
            req.page_token
                .split_once(':')
                .and_then(|(z, o)| Some((z.parse::<usize>().ok()?, o.parse::<usize>().ok()?)))
                .ok_or_else(|| FieldError::new("page_token", "not a token this server issued"))?
        };
        let mut out = Vec::new();
        let mut room = page_size;
        let mut next_page_token = String::new();
        for (zi, zone) in zones.iter().enumerate().skip(first_zone) {
            let mut zp = pb::ZonePlan {
                zone: zone.zone.to_string(),
                account: zone.account.to_string(),
                ..Default::default()
            };
            match self.engine.preview(zone, req.fresh).await {
                Err(e) => zp.error = e.to_string(),
                Ok(preview) => {
                    zp.held = preview.held.as_ref().map(|h| held_to_pb(h, None));
                    let total = preview.plan.changes.len()
                        + preview.plan.blocked.len()
                        + preview.withheld.len();
                    let taken: Vec<PlanItem> = plan_items(&preview).skip(skip).take(room).collect();
                    room -= taken.len();
                    for item in taken {
                        match item {
                            PlanItem::Change(c) => zp.changes.push(c),
                            PlanItem::Blocked(b) => zp.blocked.push(*b),
                        }
                    }
                    let returned = skip + zp.changes.len() + zp.blocked.len();
                    skip = 0;
                    if returned < total {
                        next_page_token = format!("{zi}:{returned}");
                        out.push(zp);
                        break;
                    }
                }
            }
            out.push(zp);
            if room == 0 {
                if zi + 1 < zones.len() {
                    next_page_token = format!("{}:0", zi + 1);
                }
                break;
            }
        }
        Ok(Response::new(pb::PlanResponse {
            zones: out,
            next_page_token,
        }))
    }
}

/// One entry of a plan page: a change, or a record held back.
pub(super) enum PlanItem {
    Change(pb::PlannedChange),
    Blocked(Box<pb::RecordState>),
}

/// A preview's entries in the order a plan lists them: changes, then the records the
/// plan leaves alone, then those waiting for their retry.
pub(super) fn plan_items(preview: &crate::engine::Preview) -> impl Iterator<Item = PlanItem> + '_ {
    let plan = &preview.plan;
    let changes = plan.changes.iter().map(|c| {
        PlanItem::Change(pb::PlannedChange {
            change: Some((&c.change).into()),
            reason: c.reason.clone(),
        })
    });
    let blocked = plan.blocked.iter().map(|b| {
        PlanItem::Blocked(Box::new(pb::RecordState {
            key: Some((&b.key).into()),
            state: pb::RecordStateKind::Conflict as i32,
            desired: b.desired.as_ref().map(Into::into),
            observed: b.observed.as_ref().map(Into::into),
            observed_owner: b.observed_owner.clone().unwrap_or_default(),
            conflict_reason: pb::ConflictReason::from(b.reason) as i32,
            reason: b.message.clone(),
            ..Default::default()
        }))
    });
    let withheld = preview
        .withheld
        .iter()
        .map(|(k, s)| PlanItem::Blocked(Box::new(record_state_to_pb(k, s, None))));
    changes.chain(blocked).chain(withheld)
}
