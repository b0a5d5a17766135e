//! `ListRecordStates`: one page of record states, of every target, of one target, or
//! of one name at every target of its zone (each value with its sources).
use super::PlannerService;
use super::encode::{kind_from_pb, parse_token, record_state_to_pb, token};
use super::target_status;
use crate::engine::{Engine, RecordStatesQuery};
use crate::target::TargetError;
use dnsplane_common::convert::FieldError;
use dnsplane_common::{Name, pb};
use tonic::{Response, Status};

/// Page size limits for record-state listings.
const DEFAULT_PAGE: usize = 500;
const MAX_PAGE: usize = 5_000;

impl PlannerService {
    pub(super) async fn list_record_states_admitted(
        &self,
        req: pb::ListRecordStatesRequest,
    ) -> Result<Response<pb::ListRecordStatesResponse>, Status> {
        // One name: every target of its zone (unless `account` names one), converged
        // records too, each value with its sources.
        let name = if req.name.is_empty() {
            None
        } else {
            let n = Name::parse(&req.name)
                .map_err(|e| FieldError::new("name", format!("{:?}: {e}", req.name)))?;
            Some(n)
        };
        let targets = if let Some(n) = &name {
            let zone = self
                .zone_of(n)
                .cloned()
                .ok_or_else(|| FieldError::new("name", format!("{n} is in no configured zone")))?;
            self.targets_of(std::slice::from_ref(&zone), &req.account)?
        } else if req.zone.is_empty() {
            if req.account.is_empty() {
                Vec::new()
            } else {
                let zones: Vec<Name> = self.engine.zone_names().cloned().collect();
                self.targets_of(&zones, &req.account)?
            }
        } else {
            match self.engine.target(&req.zone, &req.account) {
                Ok(t) => vec![t],
                Err(e @ TargetError::UnknownZone { .. }) => {
                    return Err(FieldError::new(
                        "zone",
                        format!("{:?} is not a configured zone ({e})", req.zone),
                    )
                    .into());
                }
                Err(e) => return Err(target_status(&e)),
            }
        };
        let mut states = Vec::new();
        for (i, s) in req.states.iter().enumerate() {
            match kind_from_pb(*s) {
                Some(k) => states.push(k),
                None => {
                    return Err(FieldError::new(
                        format!("states[{i}]"),
                        format!("unknown state {s}"),
                    )
                    .into());
                }
            }
        }
        let page_size = match req.page_size as usize {
            0 => DEFAULT_PAGE,
            n => n.min(MAX_PAGE),
        };
        let after = if req.page_token.is_empty() {
            None
        } else {
            let bad = || FieldError::new("page_token", "not a token this server issued");
            let (account, key) = parse_token(&req.page_token).ok_or_else(bad)?;
            let target = self
                .engine
                .target(key.zone.as_str(), &account)
                .map_err(|_| bad())?;
            Some((target, key))
        };
        let page = Engine::cpu(|| {
            self.engine.record_states(&RecordStatesQuery {
                targets,
                states,
                include_converged: req.include_converged || name.is_some(),
                name,
                after,
                page_size,
            })
        });
        Ok(Response::new(pb::ListRecordStatesResponse {
            records: page
                .records
                .iter()
                .map(|(t, k, s)| {
                    let mut r = record_state_to_pb(k, s, page.labels.get(k));
                    r.account = t.account.to_string();
                    r.sources = page
                        .sources
                        .get(k)
                        .into_iter()
                        .flatten()
                        .map(|(value, sources)| pb::ValueSources {
                            value: value.clone(),
                            sources: sources.clone(),
                        })
                        .collect();
                    r
                })
                .collect(),
            next_page_token: page
                .next
                .as_ref()
                .map(|(t, k)| token(&t.account, k))
                .unwrap_or_default(),
        }))
    }
}
