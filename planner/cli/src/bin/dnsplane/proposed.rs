//! `dnsplane plan --desired PATH`: what would change if PATH were the desired state.
//!
//! PATH is read here, exactly as the planner's file source reads it
//! ([`crate::files::load`]); a file with any problem stops the command with every
//! problem named (exit 1, nothing planned). The records go to the running planner's
//! `PlanProposed` in chunks, which plans each zone against them as a sync would,
//! guard included, and keeps nothing: only the `read` role is needed.
use crate::conn::{Conn, connect, status_err};
use crate::files::{self, FormatArg};
use crate::output::Output;
use crate::view;
use dnsplane_common::pb;
use std::path::Path;
use std::process::ExitCode;

/// Records per chunk: well under the 4 MiB a planner takes in one message.
const RECORDS_PER_CHUNK: usize = 5_000;

pub async fn plan_desired(
    conn: Conn,
    zones: Vec<String>,
    account: String,
    path: &Path,
    format: FormatArg,
    out: Output,
    detailed: bool,
) -> anyhow::Result<ExitCode> {
    let entries = files::load(path, format)?;
    let records: Vec<pb::DesiredRecord> = entries.iter().map(files::to_pb).collect();
    drop(entries);
    let mut chunks: Vec<pb::PlanProposedChunk> = records
        .chunks(RECORDS_PER_CHUNK)
        .map(|c| pb::PlanProposedChunk {
            records: c.to_vec(),
            ..Default::default()
        })
        .collect();
    if chunks.is_empty() {
        chunks.push(pb::PlanProposedChunk::default());
    }
    chunks[0].zones = zones;
    chunks[0].account = account;
    chunks[0].fresh = true;
    if let Some(last) = chunks.last_mut() {
        last.last = true;
    }
    let mut client = connect(&conn).await?;
    let resp = client
        .plan_proposed(tokio_stream::iter(chunks))
        .await
        .map_err(|s| {
            status_err(s).context(format!(
                "the planner refused the desired state in {}; nothing planned",
                path.display()
            ))
        })?
        .into_inner();
    crate::remote::show_plan(&view::Plan::new(resp.zones), out, true, detailed)
}
