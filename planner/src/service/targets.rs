//! Which targets a call means: a zone (and account) into the targets it names, and
//! the gRPC status of a zone and account that name none or several.
use super::PlannerService;
use crate::target::{Target, TargetError};
use dnsplane_common::Name;
use dnsplane_common::convert::FieldError;
use tonic::Status;

impl PlannerService {
    /// The targets of `zones` a call that may act on several means: every target of
    /// each, or with `account` only those at it (INVALID_ARGUMENT, field `account`,
    /// when no zone named has a target there).
    pub(super) fn targets_of(&self, zones: &[Name], account: &str) -> Result<Vec<Target>, Status> {
        let all = zones.iter().flat_map(|z| {
            self.engine
                .targets_named(z.as_str(), "")
                .unwrap_or_default()
        });
        let out: Vec<Target> = all
            .filter(|t| account.is_empty() || &*t.account == account)
            .collect();
        if out.is_empty() && !account.is_empty() && !zones.is_empty() {
            return Err(FieldError::new(
                "account",
                format!("no zone named has a target at account {account:?}"),
            )
            .into());
        }
        Ok(out)
    }
}

/// The gRPC status of a zone and account that name no single target: NOT_FOUND for
/// an unknown zone, INVALID_ARGUMENT (field `account`) for an account the zone has
/// no target at or a zone with several targets and no account.
pub(crate) fn target_status(e: &TargetError) -> Status {
    match e {
        TargetError::UnknownZone { .. } => Status::not_found(e.to_string()),
        TargetError::UnknownAccount { .. } | TargetError::Ambiguous { .. } => {
            FieldError::new("account", e.to_string()).into()
        }
    }
}
