//! The soak's ground truth: what the source files declare (a broken file: its last good
//! version, which the planner must keep), which names other writers took and how, and
//! how many record changes the desired state asked for. The bench compares the zone
//! with this, never with what the planner says.
use dnsplane_e2e::records::endpoints;
use dnsplane_e2e::servers::stack::workload::{Rec, rec};
use rand::Rng;
use rand::rngs::StdRng;
use std::collections::BTreeSet;

/// TTL of every desired record (what [`endpoints`] writes).
pub const TTL: u32 = 60;
/// The owner id of the soak's planner ([`dnsplane_e2e::scaling::Cluster`]'s).
pub const OWNER: &str = "e2e";
/// The owner id the bench's takeovers write.
pub const INTRUDER: &str = "intruder";

/// How another writer took a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// An `other_writer` fault rule wrote the name just before dnsplane's first write
    /// of it: an existing record nobody owns (`CONFLICT exists`).
    BeforeCreate,
    /// The bench wrote the record and an ownership record of another owner through
    /// PowerDNS's API, after dnsplane had created it (`CONFLICT owned_by_other`).
    Takeover,
}

/// A name another writer takes. Only A records are taken, so the foreign value is
/// spelt the same by dnsplane, its config and PowerDNS.
#[derive(Clone, Debug)]
pub struct Foreign {
    pub how: Taken,
    pub value: String,
    /// The write happened (fault rules: once the initial sync is through).
    pub injected: bool,
}

/// One desired record, or one that was desired and has been removed.
#[derive(Clone, Debug)]
pub struct Slot {
    prefix: &'static str,
    i: usize,
    version: u32,
    pub rec: Rec,
    pub zone: usize,
    pub file: usize,
    pub live: bool,
    /// Pushed through `PatchDesired` (failover mode), not in a file; its changes
    /// enter the model once the planner acknowledged them.
    pub pushed: bool,
    /// Taken by another writer: the schedule never changes or removes it, so what the
    /// zone must hold there stays known.
    pub foreign: Option<Foreign>,
}

impl Slot {
    fn new(prefix: &'static str, i: usize, zones: usize, file: usize) -> Slot {
        Slot {
            prefix,
            i,
            version: 0,
            rec: rec(prefix, i, 0),
            zone: i % zones,
            file,
            live: true,
            pushed: false,
            foreign: None,
        }
    }
}

/// One `PatchDesired` of the pushed source, planned: applied to the model only once
/// a planner acknowledged it.
#[derive(Clone, Debug, Default)]
pub struct PushPlan {
    /// Existing pushed slots with a new value (slot, its new version).
    pub updates: Vec<(usize, u32)>,
    /// New pushed records, as slots not yet in the model.
    pub added: Vec<Slot>,
    /// Pushed slots withdrawn.
    pub deletes: Vec<usize>,
}

impl PushPlan {
    pub fn changes(&self) -> usize {
        self.updates.len() + self.added.len() + self.deletes.len()
    }
}

/// How a file is broken: the three ways a real deployment breaks one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// A typo: the first half of the file, then an unterminated flow sequence.
    InvalidYaml,
    /// Truncated to zero bytes (a full disk, `> file` by mistake).
    Empty,
    /// The file's length of NUL bytes (a crash before the data reached the disk).
    Nul,
}

impl Break {
    pub const ALL: [Break; 3] = [Break::InvalidYaml, Break::Empty, Break::Nul];

    pub fn as_str(self) -> &'static str {
        match self {
            Break::InvalidYaml => "invalid YAML",
            Break::Empty => "zero bytes",
            Break::Nul => "NUL bytes",
        }
    }
}

/// What one rewrite did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Churn {
    pub updated: usize,
    pub removed: usize,
    pub added: usize,
}

#[derive(Debug)]
pub struct Model {
    pub zones: Vec<String>,
    pub slots: Vec<Slot>,
    pub files: usize,
    /// The broken file, if one is.
    pub broken: Option<(usize, Break)>,
    next_added: usize,
    next_pushed: usize,
    /// Record changes the desired state asked for: the initial creates, then every
    /// update, removal and addition of a rewrite.
    pub changes: usize,
}

impl Model {
    /// `records` records over `zones` (absolute names) and `files` files; a fraction
    /// `foreign` of them is taken by other writers, half before dnsplane creates them,
    /// half after.
    pub fn new(
        rng: &mut StdRng,
        records: usize,
        zones: Vec<String>,
        files: usize,
        foreign: f64,
    ) -> Model {
        let per_file = records.div_ceil(files);
        let mut slots: Vec<Slot> = (0..records)
            .map(|i| Slot::new("r", i, zones.len(), i / per_file))
            .collect();
        let a_records: Vec<usize> = (0..records)
            .filter(|&i| slots[i].rec.rtype == "A")
            .collect();
        let wanted = ((records as f64 * foreign).round() as usize).min(a_records.len());
        let mut picked = BTreeSet::new();
        while picked.len() < wanted {
            picked.insert(a_records[rng.random_range(0..a_records.len())]);
        }
        for (n, i) in picked.into_iter().enumerate() {
            let (how, value) = if n % 2 == 0 {
                (
                    Taken::BeforeCreate,
                    format!("203.0.113.{}", n / 2 % 250 + 1),
                )
            } else {
                (Taken::Takeover, format!("198.51.100.{}", n / 2 % 250 + 1))
            };
            slots[i].foreign = Some(Foreign {
                how,
                value,
                injected: false,
            });
        }
        Model {
            zones,
            slots,
            files,
            broken: None,
            next_added: 0,
            next_pushed: 0,
            changes: records,
        }
    }

    pub fn file_name(f: usize) -> String {
        format!("f{f:02}.yaml")
    }

    /// The absolute name of a slot's record.
    pub fn name(&self, s: &Slot) -> String {
        format!("{}.{}", s.rec.label, self.zones[s.zone])
    }

    /// File `f` as the model says it is (its last good version while it is broken).
    pub fn render(&self, f: usize) -> String {
        let eps: Vec<(String, &str, String)> = self
            .slots
            .iter()
            .filter(|s| s.live && s.file == f)
            .map(|s| {
                let name = self.name(s);
                (
                    name.trim_end_matches('.').to_string(),
                    s.rec.rtype,
                    s.rec.value.clone(),
                )
            })
            .collect();
        let eps: Vec<(&str, &str, [&str; 1])> = eps
            .iter()
            .map(|(n, t, v)| (n.as_str(), *t, [v.as_str()]))
            .collect();
        let eps: Vec<(&str, &str, &[&str])> =
            eps.iter().map(|(n, t, v)| (*n, *t, v.as_slice())).collect();
        endpoints(&format!("f{f:02}"), &eps)
    }

    /// File `f` broken `how` (the model keeps its last good version).
    pub fn break_file(&mut self, f: usize, how: Break) -> Vec<u8> {
        self.broken = Some((f, how));
        let good = self.render(f).into_bytes();
        match how {
            Break::InvalidYaml => {
                let mut b = good[..good.len() / 2].to_vec();
                b.extend_from_slice(b"\n      targets: [\"192.0.2.1\"\n");
                b
            }
            Break::Empty => Vec::new(),
            Break::Nul => vec![0; good.len()],
        }
    }

    /// Changes about `fraction` of the live records, in files that are not broken:
    /// half get a new value, a quarter are removed, as many are added. Taken names are
    /// left alone.
    pub fn rewrite(&mut self, rng: &mut StdRng, fraction: f64) -> (Churn, BTreeSet<usize>) {
        let broken = self.broken.map(|(f, _)| f);
        let candidates: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                let s = &self.slots[i];
                s.live && !s.pushed && s.foreign.is_none() && Some(s.file) != broken
            })
            .collect();
        let total = (self.live() as f64 * fraction).round().max(4.0) as usize;
        let mut churn = Churn::default();
        let mut touched = BTreeSet::new();
        let mut chosen = BTreeSet::new();
        while chosen.len() < (total * 3 / 4).min(candidates.len()) {
            chosen.insert(candidates[rng.random_range(0..candidates.len())]);
        }
        for (n, i) in chosen.into_iter().enumerate() {
            let s = &mut self.slots[i];
            touched.insert(s.file);
            if n % 3 == 2 {
                s.live = false;
                churn.removed += 1;
            } else {
                s.version += 1;
                s.rec = rec(s.prefix, s.i, s.version);
                churn.updated += 1;
            }
        }
        let files: Vec<usize> = (0..self.files).filter(|&f| Some(f) != broken).collect();
        for _ in 0..churn.removed {
            let file = files[rng.random_range(0..files.len())];
            let j = self.next_added;
            self.next_added += 1;
            self.slots.push(Slot::new("n", j, self.zones.len(), file));
            touched.insert(file);
            churn.added += 1;
        }
        self.changes += churn.updated + churn.removed + churn.added;
        (churn, touched)
    }

    /// A push of `size` changes: half new records, a third value changes, the rest
    /// withdrawals (of pushed records only; A records, named `p…`).
    pub fn plan_push(&self, rng: &mut StdRng, size: usize) -> PushPlan {
        let pushed: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].live && self.slots[i].pushed)
            .collect();
        let mut plan = PushPlan::default();
        let mut chosen = BTreeSet::new();
        let old = (size / 2).min(pushed.len());
        while chosen.len() < old {
            chosen.insert(pushed[rng.random_range(0..pushed.len())]);
        }
        for (n, i) in chosen.into_iter().enumerate() {
            let s = &self.slots[i];
            // The A value's second octet is 18 + version.
            if n % 3 == 2 || s.version >= 200 {
                plan.deletes.push(i);
            } else {
                plan.updates.push((i, s.version + 1));
            }
        }
        for k in 0..size - old {
            // Indices ending in 3..9 are A records (see `rec`).
            let j = self.next_pushed + k;
            let i = j / 7 * 10 + 3 + j % 7;
            let mut slot = Slot::new("p", i, self.zones.len(), usize::MAX);
            slot.pushed = true;
            plan.added.push(slot);
        }
        plan
    }

    /// The desired record of a pushed slot as `PatchDesired` takes it.
    pub fn desired(&self, s: &Slot) -> dnsplane_common::pb::DesiredRecord {
        dnsplane_common::pb::DesiredRecord {
            name: self.name(s).trim_end_matches('.').to_string(),
            r#type: s.rec.rtype.into(),
            ttl: TTL,
            values: vec![s.rec.value.clone()],
            ..Default::default()
        }
    }

    /// The plan as a `PatchDesired` of source `source`.
    pub fn push_request(
        &self,
        source: &str,
        plan: &PushPlan,
    ) -> dnsplane_common::pb::PatchDesiredRequest {
        let mut upserts: Vec<_> = plan.added.iter().map(|s| self.desired(s)).collect();
        for &(i, v) in &plan.updates {
            let mut s = self.slots[i].clone();
            s.version = v;
            s.rec = rec(s.prefix, s.i, v);
            upserts.push(self.desired(&s));
        }
        let deletes = plan
            .deletes
            .iter()
            .map(|&i| {
                let s = &self.slots[i];
                dnsplane_common::pb::DesiredRecordRef {
                    name: self.name(s).trim_end_matches('.').to_string(),
                    r#type: s.rec.rtype.into(),
                    ..Default::default()
                }
            })
            .collect();
        dnsplane_common::pb::PatchDesiredRequest {
            source: source.into(),
            upserts,
            deletes,
        }
    }

    /// Applies an acknowledged push to the model.
    pub fn commit_push(&mut self, plan: PushPlan) {
        self.changes += plan.changes();
        for (i, v) in plan.updates {
            let s = &mut self.slots[i];
            s.version = v;
            s.rec = rec(s.prefix, s.i, v);
        }
        for i in plan.deletes {
            self.slots[i].live = false;
        }
        self.next_pushed += plan.added.len();
        self.slots.extend(plan.added);
    }

    pub fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.live).count()
    }

    /// The live slots another writer takes `how`.
    pub fn taken(&self, how: Taken) -> impl Iterator<Item = (usize, &Slot)> {
        self.slots
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.live && s.foreign.as_ref().is_some_and(|f| f.how == how))
    }

    /// The `[[accounts.faults]]` tables of the other writer: for every name taken
    /// before dnsplane creates it, a rule that writes it just before the first write
    /// touching it (once per applier process; the second time it finds the value
    /// already there and writes nothing).
    pub fn other_writer_rules(&self) -> String {
        self.taken(Taken::BeforeCreate)
            .map(|(_, s)| {
                let name = self.name(s);
                let value = &s.foreign.as_ref().expect("taken").value;
                format!(
                    "[[accounts.faults]]\nop = \"apply\"\naction = \"other_writer\"\nnames = [\"{name}\"]\ntimes = 1\n\
                     records = [{{ name = \"{name}\", type = \"A\", ttl = {TTL}, values = [\"{value}\"] }}]\n\n"
                )
            })
            .collect()
    }
}
