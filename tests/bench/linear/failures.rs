//! The phases about answers other than "done": a conflict whose cause goes away, a
//! wrong credential, a tight provider quota.
use crate::probe::Ops;
use crate::stats::{fmt, quantile};
use crate::{Ctx, Grpc, Row, count, wait_converged};
use dnsplane_common::pb::{self, RecordStateKind};
use dnsplane_e2e::quota_proxy::{ProxyOptions, QuotaProxy};
use dnsplane_e2e::servers::stack::workload::TTL;
use dnsplane_e2e::servers::{EmulatedCloud, RealServer};
use dnsplane_e2e::servers::{Kind, stack::RealStack};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Conflicting records `c00000…`: (relative name, value of the other writer, desired
/// value).
fn conflicting(n: usize) -> Vec<(String, String, String)> {
    (0..n)
        .map(|i| {
            let (hi, lo) = (i / 250, i % 250 + 1);
            (
                format!("c{i:05}"),
                format!("203.0.{hi}.{lo}"),
                format!("198.51.{hi}.{lo}"),
            )
        })
        .collect()
}

/// Writes (`Some(value)`) or deletes (`None`) A records as another program would:
/// PowerDNS by one API PATCH (no ownership record), BIND by one `nsupdate`, Route 53
/// by one change batch, Cloud DNS by one Change, Cloudflare by one batch.
fn other_writer(s: &RealStack, recs: &[(String, Option<String>)]) {
    let zone = s.zone();
    match &s.server {
        RealServer::Pdns(p) => {
            let rrsets: Vec<serde_json::Value> = recs
                .iter()
                .map(|(name, value)| match value {
                    Some(v) => serde_json::json!({
                        "name": format!("{name}.{zone}"), "type": "A", "ttl": TTL,
                        "changetype": "REPLACE",
                        "records": [{"content": v, "disabled": false}],
                    }),
                    None => serde_json::json!({
                        "name": format!("{name}.{zone}"), "type": "A", "changetype": "DELETE",
                    }),
                })
                .collect();
            let (code, body) = p.api(
                "PATCH",
                &format!("/api/v1/servers/localhost/zones/{zone}"),
                &serde_json::json!({ "rrsets": rrsets }).to_string(),
            );
            assert_eq!(code, 204, "the other writer's PATCH: {body}");
        }
        RealServer::Bind(b) => {
            let cmds: String = recs
                .iter()
                .map(|(name, value)| match value {
                    Some(v) => format!("update add {name}.{zone} {TTL} A {v}\n"),
                    None => format!("update delete {name}.{zone} A\n"),
                })
                .collect();
            let out = b.nsupdate(&cmds);
            assert!(
                out.status.success(),
                "nsupdate: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        RealServer::Route53(r) => r.set_a_records(recs, TTL),
        RealServer::Route53Moto(r) => r.set_a_records(recs, TTL),
        RealServer::CloudDns(r) => r.set_a_records(recs, TTL),
        RealServer::Cloudflare(r) => r.set_a_records(recs, TTL),
        RealServer::Azure(r) => r.set_a_records(recs, TTL),
    }
}

/// Records held by another writer conflict with desired ones (reported, not taken);
/// then the other writer deletes them: time until every record is converged, with the
/// planner's default `[sync]` settings.
pub fn conflict(ctx: &mut Ctx, kind: Kind) {
    let n = ctx.args.conflicts;
    eprintln!("== {}: conflict release, {n} records", kind.server());
    let mut opts = ctx.options();
    opts.sync_table = Some(String::new());
    let s = ctx.stack(ctx.server(kind), opts);
    let zone = s.zone().clone();
    let recs = conflicting(n);
    other_writer(
        &s,
        &recs
            .iter()
            .map(|(name, theirs, _)| (name.clone(), Some(theirs.clone())))
            .collect::<Vec<_>>(),
    );
    let desired: Vec<pb::DesiredRecord> = recs
        .iter()
        .map(|(name, _, ours)| pb::DesiredRecord {
            name: format!("{name}.{zone}"),
            r#type: "A".into(),
            ttl: TTL,
            values: vec![ours.clone()],
            ..Default::default()
        })
        .collect();
    s.push(desired);
    s.wait_until("every record CONFLICT", Duration::from_secs(120), |s| {
        (count(s, "conflict") as usize == n).then_some(())
    });
    other_writer(
        &s,
        &recs
            .iter()
            .map(|(name, _, _)| (name.clone(), None))
            .collect::<Vec<_>>(),
    );
    // The release is when the other writer's delete has committed (its call returned):
    // before that nothing can converge. On an emulated cloud that call shares the
    // account's quota with the applier and may itself be throttled and retried; that
    // is the other writer's time, not dnsplane's.
    let t0 = Instant::now();
    let mut when: BTreeMap<String, Duration> = BTreeMap::new();
    let limit = Duration::from_secs(120);
    while when.len() < n && t0.elapsed() < limit {
        let now = t0.elapsed();
        for r in s.record_states(true) {
            if r.state == RecordStateKind::Converged as i32 {
                let name = r.key.map(|k| k.name).unwrap_or_default();
                when.entry(name).or_insert(now);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let times: Vec<Duration> = when.values().copied().collect();
    let all = times.len() == n;
    ctx.push(Row {
        server: kind.server(),
        phase: "conflict released → converged".into(),
        records: n,
        time: if all {
            format!("{} / {}", fmt(quantile(&times, 0.5)), fmt(quantile(&times, 1.0)))
        } else {
            format!("{} of {n} in {}", times.len(), fmt(limit))
        },
        goal: "≤ 2 s (p100)".into(),
        pass: Some(all && quantile(&times, 1.0) <= Duration::from_secs(2)),
        note: "p50 / p100 from the other writer's delete committing; planner `[sync]` defaults; states polled every 20 ms".into(),
        ..Row::default()
    });
}

/// The account's credential is wrong (PowerDNS: another API key; BIND: the key's name
/// with another secret; Route 53: another secret key; Cloud DNS: a refresh token the
/// token endpoint does not know; Cloudflare: another API token): time from the push
/// until every record shows `rejected`.
pub fn wrong_key(ctx: &mut Ctx, kind: Kind) {
    const N: usize = 100;
    eprintln!("== {}: wrong credential", kind.server());
    let server = ctx.server(kind);
    match &server {
        RealServer::Pdns(p) => std::fs::write(&p.api_key_file, "not-the-key\n"),
        RealServer::Bind(b) => std::fs::write(
            &b.key_file,
            format!(
                "key \"{}\" {{\n\talgorithm hmac-sha256;\n\tsecret \"bm90LXRoZS1zZWNyZXQtbm90LXRoZS1zZWNyZXQ=\";\n}};\n",
                b.key_name
            ),
        ),
        RealServer::Route53(r) => std::fs::write(
            &r.credentials_file,
            format!(
                "[default]\naws_access_key_id = {}\naws_secret_access_key = not-the-secret\n",
                dnsplane_emulate::DEFAULT_ACCESS_KEY_ID
            ),
        ),
        RealServer::CloudDns(r) => std::fs::write(
            &r.credentials_file,
            serde_json::json!({
                "type": "authorized_user",
                "client_id": "dnsplane-e2e.apps.googleusercontent.com",
                "client_secret": "emulator-client-secret",
                "refresh_token": "not-the-refresh-token",
                "token_uri": r.token_uri,
            })
            .to_string(),
        ),
        RealServer::Cloudflare(r) => std::fs::write(&r.token_file, "not-the-token\n"),
        RealServer::Azure(r) => std::fs::write(&r.token_file, "not-the-token\n"),
        RealServer::Route53Moto(_) => unreachable!("moto checks no signature"),
    }
    .expect("write the wrong key");
    let mut opts = ctx.options();
    opts.min_interval = "100ms".into();
    let s = ctx.stack(server, opts);
    let zone = s.zone().clone();
    let recs = dnsplane_e2e::servers::stack::workload::initial(N);
    let t0 = Instant::now();
    s.push(recs.iter().map(|r| r.desired(&zone)).collect());
    let limit = Duration::from_secs(60);
    let mut reason = String::new();
    let mut time = None;
    while t0.elapsed() < limit {
        let st = s.record_states(false);
        if st.len() == N
            && st
                .iter()
                .all(|r| r.state == RecordStateKind::Rejected as i32)
        {
            time = Some(t0.elapsed());
            reason = st[0].reason.clone();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let with_message = match kind {
        Kind::Pdns => reason.contains("401"),
        Kind::Bind => !reason.is_empty(),
        Kind::Route53 | Kind::Route53Moto => {
            reason.contains("403") && reason.contains("SignatureDoesNotMatch")
        }
        Kind::CloudDns => reason.contains("invalid_grant"),
        Kind::Cloudflare => reason.contains("403") && reason.contains("9109"),
        Kind::Azure => reason.contains("401"),
    };
    ctx.push(Row {
        server: kind.server(),
        phase: "wrong credential → records rejected".into(),
        records: N,
        time: time.map_or(format!("not within {}", fmt(limit)), fmt),
        goal: match kind {
            Kind::Pdns => "≤ 10 s, with the 401".into(),
            Kind::Bind => "≤ 10 s, with the server's answer".into(),
            Kind::Route53 | Kind::Route53Moto | Kind::Cloudflare => "≤ 10 s, with the 403".into(),
            Kind::CloudDns => "≤ 10 s, with the token endpoint's invalid_grant".into(),
            Kind::Azure => "≤ 10 s, with the 401".into(),
        },
        pass: Some(time.is_some_and(|t| t <= Duration::from_secs(10)) && with_message),
        note: format!("reason: {}", reason.replace('|', "\\|")),
        ..Row::default()
    });
}

/// PowerDNS behind a proxy enforcing 2 writes/s (burst 1, 429 above it), the applier's
/// quota set to the same: `--records` records must converge without one 429.
pub fn quota(ctx: &mut Ctx, kind: Kind) {
    const RATE: f64 = 2.0;
    if kind != Kind::Pdns {
        // BIND has no rate answer to count; its `update-quota` bounds concurrency.
        return;
    }
    let n = ctx.args.records;
    eprintln!(
        "== {}: quota burst 1 at {RATE}/s, {n} records",
        kind.server()
    );
    let server = ctx.server(kind);
    let RealServer::Pdns(p) = &server else {
        unreachable!("PowerDNS")
    };
    let proxy = QuotaProxy::start(
        &p.api_url(),
        ProxyOptions {
            write_rate: RATE,
            write_burst: 1.0,
            ..ProxyOptions::default()
        },
    );
    let mut opts = ctx.options();
    opts.min_interval = "100ms".into();
    opts.api_url = Some(proxy.url());
    opts.account_extra = format!("\n[accounts.quota]\nrate = {RATE:.1}\nburst = 1\n");
    let s = ctx.stack(server, opts);
    s.wait_quiet();
    let zone = s.zone().clone();
    let port = s.applier_admin_port.expect("admin ports");
    let ops0 = Ops::of(port);
    let since = Instant::now();
    let t0 = Instant::now();
    s.push(
        dnsplane_e2e::servers::stack::workload::initial(n)
            .iter()
            .map(|r| r.desired(&zone))
            .collect(),
    );
    let limit = Duration::from_secs(1800);
    let done = wait_converged(&s, n as u32, Duration::from_millis(100), limit);
    let time = t0.elapsed();
    let ops = Ops::of(port).since(ops0);
    let seen = proxy.counts();
    let patches = seen.writes_since(since).len();
    let throttled = Grpc::new(&s)
        .account(&s.account)
        .quota
        .map_or(0, |q| q.throttled);
    // The least a writer at RATE can take for those PATCHes.
    let floor = Duration::from_secs_f64(patches.saturating_sub(1) as f64 / RATE);
    ctx.push(Row {
        server: kind.server(),
        phase: format!("quota: burst 1 at {RATE}/s, create {n} records"),
        records: n,
        time: if done.is_some() {
            fmt(time)
        } else {
            format!("not converged in {}", fmt(limit))
        },
        floor: format!("{} ({patches} PATCHes at {RATE}/s)", fmt(floor)),
        ratio: format!("{:.2}×", crate::quick::ratio(time, floor)),
        calls: format!("{} / {}", ops.reads, ops.writes),
        goal: "converges, 0 × 429".into(),
        pass: Some(done.is_some() && seen.rejected == 0),
        note: format!(
            "429 answers: {}; throttles fed back: {throttled}",
            seen.rejected
        ),
    });
}
