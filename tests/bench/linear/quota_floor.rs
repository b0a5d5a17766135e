//! Each cloud's quota floor for what a large load wrote (issue 32): the fewest
//! requests that the cloud's documented per-request limits allow for the zone's record
//! sets, ownership marks included, at its documented request rate, against the
//! requests the load made (counted at the emulator, as the cloud counts them) and the
//! time it took.
//!
//! | cloud | one request carries at most | documented rate |
//! |---|---|---|
//! | Route 53 | 1,000 `ResourceRecord` elements, 32,000 value characters | 5 a second |
//! | Cloud DNS | 1,000 set additions, 100,000 bytes of rrdata | none published |
//! | Cloudflare | 200 records (Free), 3,500 (paid) | 1,200 per 5 minutes |
//! | Azure DNS | one record set | ARM: 10 writes a second (after a burst of 200) |
use crate::quick::ratio;
use crate::stats::fmt;
use crate::{Ctx, Row};
use dnsplane_e2e::servers::RealServer;
use std::collections::BTreeSet;
use std::time::Duration;

/// What the zone holds, apex SOA and NS left out: record sets, values, characters of
/// the values.
#[derive(Debug, Default)]
struct Written {
    sets: usize,
    values: usize,
    chars: usize,
}

impl Written {
    /// From `name ttl type value` lines (one per value).
    fn of(apex: &str, lines: &[String]) -> Written {
        let mut sets = BTreeSet::new();
        let mut w = Written::default();
        for line in lines {
            let mut f = line.splitn(4, ' ');
            let (Some(name), Some(_ttl), Some(rtype), Some(value)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            if name.eq_ignore_ascii_case(apex) && matches!(rtype, "SOA" | "NS") {
                continue;
            }
            sets.insert((name.to_ascii_lowercase(), rtype.to_string()));
            w.values += 1;
            w.chars += value.len();
        }
        w.sets = sets.len();
        w
    }
}

/// One cloud's floor: its requests, their rate (`None`: none published), the write
/// requests the load made and all its requests (reads too, which count against the
/// rate of Route 53 and Cloudflare), whether any answer was a limit error, and how
/// the floor was counted.
struct Floor {
    requests: usize,
    rate: Option<f64>,
    made: u64,
    all: u64,
    refused: u64,
    how: String,
}

/// The floor of the cloud `server` emulates, for what it holds now; `None` for a
/// server that is not a cloud.
fn floor(ctx: &Ctx, server: &RealServer) -> Option<Floor> {
    let apex = server.zone().as_str().to_ascii_lowercase();
    let w = || Written::of(&apex, &server.axfr(&ctx.tools.dig));
    let made = |requests: &std::collections::BTreeMap<String, u64>, op: &str| {
        requests.get(op).copied().unwrap_or(0)
    };
    Some(match server {
        RealServer::Route53(r) => {
            // From the emulator's sets: an alias counts one element and no characters.
            let (mut values, mut chars) = (0usize, 0usize);
            for set in r.emulator.rrsets(&r.zone_id) {
                if set.name == apex && matches!(set.rtype.as_str(), "SOA" | "NS") {
                    continue;
                }
                values += set.values.len().max(1);
                chars += set.values.iter().map(String::len).sum::<usize>();
            }
            let st = r.emulator.stats();
            Floor {
                requests: values.div_ceil(1000).max(chars.div_ceil(32_000)),
                rate: Some(5.0),
                made: made(&st.requests, "ChangeResourceRecordSets"),
                all: st.requests.values().sum(),
                refused: st.throttled,
                how: format!(
                    "{values} values, {chars} value characters; \
                     max(values / 1,000, characters / 32,000) requests at 5 a second"
                ),
            }
        }
        RealServer::CloudDns(c) => {
            let w = w();
            let st = c.emulator.stats();
            Floor {
                requests: w.sets.div_ceil(1000).max(w.chars.div_ceil(100_000)),
                rate: None,
                made: made(&st.requests, "dns.changes.create"),
                all: st.requests.values().sum(),
                refused: st.throttled,
                how: format!(
                    "{} record sets, {} bytes of rrdata; max(sets / 1,000, rrdata / 100,000) \
                     changes; Google publishes no request rate, so the ratio is of requests",
                    w.sets, w.chars
                ),
            }
        }
        RealServer::Cloudflare(c) => {
            let w = w();
            let st = c.emulator.stats();
            let limit = if c.plan == "free" { 200 } else { 3500 };
            Floor {
                requests: w.values.div_ceil(limit),
                rate: Some(4.0),
                made: made(&st.requests, "BatchDnsRecords"),
                all: st.requests.values().sum(),
                refused: st.throttled,
                how: format!(
                    "{} records on the {} plan; records / {limit} batches at 1,200 per 5 minutes",
                    w.values, c.plan
                ),
            }
        }
        RealServer::Azure(a) => {
            let w = w();
            let st = a.emulator.stats();
            Floor {
                requests: w.sets,
                rate: Some(10.0),
                made: made(&st.requests, "RecordSets_CreateOrUpdate")
                    + made(&st.requests, "RecordSets_Delete"),
                all: st.requests.values().sum(),
                refused: st.throttled,
                how: format!(
                    "{} record sets, one request each, at ARM's 10 writes a second",
                    w.sets
                ),
            }
        }
        _ => return None,
    })
}

/// The row of the load against its cloud's floor (nothing for another server).
pub fn row(ctx: &mut Ctx, server: &RealServer, n: usize, total: Duration) {
    let Some(f) = floor(ctx, server) else {
        return;
    };
    let requests = f.requests.max(1);
    let (floor_text, r) = match f.rate {
        Some(rate) => {
            let t = Duration::from_secs_f64(requests as f64 / rate);
            (format!("{requests} requests, {}", fmt(t)), ratio(total, t))
        }
        None => (
            format!("{requests} requests"),
            f.made as f64 / requests as f64,
        ),
    };
    ctx.push(Row {
        server: server.kind().server(),
        phase: format!("large {n}: against the quota floor"),
        records: n,
        time: fmt(total),
        floor: floor_text,
        ratio: format!("{r:.2}×"),
        calls: format!("{} write requests", f.made),
        goal: "≤ 1.2× the floor, no limit error".into(),
        pass: Some(r <= 1.2 && f.refused == 0),
        note: format!(
            "{}; {} requests in all (reads included); {} refused for a limit (throttled)",
            f.how, f.all, f.refused
        ),
    });
}
