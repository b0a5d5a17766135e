//! Results back where network engineers look: each record's outcome written to the
//! custom field `dnsplane_status` of the IP address or plugin record that asked for it
//! (`write_back = true`), so that NetBox's UI says why a name is not in DNS.
//!
//! - **What is written:** `converged`; `held: …`, `failed: …`, `conflict: …` and
//!   `invalid: …` with the reason (and the record, when the object gives several: an
//!   address's A and PTR). An object whose records are still on their way is left as it
//!   is (a `pending` flickering for a second is noise). An object that gives no record
//!   because it is wrong (a bad name, a collision) gets `invalid:` and the source's
//!   error.
//! - **Only what differs:** the source reads each object's current `dnsplane_status`
//!   with it, and the writer records what it wrote, so a restart or a quiet planner
//!   writes nothing; an edit of the field in NetBox's UI is put right at its next read.
//! - **Bounded:** bulk `PATCH`es of [`BATCH`] objects, one at a time, at most
//!   [`PER_ROUND`] a round, a second between rounds: at most 500 objects a second, and
//!   less when NetBox is slower (a plugin record's save takes it about 75 ms). Only the
//!   leader writes (a standby's records only look pending).
//! - **Its own echo:** each `PATCH` fires NetBox's event rules; the webhook receiver
//!   drops a webhook whose only change is `dnsplane_status` ([`super::webhook`]).
use super::client::{NetboxClient, NetboxError};
use crate::source::SourceError;
use crate::source::outcomes::{Phase, RecordOutcome};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The custom field written.
pub const FIELD: &str = "dnsplane_status";
/// Objects per bulk `PATCH`.
pub const BATCH: usize = 50;
/// Bulk `PATCH`es per round (500 objects; a second between rounds).
pub const PER_ROUND: usize = 10;
/// The longest text written (NetBox shows it in a table cell).
const MAX_TEXT: usize = 255;

/// The custom fields the source reads with each object (any JSON: a field made with
/// another type must not fail the read).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct CustomFields {
    #[serde(default)]
    dnsplane_status: Option<serde_json::Value>,
}

impl CustomFields {
    /// `dnsplane_status` as text (`""` when unset).
    pub fn status(&self) -> String {
        match &self.dnsplane_status {
            Some(serde_json::Value::String(s)) => s.clone(),
            None | Some(serde_json::Value::Null) => String::new(),
            Some(other) => other.to_string(),
        }
    }
}

/// An object a status is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Object {
    Address(u64),
    PluginRecord(u64),
}

impl Object {
    /// The API list it is patched through.
    fn list(self) -> &'static str {
        match self {
            Object::Address(_) => super::ADDRESSES,
            Object::PluginRecord(_) => super::PLUGIN_RECORDS,
        }
    }

    fn id(self) -> u64 {
        match self {
            Object::Address(id) | Object::PluginRecord(id) => id,
        }
    }

    /// The object a record's resource (`ipam/ip-addresses/7`) or an error's location
    /// (`<NetBox>/ipam/ip-addresses/7/`) names.
    pub fn named(text: &str) -> Option<Object> {
        let text = text.trim_end_matches('/');
        let (path, id) = text.rsplit_once('/')?;
        let id = id.parse().ok()?;
        if path.ends_with("ipam/ip-addresses") {
            Some(Object::Address(id))
        } else if path.ends_with("netbox-dns/records") {
            Some(Object::PluginRecord(id))
        } else {
            None
        }
    }
}

/// What NetBox holds in each object's `dnsplane_status`, as last read or written.
pub type Statuses = Arc<Mutex<HashMap<Object, String>>>;

/// How bad a phase is, for an object's worst record; and the word it is written as.
fn rank(phase: Phase) -> (u8, &'static str) {
    match phase {
        Phase::Converged => (0, "converged"),
        Phase::Pending => (1, "pending"),
        Phase::Held => (2, "held"),
        Phase::Failed => (3, "failed"),
        Phase::Conflict => (4, "conflict"),
        Phase::Invalid => (5, "invalid"),
    }
}

/// The status each object should show: the worst outcome of its records (the record
/// named when it has several), `invalid:` with the error of an object that gives no
/// record. An object with a record still pending, and nothing worse, is left out.
pub fn statuses(records: &[RecordOutcome], errors: &[SourceError]) -> BTreeMap<Object, String> {
    let mut by_object: BTreeMap<Object, Vec<&RecordOutcome>> = BTreeMap::new();
    for outcome in records {
        for one in outcome.resource.split(", ") {
            if let Some(o) = Object::named(one) {
                by_object.entry(o).or_default().push(outcome);
            }
        }
    }
    let mut out = BTreeMap::new();
    for (object, outcomes) in &by_object {
        let worst = outcomes
            .iter()
            .max_by_key(|o| rank(o.phase).0)
            .expect("one");
        let text = match worst.phase {
            Phase::Pending => continue,
            Phase::Converged => "converged".to_string(),
            phase => {
                let (word, why) = (rank(phase).1, &worst.detail);
                if outcomes.len() > 1 {
                    format!("{word}: {}: {why}", worst.record)
                } else {
                    format!("{word}: {why}")
                }
            }
        };
        out.insert(*object, clip(text));
    }
    for e in errors {
        let Some(object) = Object::named(&e.location) else {
            continue;
        };
        // An error of an object that gives records too (a PTR never merged, say)
        // outranks its converged records: it is why something is missing.
        out.insert(object, clip(format!("invalid: {}", e.message)));
    }
    out
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT - 3;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// The writer: NetBox's client, and what it holds of each object.
#[derive(Debug)]
pub struct WriteBack {
    client: NetboxClient,
    /// What NetBox holds in each object's field, as read or written.
    in_netbox: Statuses,
    /// Why nothing can be written (the custom field missing, the token refused), as
    /// status shows it; cleared by a write that works.
    pub problem: Option<String>,
    /// Objects written since start.
    pub written: u64,
}

impl WriteBack {
    pub fn new(client: NetboxClient, in_netbox: Statuses) -> WriteBack {
        WriteBack {
            client,
            in_netbox,
            problem: None,
            written: 0,
        }
    }

    /// NetBox's URL, without a final `/`.
    pub fn base(&self) -> &str {
        self.client.base()
    }

    /// Writes what differs between `want` and what NetBox holds, within this round's
    /// bound: how many objects were written, and how many still differ.
    pub async fn round(&mut self, want: &BTreeMap<Object, String>) -> (usize, usize) {
        let differ: Vec<(Object, &String)> = {
            let in_netbox = self.in_netbox.lock().unwrap_or_else(|e| e.into_inner());
            want.iter()
                .filter(|(o, text)| in_netbox.get(o).is_some_and(|h| h != *text))
                .map(|(o, t)| (*o, t))
                .collect()
        };
        let mut done = 0;
        let mut chunks = differ.chunks(BATCH);
        for chunk in chunks.by_ref().take(PER_ROUND) {
            match self.write(chunk).await {
                Ok(()) => {
                    done += chunk.len();
                    self.problem = None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "NetBox refused a write-back of dnsplane_status; the next round tries again.");
                    self.problem = Some(e.to_string());
                    break;
                }
            }
        }
        self.written += done as u64;
        (done, differ.len() - done)
    }

    /// One bulk `PATCH` per list (a chunk may mix both). NetBox refuses a whole bulk
    /// for one object deleted since it was read: then each object is written alone,
    /// and one NetBox no longer has is forgotten.
    async fn write(&self, chunk: &[(Object, &String)]) -> Result<(), NetboxError> {
        let body = |o: Object, text: &str| serde_json::json!({"id": o.id(), "custom_fields": {FIELD: text}});
        let mut by_list: BTreeMap<&'static str, Vec<(Object, &String)>> = BTreeMap::new();
        for (o, text) in chunk {
            by_list.entry(o.list()).or_default().push((*o, text));
        }
        for (list, objects) in by_list {
            let bulk: Vec<serde_json::Value> = objects.iter().map(|(o, t)| body(*o, t)).collect();
            match self
                .client
                .patch(list, &serde_json::Value::Array(bulk))
                .await
            {
                Ok(()) => self.note(&objects),
                Err(NetboxError::Status { status, .. }) if status.as_u16() == 400 => {
                    for (o, text) in &objects {
                        let one = format!("{list}{}/", o.id());
                        match self.client.patch(&one, &body(*o, text)).await {
                            Ok(()) => self.note(&[(*o, text)]),
                            Err(NetboxError::Status { status, .. }) if status.as_u16() == 404 => {
                                self.in_netbox
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .remove(o);
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Notes what NetBox now holds for `written`.
    fn note(&self, written: &[(Object, &String)]) {
        let mut in_netbox = self.in_netbox.lock().unwrap_or_else(|e| e.into_inner());
        for (o, text) in written {
            in_netbox.insert(*o, (*text).clone());
        }
    }
}
