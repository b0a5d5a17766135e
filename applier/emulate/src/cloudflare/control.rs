//! What the Cloudflare emulator plugs into the shared control API ([`crate::control`]):
//! `POST /_emulator/zones` `{"name": …}` creates a zone → `{"id": "…"}`; `GET
//! /_emulator/zones/{id}/records` is the zone's records
//! ([`RecordView`](super::RecordView)); fault rules name Cloudflare's operations.
use super::Inner;
use crate::control::{ControlPlane, to_json};
use crate::fault::{FaultRule, FaultSet};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewZone {
    name: String,
}

impl ControlPlane for Inner {
    const CONTENT: &'static str = "records";
    type NewZone = NewZone;

    fn faults(&self) -> &FaultSet {
        &self.faults
    }

    fn check_fault(&self, rule: &FaultRule) -> Result<(), String> {
        super::validate_fault(rule)
    }

    fn stats_json(&self) -> Value {
        to_json(&*self.stats())
    }

    fn zones_json(&self) -> Value {
        to_json(&self.zones())
    }

    fn create_zone_json(&self, z: NewZone) -> Result<Value, String> {
        self.create_zone(&z.name, None, None)
            .map(|id| json!({ "id": id }))
            .map_err(|e| e.message)
    }

    fn content_json(&self, zone: &str) -> Option<Value> {
        self.records(zone).map(|v| to_json(&v))
    }
}
