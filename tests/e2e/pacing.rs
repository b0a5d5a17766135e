//! Issue 28, items 6 and 8 (throttled): no livelock without a configured quota.
//!
//! A real PowerDNS behind the tests' rate-limiting proxy: 1 request per second, burst
//! 1, every request counted (reads too, as at a provider that limits requests), `429`
//! with `Retry-After: 1` above it. The applier has **no** `[accounts.quota]` (the
//! PowerDNS default). Before pacing, every attempt read the zone's serial (the
//! precondition GET, which took the only token) and then PATCHed at once (429):
//! 0 PATCHes, for ever, with status `healthy`. Now the account paces itself after the
//! first 429, and the read and the write go as one unit.
//!
//! The figures printed (time, PATCHes, 429 answers) are the benchmark's
//! (`dnsplane-bench-linear --phases pacing`, docs/scale.md), not assertions.
use dnsplane_e2e::quota_proxy::{ProxyOptions, QuotaProxy};
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools, workload};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::time::{Duration, Instant};

/// The records of the reproduction.
const N: usize = 2_000;
/// The planner's `batch.max_changes`: several PATCHes, so that pacing has to hold
/// over many units, not just one.
const BATCH: usize = 250;
/// Safety net; not a performance claim.
const CONVERGE: Duration = Duration::from_secs(300);

/// PowerDNS behind a 1/s burst-1 proxy limiting every request, and the stack with
/// `account_extra` in the `pdns` account (no quota).
fn stack(account_extra: &str) -> Option<(RealStack, QuotaProxy)> {
    let tools = Tools::find()?;
    let server = RealServer::start(Kind::Pdns)?;
    let RealServer::Pdns(p) = &server else {
        unreachable!("PowerDNS")
    };
    let proxy = QuotaProxy::start(
        &p.api_url(),
        ProxyOptions {
            write_rate: 1.0,
            write_burst: 1.0,
            retry_after_secs: 1,
            all_requests: true,
            ..ProxyOptions::default()
        },
    );
    let opts = Options {
        batch_max_changes: BATCH,
        api_url: Some(proxy.url()),
        account_extra: account_extra.to_string(),
        ..Options::default()
    };
    Some((RealStack::start(server, tools, opts), proxy))
}

/// Waits until all `N` records are converged and nothing else is left; panics with
/// the states, the proxy's counts and the logs.
fn wait_all_converged(s: &RealStack, proxy: &QuotaProxy) {
    let mut last = Default::default();
    let done = dnsplane_e2e::wait_for(CONVERGE, || {
        last = s.states_count();
        (last.get("converged").copied() == Some(N as u32) && last.len() == 1).then_some(())
    });
    assert!(
        done.is_some(),
        "{N} records not converged within {CONVERGE:?}: states {last:?}, proxy {} PATCHes, {} answered 429; logs:\n{}",
        proxy.counts().writes.len(),
        proxy.counts().rejected,
        s.logs()
    );
}

/// 2,000 records converge through a 1/s burst-1 limit with no `[accounts.quota]`.
#[test]
fn two_thousand_records_converge_through_a_strict_limit_without_a_quota() {
    let Some((s, proxy)) = stack("") else { return };
    let zone = s.zone().clone();
    let recs = workload::initial(N);
    let t0 = Instant::now();
    assert_eq!(
        s.push(recs.iter().map(|r| r.desired(&zone)).collect()),
        N as u32
    );
    wait_all_converged(&s, &proxy);
    let took = t0.elapsed();
    let counts = proxy.counts();
    eprintln!(
        "pacing: {N} records through 1 request/s burst 1 (no quota) in {took:.1?}: {} PATCHes, {} requests, {} answered 429",
        counts.writes.len(),
        counts.requests,
        counts.rejected
    );
    // What PowerDNS itself holds (AXFR straight from it, not through the proxy).
    let axfr = s.axfr();
    for r in [&recs[0], &recs[N / 2], &recs[N - 1]] {
        let line = r.axfr_line(&zone);
        assert!(
            axfr.contains(&line),
            "{line} not served; {} lines",
            axfr.len()
        );
    }
    assert!(axfr.len() >= N, "{} AXFR lines for {N} records", axfr.len());
    // The proxy did throttle: this is the livelock's setting, not a lucky run.
    assert!(counts.rejected > 0, "the proxy never answered 429");
}

/// During the 429 storm the account says it is throttled: the applier is degraded
/// with the reason, the planner has the `throttled` rule (and `dnsplane status` exits
/// 2 with it); once the provider lets the writes through and `recover` has passed
/// without a 429, both are healthy again.
#[test]
fn status_shows_a_throttled_account_during_the_429_storm_and_clears_after() {
    let Some((s, proxy)) =
        stack("\n[accounts.pacing]\ndegraded_after = \"2s\"\nrecover = \"4s\"\n")
    else {
        return;
    };
    let zone = s.zone().clone();
    let recs = workload::initial(N);
    s.push(recs.iter().map(|r| r.desired(&zone)).collect());
    let mut last = serde_json::Value::Null;
    let seen = dnsplane_e2e::wait_for(Duration::from_secs(120), || {
        last = s.applier_status_grpcurl();
        (last["level"] == "degraded"
            && last["reason"]
                .as_str()
                .is_some_and(|r| r.contains("throttled")))
        .then_some(())
    });
    assert!(
        seen.is_some(),
        "the applier never said the account is throttled: {last}; proxy: {} answered 429; logs:\n{}",
        proxy.counts().rejected,
        s.logs()
    );
    let pacing = &last["accounts"][0]["pacing"];
    assert!(
        pacing["currentRate"].as_f64().is_some_and(|r| r > 0.0),
        "{last}"
    );
    assert!(pacing["throttledSince"].is_string(), "{last}");
    let planner = s.wait_until(
        "the planner's throttled rule",
        Duration::from_secs(60),
        |s| {
            let st = s.planner_status();
            st.reasons
                .iter()
                .find(|r| r.rule == "throttled")
                .map(|r| (st.level.clone(), r.clone()))
        },
    );
    assert_eq!(planner.0, "degraded", "{planner:?}");
    assert_eq!(planner.1.level, "degraded", "{planner:?}");
    assert!(
        planner.1.message.contains("pdns") && planner.1.message.contains("[accounts.quota]"),
        "the reason names the account and what to do: {planner:?}"
    );
    let (code, out) = s.cli(&["status"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("[throttled]"), "{out}");

    wait_all_converged(&s, &proxy);
    // No more work: no 429 for `recover`, the pacing ends and both are healthy.
    let healthy = dnsplane_e2e::wait_for(Duration::from_secs(60), || {
        last = s.applier_status_grpcurl();
        (last["level"] == "healthy").then_some(())
    });
    assert!(healthy.is_some(), "still {last}; logs:\n{}", s.logs());
    s.wait_until(
        "the planner without throttled",
        Duration::from_secs(30),
        |s| {
            let st = s.planner_status();
            (!st.reasons.iter().any(|r| r.rule == "throttled")).then_some(())
        },
    );
}
