//! `dnsplane sync`: triggers a sync and follows it to its end; a progress bar per
//! zone on a terminal, one plain line per progress message otherwise, or one JSON /
//! YAML document with each zone's last progress.
use crate::conn::{Conn, connect, status_err};
use crate::output::Output;
use crate::view;
use dnsplane_common::pb;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;

/// 0 when every zone's sync ended done, 1 when one failed.
pub async fn sync(
    conn: Conn,
    zones: Vec<String>,
    account: String,
    out: Output,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(&conn).await?;
    let mut stream = client
        .sync(pb::SyncRequest {
            zones,
            fresh: true,
            account,
        })
        .await
        .map_err(status_err)?
        .into_inner();
    // Bars only for people at a terminal; a pipe gets lines it can grep.
    let bars = (out.is_table() && std::io::stdout().is_terminal()).then(MultiProgress::new);
    if let Some(m) = &bars {
        m.set_draw_target(ProgressDrawTarget::stdout());
    }
    let style = ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len} {msg}")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    let mut zone_bars: BTreeMap<(String, String), ProgressBar> = BTreeMap::new();
    let mut last: BTreeMap<(String, String), view::SyncZone> = BTreeMap::new();
    while let Some(p) = stream.message().await.map_err(status_err)? {
        let z = view::SyncZone::from(&p);
        let outcomes: Vec<String> = z.outcomes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        // A zone served by several accounts syncs once per account: say which.
        let label = if z.account.is_empty() {
            z.zone.clone()
        } else {
            format!("{} ({})", z.zone, z.account)
        };
        let line = format!(
            "{} {}: {}/{} {}{}",
            label,
            z.phase,
            z.changes_done,
            z.changes_planned,
            outcomes.join(" "),
            if z.error.is_empty() {
                String::new()
            } else {
                format!(" error: {}", z.error)
            }
        );
        match &bars {
            Some(m) => {
                let key = (z.zone.clone(), z.account.clone());
                let bar = zone_bars.entry(key).or_insert_with(|| {
                    let b = m.add(ProgressBar::new(0));
                    b.set_style(style.clone());
                    b.set_prefix(label.clone());
                    b
                });
                bar.set_length(u64::from(z.changes_planned));
                bar.set_position(u64::from(z.changes_done));
                bar.set_message(format!("{} {}", z.phase, outcomes.join(" ")));
                if z.phase == "done" || z.phase == "failed" {
                    bar.finish_with_message(line.clone());
                }
            }
            None if out.is_table() => println!("{line}"),
            None => {}
        }
        last.insert((z.zone.clone(), z.account.clone()), z);
    }
    let doc = view::Sync {
        zones: last.into_values().collect(),
    };
    if !out.is_table() {
        out.emit(&doc)?;
    }
    Ok(if doc.zones.iter().any(|z| z.phase == "failed") {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
