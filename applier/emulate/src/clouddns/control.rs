//! What the Cloud DNS emulator plugs into the shared control API ([`crate::control`]):
//! `GET /_emulator/zones` lists the zones of the emulator's project; `POST
//! /_emulator/zones` `{"name": "my-zone", "dns_name": "example.com."}` creates one →
//! 201 `{"name": …}`; `GET /_emulator/zones/{name}/rrsets` is the zone's record sets
//! ([`RRSetView`](super::RRSetView)); fault rules name Cloud DNS's operations.
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
    dns_name: String,
}

impl ControlPlane for Inner {
    const CONTENT: &'static str = "rrsets";
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
        let project = self.opts.project.clone();
        self.add_zone(&project, &z.name, &z.dns_name, "", "public")
            .map(|_| json!({ "name": z.name }))
            .map_err(|e| e.message)
    }

    fn content_json(&self, zone: &str) -> Option<Value> {
        self.rrsets(zone).map(|v| to_json(&v))
    }
}
