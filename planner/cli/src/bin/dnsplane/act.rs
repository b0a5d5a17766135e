//! The commands that act on a running planner: `approve`, `release`, `resume`.
use crate::conn::{Conn, connect, status_err};
use crate::remote::key_text;
use dnsplane_common::pb;

pub async fn approve(
    conn: Conn,
    zone: String,
    account: String,
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
            let targets: Vec<&pb::ZoneStatus> = s
                .zones
                .iter()
                .filter(|z| z.zone.trim_end_matches('.') == want)
                .collect();
            let accounts = || {
                targets
                    .iter()
                    .map(|z| z.account.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let z = match targets.as_slice() {
                [] => anyhow::bail!("zone {zone} is not configured on this planner"),
                [only] if account.is_empty() || only.account == account => *only,
                _ if account.is_empty() => anyhow::bail!(
                    "zone {zone} has several targets (accounts {}): name one with --account",
                    accounts()
                ),
                _ => match targets.iter().find(|z| z.account == account) {
                    Some(z) => *z,
                    None => anyhow::bail!(
                        "zone {zone} has no target at account {account:?} (accounts {})",
                        accounts()
                    ),
                },
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
            account,
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

/// `dnsplane release ZONE --to-external-dns OWNER`: the reverse door of
/// docs/external-dns.md.
pub async fn release(
    conn: Conn,
    zone: String,
    account: String,
    owner: String,
    dry_run: bool,
) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let resp = client
        .release(pb::ReleaseRequest {
            zone: zone.clone(),
            external_dns_owner: owner.clone(),
            dry_run,
            account,
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
pub async fn resume(
    conn: Conn,
    zone: String,
    account: String,
) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let resp = client
        .resume(pb::ResumeRequest {
            zone: zone.clone(),
            account,
        })
        .await
        .map_err(status_err)?
        .into_inner();
    println!(
        "zone {zone}: managed again (it was released to external-dns owner {}); a full sync follows",
        resp.was_released_to
    );
    Ok(std::process::ExitCode::SUCCESS)
}
