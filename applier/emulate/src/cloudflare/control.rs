//! What the Cloudflare emulator plugs into the shared control API ([`crate::control`]):
//! `POST /_emulator/zones` `{"name": …}` creates a zone → `{"id": "…"}`; `GET
//! /_emulator/zones/{id}/records` is the zone's records
//! ([`RecordView`](super::RecordView)); fault rules name Cloudflare's operations.
use super::{Inner, model};
use crate::control::{ControlPlane, to_json};
use crate::fault::FaultRule;
use crate::running::Shared;
use serde::Deserialize;
use serde_json::{Value, json};

/// The body of `POST /_emulator/zones`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewZone {
    name: String,
}

impl ControlPlane for Inner {
    const CONTENT: &'static str = "records";
    type NewZone = NewZone;
    type Model = model::State;

    fn shared(&self) -> &Shared<model::State> {
        &self.shared
    }

    fn check_fault(&self, rule: &FaultRule) -> Result<(), String> {
        super::validate_fault(rule)
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
