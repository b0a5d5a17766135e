//! What the Route 53 emulator plugs into the shared control API ([`crate::control`]):
//! `POST /_emulator/zones` `{"name": …, "private": false}` creates a zone → `{"id":
//! "Z…"}`; `GET /_emulator/zones/{id}/rrsets` is the zone's record sets
//! ([`RRSetView`](super::RRSetView)); fault rules name Route 53's operations.
use super::ops::FAULT_OPS;
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
    #[serde(default)]
    private: bool,
}

impl ControlPlane for Inner {
    const CONTENT: &'static str = "rrsets";
    type NewZone = NewZone;
    type Model = model::State;

    fn shared(&self) -> &Shared<model::State> {
        &self.shared
    }

    fn check_fault(&self, rule: &FaultRule) -> Result<(), String> {
        rule.validate(FAULT_OPS)
    }

    fn zones_json(&self) -> Value {
        to_json(&self.zones())
    }

    fn create_zone_json(&self, z: NewZone) -> Result<Value, String> {
        self.create_zone(&z.name, z.private, None)
            .map(|id| json!({ "id": id }))
    }

    fn content_json(&self, zone: &str) -> Option<Value> {
        self.rrsets(zone).map(|v| to_json(&v))
    }
}
