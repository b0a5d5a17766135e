//! What the in-process cloud emulators of the full-stack stories (Route 53, Cloud DNS,
//! Cloudflare) share: a runtime of their own (the harness is synchronous), "another
//! writer" that goes through the provider's API with dnsplane's own driver for it (as
//! any other program holding the account's credentials would), and the zone as `dig`
//! and AXFR would show it, made from the emulator's own listing (none of them serves
//! DNS).
use dnsplane_applier::provider::{Provider, ProviderError};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use std::collections::BTreeMap;
use std::time::Duration;

/// What the stories do with an emulated cloud: another writer's records, and the
/// zone as DNS tools would show it. A cloud's support module gives its writer and its
/// listing; the rest is here.
pub trait EmulatedCloud {
    /// Another writer of the zone, through the provider's API.
    fn writer(&self) -> &Writer;

    /// The zone's values from the emulator's own listing, in DNS presentation form.
    fn listing(&self) -> Vec<Line>;

    /// Another writer: `(label, type, ttl, value)` written through the provider's API.
    fn add_records(&self, records: &[(&str, &str, u32, &str)]) {
        self.writer().add_records(records);
    }

    /// Another writer sets (`Some`) or removes (`None`) the A record at each label, in
    /// one write.
    fn set_a_records(&self, recs: &[(String, Option<String>)], ttl: u32) {
        self.writer().set_a_records(recs, ttl);
    }

    /// The zone as `name ttl type value` lines (see [`axfr`]).
    fn axfr(&self) -> Vec<String> {
        axfr(self.listing())
    }

    /// What a DNS query of `name` and `rtype` would answer, from the listing.
    fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        dig(self.listing(), name, rtype)
    }

    /// What each query `(name, type)` would answer, from one listing (moto's is an AWS
    /// CLI run of about a second: a sample of 25 names need not cost 25).
    fn digs(&self, queries: &[(String, &str)]) -> Vec<Vec<String>> {
        let listing = self.listing();
        queries
            .iter()
            .map(|(name, rtype)| dig(listing.iter().cloned(), name, rtype))
            .collect()
    }
}

/// The runtime an emulator (and its writer) runs in.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A listener on a free loopback port, in `rt`.
pub fn listener(rt: &tokio::runtime::Runtime) -> tokio::net::TcpListener {
    rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind")
}

/// Another writer of one zone, through the provider's API.
#[derive(Debug)]
pub struct Writer {
    rt: tokio::runtime::Runtime,
    zone: Name,
    provider: Box<dyn Provider>,
}

impl Writer {
    /// `provider`: dnsplane's driver, pointed at the emulator with its credentials; it
    /// runs in `rt`, the emulator's runtime.
    pub fn new(rt: tokio::runtime::Runtime, zone: Name, provider: Box<dyn Provider>) -> Writer {
        Writer { rt, zone, provider }
    }

    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }

    /// `(label, type, ttl, value)`, one change: the sets created.
    pub fn add_records(&self, records: &[(&str, &str, u32, &str)]) {
        let mut sets: BTreeMap<(String, String), (u32, Vec<String>)> = BTreeMap::new();
        for (label, rtype, ttl, value) in records {
            let e = sets
                .entry((label.to_string(), rtype.to_string()))
                .or_insert((*ttl, Vec::new()));
            e.1.push(value.to_string());
        }
        let ops: Vec<RRSetOp> = sets
            .into_iter()
            .map(|((label, rtype), (ttl, values))| {
                let key = RecordKey::new(
                    self.zone.clone(),
                    self.zone.prepend(&label).expect("name"),
                    RecordType::parse(&rtype).expect("type"),
                );
                RRSetOp::create(RRSet::new(key, ttl, &values).expect("set"))
            })
            .collect();
        self.retrying(|| self.provider.apply(&self.zone, &ops))
            .expect("another writer's records");
    }

    /// Sets (`Some`) or removes (`None`) the A record at each label, in one change,
    /// against what a read just before it found.
    pub fn set_a_records(&self, recs: &[(String, Option<String>)], ttl: u32) {
        let names: Vec<Name> = recs
            .iter()
            .map(|(l, _)| self.zone.prepend(l).expect("name"))
            .collect();
        let now = self
            .retrying(|| self.provider.list(&self.zone, Some(&names)))
            .expect("read before writing");
        let ops: Vec<RRSetOp> = recs
            .iter()
            .zip(&names)
            .map(|((_, value), name)| {
                let key = RecordKey::new(self.zone.clone(), name.clone(), RecordType::A);
                let before = now.rrsets.iter().find(|r| r.key == key).cloned();
                let after = value
                    .as_ref()
                    .map(|v| RRSet::new(key.clone(), ttl, &[v]).expect("set"));
                RRSetOp { key, before, after }
            })
            .collect();
        self.retrying(|| self.provider.apply(&self.zone, &ops))
            .expect("another writer's change");
    }

    /// Runs `f` until the provider stops throttling it (the writer shares the account's
    /// quota with the applier), at most 50 times.
    fn retrying<T, F: std::future::Future<Output = Result<T, ProviderError>>>(
        &self,
        mut f: impl FnMut() -> F,
    ) -> Result<T, ProviderError> {
        let mut tries = 0;
        loop {
            match self.rt.block_on(f()) {
                Err(e) if e.throttled && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(250));
                }
                other => return other,
            }
        }
    }
}

/// One value of a zone's listing: `(name with its trailing dot, ttl, type, value as
/// dig prints it)`.
pub type Line = (String, u32, String, String);

/// The zone as `name ttl type value` lines, one per value, sorted, SOA left out (as
/// [`super::axfr`] gives a real server's).
pub fn axfr(listing: impl IntoIterator<Item = Line>) -> Vec<String> {
    let mut lines: Vec<String> = listing
        .into_iter()
        .filter(|(_, _, rtype, _)| rtype != "SOA")
        .map(|(name, ttl, rtype, value)| format!("{name} {ttl} {rtype} {value}"))
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// What a DNS query of `name` and `rtype` would answer, sorted.
pub fn dig(listing: impl IntoIterator<Item = Line>, name: &str, rtype: &str) -> Vec<String> {
    let want = absolute(name);
    let mut values: Vec<String> = listing
        .into_iter()
        .filter(|(n, _, t, _)| *n == want && t == rtype)
        .map(|(_, _, _, v)| v)
        .collect();
    values.sort();
    values
}

/// `name` with a trailing dot.
pub fn absolute(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}
