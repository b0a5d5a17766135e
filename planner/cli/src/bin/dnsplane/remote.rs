//! The commands that talk to a running planner over gRPC: `plan`, `status`,
//! `records`, `sync`, `approve`, `release`, `resume`.
use crate::conn::{Conn, connect, status_err};
use dnsplane_common::pb;

fn show(r: Option<&pb::RrSet>) -> String {
    match r {
        None => "nothing".into(),
        Some(r) => {
            let mut text = format!("{} {}", r.ttl, r.values.join(" | "));
            for p in &r.properties {
                text.push_str(&format!(" {}={}", p.name, p.value));
            }
            text
        }
    }
}

/// `name type`, and the routing-policy set when there is one.
fn key_text(key: &pb::RecordKey) -> String {
    match key.set_identifier.as_str() {
        "" => format!("{} {}", key.name, key.r#type),
        set => format!("{} {} [set {set:?}]", key.name, key.r#type),
    }
}

pub async fn plan(conn: Conn, zones: Vec<String>) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let mut total = 0;
    let mut held = 0;
    let mut token = String::new();
    let mut last_zone = String::new();
    loop {
        let resp = client
            .plan(pb::PlanRequest {
                zones: zones.clone(),
                fresh: true,
                page_size: 1000,
                page_token: token.clone(),
            })
            .await
            .map_err(status_err)?
            .into_inner();
        for z in resp.zones {
            // A zone spread over several pages gets one header.
            if z.zone != last_zone {
                println!("zone {}", z.zone);
                if z.changes.is_empty() && z.blocked.is_empty() && z.error.is_empty() {
                    println!("  in sync");
                }
                last_zone = z.zone.clone();
            }
            if !z.error.is_empty() {
                println!("  error: {}", z.error);
                continue;
            }
            if let Some(h) = &z.held {
                println!(
                    "  HELD by the mass-change guard: {}; the deletes and updates below wait for `dnsplane approve {}` (digest {})",
                    h.reason, z.zone, h.digest
                );
            }
            for c in &z.changes {
                total += 1;
                let Some(change) = &c.change else { continue };
                let Some(op) = change.ops.first() else {
                    continue;
                };
                let key = op.key.clone().unwrap_or_default();
                let kind = pb::ChangeKind::try_from(change.kind).unwrap_or_default();
                let (sign, body) = match kind {
                    pb::ChangeKind::Create => ("+", show(op.after.as_ref())),
                    pb::ChangeKind::Delete => ("-", show(op.before.as_ref())),
                    pb::ChangeKind::Update => (
                        "~",
                        format!("{} → {}", show(op.before.as_ref()), show(op.after.as_ref())),
                    ),
                    // Taking a record over from external-dns may update it in place.
                    pb::ChangeKind::Adopt if op.before != op.after => (
                        "=",
                        format!(
                            "{} → {} (adopt)",
                            show(op.before.as_ref()),
                            show(op.after.as_ref())
                        ),
                    ),
                    pb::ChangeKind::Adopt => ("=", format!("{} (adopt)", show(op.after.as_ref()))),
                    pb::ChangeKind::Release => (">", release_op(op)),
                    pb::ChangeKind::Unspecified => ("?", String::new()),
                };
                println!("  {sign} {} {body}    # {}", key_text(&key), c.reason);
            }
            for b in &z.blocked {
                held += 1;
                let key = b.key.clone().unwrap_or_default();
                let retry = b
                    .next_retry
                    .and_then(|t| std::time::SystemTime::try_from(t).ok())
                    .map(|t| {
                        let left = t
                            .duration_since(std::time::SystemTime::now())
                            .unwrap_or_default();
                        format!(", next try in {}s", left.as_secs())
                    })
                    .unwrap_or_default();
                println!(
                    "  ! {} held back: {} (observed: {}{}{retry})",
                    key_text(&key),
                    b.reason,
                    show(b.observed.as_ref()),
                    if b.observed_owner.is_empty() {
                        String::new()
                    } else {
                        format!(", owner {}", b.observed_owner)
                    }
                );
            }
        }
        if resp.next_page_token.is_empty() {
            break;
        }
        token = resp.next_page_token;
    }
    if held > 0 {
        println!("{total} change(s), {held} held back");
    } else {
        println!("{total} change(s)");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

pub async fn status(conn: Conn) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await
        .map_err(status_err)?
        .into_inner();
    println!("planner: {}", s.level);
    // One line per rule that applies (docs/reliability.md says what to do).
    for r in &s.reasons {
        println!("  {} [{}]: {}", r.level, r.rule, r.message);
    }
    if s.safety_mode == "observe" {
        println!("mode: observe (plans are reported, nothing is written)");
    } else if !s.safety_mode.is_empty() {
        println!("mode: {}", s.safety_mode);
    }
    if let Some(l) = &s.lease {
        println!("lease: {}", lease_line(l));
    }
    for z in &s.zones {
        let states: Vec<String> = z
            .records_by_state
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!(
            "zone {} [{} via {}]: desired {}, observed {}, {}{}",
            z.zone,
            z.policy,
            z.account,
            z.desired_records,
            z.observed_records,
            states.join(" "),
            if z.last_error.is_empty() {
                String::new()
            } else {
                format!(", error: {}", z.last_error)
            }
        );
    }
    for z in &s.zones {
        if let Some(r) = &z.released {
            println!(
                "zone {} RELEASED to external-dns owner {}: not planned until `dnsplane resume {}`",
                z.zone, r.external_dns_owner, z.zone
            );
        }
        if let Some(h) = &z.held {
            println!(
                "zone {} HELD: {} creates, {} deletes, {} updates of {} owned records held ({}); digest {}; approve with `dnsplane approve {}`",
                z.zone,
                h.creates,
                h.deletes,
                h.updates,
                h.owned_records,
                h.reason,
                h.digest,
                z.zone
            );
        }
    }
    for src in s.sources.iter().filter(|src| !src.ready) {
        println!(
            "source {} NOT READY: {} (its last accepted records are kept)",
            src.name, src.reason
        );
    }
    for e in &s.source_errors {
        println!("source error: {}: {}: {}", e.location, e.record, e.message);
    }
    // Scripts and probes read the exit code: anything short of healthy (or a sync in
    // progress) is not "fine".
    let standby = s.lease.as_ref().is_some_and(|l| l.role == "standby");
    Ok(if s.level == "degraded" || s.level == "failing" {
        std::process::ExitCode::from(dnsplane_cli::EXIT_NOT_CONVERGED)
    } else if standby {
        std::process::ExitCode::from(dnsplane_cli::EXIT_STANDBY)
    } else {
        std::process::ExitCode::SUCCESS
    })
}

/// `leader (redis 127.0.0.1:6379, since 2024-…, epoch 3)` or `standby (held by
/// host/pid/run; redis 127.0.0.1:6379, since …)`.
fn lease_line(l: &pb::LeaseStatus) -> String {
    let since = l.since.map(|t| t.to_string()).unwrap_or_default();
    let mut out = if l.role == "leader" {
        format!(
            "leader ({} {}, since {since}, epoch {})",
            l.backend, l.location, l.epoch
        )
    } else {
        let holder = if l.holder.is_empty() {
            "nobody known".to_string()
        } else {
            l.holder.clone()
        };
        format!(
            "{} (held by {holder}; {} {}, since {since})",
            l.role, l.backend, l.location
        )
    };
    if !l.last_error.is_empty() {
        out.push_str(&format!(", error: {}", l.last_error));
    }
    out
}

pub async fn records(
    conn: Conn,
    zone: String,
    all: bool,
) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let mut token = String::new();
    let mut n = 0;
    loop {
        let page = client
            .list_record_states(pb::ListRecordStatesRequest {
                zone: zone.clone(),
                states: vec![],
                include_converged: all,
                page_size: 1000,
                page_token: token.clone(),
            })
            .await
            .map_err(status_err)?
            .into_inner();
        for r in &page.records {
            n += 1;
            let key = r.key.clone().unwrap_or_default();
            println!(
                "{} {}: {} (observed: {}{}, attempts {})",
                key_text(&key),
                dnsplane_planner::service::kind_name(r.state),
                if r.reason.is_empty() { "-" } else { &r.reason },
                show(r.observed.as_ref()),
                if r.observed_owner.is_empty() {
                    String::new()
                } else {
                    format!(", owner {}", r.observed_owner)
                },
                r.attempts
            );
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    println!("{n} record(s)");
    Ok(std::process::ExitCode::SUCCESS)
}

pub async fn sync(conn: Conn, zones: Vec<String>) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let mut stream = client
        .sync(pb::SyncRequest { zones, fresh: true })
        .await
        .map_err(status_err)?
        .into_inner();
    let mut failed = false;
    while let Some(p) = stream.message().await.map_err(status_err)? {
        let outcomes: Vec<String> = p.outcomes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!(
            "{} {}: {}/{} {}{}",
            p.zone,
            p.phase,
            p.changes_done,
            p.changes_planned,
            outcomes.join(" "),
            if p.error.is_empty() {
                String::new()
            } else {
                format!(" error: {}", p.error)
            }
        );
        failed |= p.phase == "failed";
    }
    Ok(if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}

pub async fn approve(
    conn: Conn,
    zone: String,
    digest: Option<String>,
) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let digest = match digest {
        Some(d) => d,
        None => {
            let s = client
                .get_status(pb::GetStatusRequest {})
                .await
                .map_err(status_err)?
                .into_inner();
            let want = zone.trim_end_matches('.').to_ascii_lowercase();
            let Some(z) = s
                .zones
                .iter()
                .find(|z| z.zone.trim_end_matches('.') == want)
            else {
                anyhow::bail!("zone {zone} is not configured on this planner");
            };
            let Some(h) = &z.held else {
                println!("zone {}: no plan is held; nothing to approve", z.zone);
                return Ok(std::process::ExitCode::SUCCESS);
            };
            println!(
                "zone {}: approving the held plan {}: {} creates, {} deletes, {} updates of {} owned records ({})",
                z.zone, h.digest, h.creates, h.deletes, h.updates, h.owned_records, h.reason
            );
            h.digest.clone()
        }
    };
    let resp = client
        .approve(pb::ApproveRequest {
            zone: zone.clone(),
            digest,
        })
        .await
        .map_err(status_err)?
        .into_inner();
    if let Some(h) = resp.approved {
        println!(
            "approved {}: the next sync of {zone} applies {} deletes and {} updates (it is held again if the plan changed)",
            h.digest, h.deletes, h.updates
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// One op of a release change: what it does to the record or its marks.
fn release_op(op: &pb::RrSetOp) -> String {
    match (&op.before, &op.after) {
        (Some(b), Some(a)) if b == a => format!("{} (kept)", show(Some(a))),
        (Some(b), None) => format!("{} (dnsplane's mark removed)", show(Some(b))),
        (None, Some(a)) => format!("{} (external-dns's mark written)", show(Some(a))),
        (b, a) => format!("{} → {}", show(b.as_ref()), show(a.as_ref())),
    }
}

/// `dnsplane release ZONE --to-external-dns OWNER`: the reverse door of
/// docs/external-dns.md.
pub async fn release(
    conn: Conn,
    zone: String,
    owner: String,
    dry_run: bool,
) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let resp = client
        .release(pb::ReleaseRequest {
            zone: zone.clone(),
            external_dns_owner: owner.clone(),
            dry_run,
        })
        .await
        .map_err(status_err)?
        .into_inner();
    let zone = resp.zone;
    if dry_run {
        for c in &resp.changes {
            let change = c.change.clone().unwrap_or_default();
            let key = change
                .ops
                .first()
                .and_then(|op| op.key.clone())
                .unwrap_or_default();
            println!("  > {}    # {}", key_text(&key), c.reason);
        }
        println!(
            "zone {zone}: would hand {} record(s) to external-dns owner {owner} ({} already are); nothing written",
            resp.changes.len(),
            resp.already
        );
        return Ok(std::process::ExitCode::SUCCESS);
    }
    for c in &resp.left {
        let key = c
            .change
            .as_ref()
            .and_then(|ch| ch.ops.first())
            .and_then(|op| op.key.clone())
            .unwrap_or_default();
        println!("  not yet: {}    # {}", key_text(&key), c.reason);
    }
    println!(
        "zone {zone}: released to external-dns owner {owner}: {} record(s) handed over now, {} already were, {} left; dnsplane no longer plans {zone} (`dnsplane resume {zone}` to manage it again)",
        resp.released,
        resp.already,
        resp.left.len()
    );
    if resp.left.is_empty() {
        Ok(std::process::ExitCode::SUCCESS)
    } else {
        println!("run the same release again to finish the records left");
        Ok(std::process::ExitCode::from(2))
    }
}

/// `dnsplane resume ZONE`: manage a released zone again.
pub async fn resume(conn: Conn, zone: String) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let resp = client
        .resume(pb::ResumeRequest { zone: zone.clone() })
        .await
        .map_err(status_err)?
        .into_inner();
    println!(
        "zone {zone}: managed again (it was released to external-dns owner {}); a full sync follows",
        resp.was_released_to
    );
    Ok(std::process::ExitCode::SUCCESS)
}
