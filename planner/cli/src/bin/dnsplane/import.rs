//! DNS as code from a live zone: `import` (the zone's records as files to commit),
//! `export` (the desired or observed state to stdout) and `adopt` (ownership of the
//! unowned records that equal the desired ones, without changing a value).
//!
//! Import writes only what is safe to declare: records of another owner (another
//! dnsplane, external-dns's TXT registry) and ownership marks are left out and listed,
//! and the zone's SOA and apex NS are the provider's. It never deletes a file: an
//! output directory that is not empty is refused unless `--force`, and then only the
//! files it writes are replaced.
use crate::conn::{Conn, connect, status_err};
use crate::files::{self, WriteFormat};
use crate::remote::key_text;
use anyhow::Context;
use dnsplane_common::convert::rrset_from_pb;
use dnsplane_common::{Name, RRSet, RecordType, pb};
use dnsplane_planner::source::DesiredEntry;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `dnsplane import`'s flags.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The zone to import, e.g. `example.com`.
    pub zone: String,
    /// The account of the zone's target to read, where the zone is served by several
    /// accounts (`accounts = [...]`).
    #[arg(long, default_value = "")]
    pub account: String,
    /// The directory to write the files into.
    #[arg(long)]
    pub out: PathBuf,
    /// What to write.
    #[arg(long, value_enum, default_value_t)]
    pub format: WriteFormat,
    /// At most this many records in one DNSEndpoint file (zone files and octoDNS
    /// files hold a whole zone: that is how BIND and octoDNS read them).
    #[arg(long, default_value_t = 1000)]
    pub per_file: usize,
    /// Then take ownership of the records written that the planner's desired state
    /// holds with the same data (shown first as a plan; no value changes).
    #[arg(long)]
    pub adopt: bool,
    /// Write into an output directory that is not empty (files of the same name are
    /// replaced; no other file is touched).
    #[arg(long)]
    pub force: bool,
}

/// A zone's records as the planner reads them now.
struct ZoneRead {
    zone: Name,
    records: Vec<(RRSet, pb::ZoneRecord)>,
}

async fn read_zone(
    conn: &Conn,
    zone: &str,
    account: &str,
    what: pb::ReadZoneWhat,
) -> anyhow::Result<ZoneRead> {
    let mut client = connect(conn).await?;
    let mut stream = client
        .read_zone(pb::ReadZoneRequest {
            zone: zone.to_string(),
            what: what as i32,
            fresh: true,
            account: account.to_string(),
        })
        .await
        .map_err(status_err)?
        .into_inner();
    let mut records = Vec::new();
    while let Some(msg) = stream.message().await.map_err(status_err)? {
        for r in msg.records {
            let rrset = rrset_from_pb("rrset", r.rrset.as_ref().unwrap_or(&pb::RrSet::default()))
                .map_err(|e| {
                anyhow::anyhow!("the planner sent a record that does not parse: {e}")
            })?;
            records.push((rrset, r));
        }
    }
    let zone = Name::parse(zone).with_context(|| format!("zone {zone:?}"))?;
    Ok(ZoneRead { zone, records })
}

/// Whether `r` is the zone's own NS at its apex (the provider's, never declared).
fn is_apex_ns(zone: &Name, r: &RRSet) -> bool {
    r.key.rtype == RecordType::Ns && r.key.name == *zone
}

pub async fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    check_out_dir(&args.out, args.force)?;
    let read = read_zone(
        &args.conn,
        &args.zone,
        &args.account,
        pb::ReadZoneWhat::Observed,
    )
    .await?;
    let zone = read.zone.clone();
    let origin = files::planner_origin(&zone);
    let mut entries = Vec::new();
    let mut others: Vec<String> = Vec::new();
    let mut marks = 0usize;
    let mut apex_ns = Vec::new();
    for (rrset, r) in &read.records {
        if r.mark {
            marks += 1;
        } else if is_apex_ns(&zone, rrset) {
            apex_ns.extend(rrset.values_vec());
        } else if !r.owner.is_empty() && !r.owned_here {
            others.push(format!(
                "{} (owned by {} {:?})",
                key_text(&(&rrset.key).into()),
                r.owner_kind,
                r.owner
            ));
        } else {
            entries.push(files::from_rrset(rrset, &origin));
        }
    }
    entries.sort_by_key(DesiredEntry::entry_key);
    let written = files::write(args.format, &zone, &entries, args.per_file, &apex_ns)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    for f in &written.files {
        write_atomically(&args.out.join(&f.name), &f.text)?;
    }
    let records: usize = written.files.iter().map(|f| f.records).sum();
    println!(
        "zone {zone}: wrote {records} record(s) in {} file(s) to {} ({:?})",
        written.files.len(),
        args.out.display(),
        args.format
    );
    if !apex_ns.is_empty() {
        println!(
            "  left out: the apex NS ({}): the provider's, never written",
            apex_ns.join(", ")
        );
    }
    if marks > 0 {
        println!("  left out: {marks} ownership mark(s) (external-dns TXT registry)");
    }
    if !others.is_empty() {
        println!(
            "  left out: {} record(s) another owner holds:",
            others.len()
        );
        for o in &others {
            println!("    {o}");
        }
    }
    if !written.skipped.is_empty() {
        println!(
            "  left out: {} record(s) this format cannot hold (import with --format dnsendpoint to keep them):",
            written.skipped.len()
        );
        for (e, why) in &written.skipped {
            println!("    {} {}: {why}", e.name, e.rtype);
        }
    }
    if args.adopt {
        return adopt(args.conn, args.zone, args.account, false, None).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses an output directory that holds anything, unless `force`.
fn check_out_dir(out: &Path, force: bool) -> anyhow::Result<()> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() && !force {
                anyhow::bail!(
                    "{} is not empty; import writes into an empty directory (--force replaces the files it writes and touches no other)",
                    out.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            anyhow::bail!("{} is not a directory", out.display())
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", out.display())),
    }
}

/// Writes `text` to `path` through a temporary file and a rename: a reader (the
/// planner's file source polling the directory) never sees half a file.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("import")
    ));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// `dnsplane export ZONE`: the desired state (or the provider's records) on stdout.
pub async fn export(
    conn: Conn,
    zone: String,
    account: String,
    format: WriteFormat,
    observed: bool,
) -> anyhow::Result<ExitCode> {
    let what = if observed {
        pb::ReadZoneWhat::Observed
    } else {
        pb::ReadZoneWhat::Desired
    };
    let read = read_zone(&conn, &zone, &account, what).await?;
    let zone = read.zone.clone();
    let origin = files::planner_origin(&zone);
    let mut apex_ns = Vec::new();
    let mut entries = Vec::new();
    for (rrset, r) in &read.records {
        if r.mark {
            continue;
        }
        if is_apex_ns(&zone, rrset) {
            apex_ns.extend(rrset.values_vec());
        } else {
            entries.push(files::from_rrset(rrset, &origin));
        }
    }
    entries.sort_by_key(DesiredEntry::entry_key);
    let written = files::write(format, &zone, &entries, usize::MAX, &apex_ns)?;
    for f in &written.files {
        print!("{}", f.text);
    }
    for (e, why) in &written.skipped {
        eprintln!("dnsplane export: left out {} {}: {why}", e.name, e.rtype);
    }
    Ok(ExitCode::SUCCESS)
}

/// `dnsplane adopt ZONE` (and `import --adopt`): shows the adopt plan, then writes
/// exactly it (by its digest) unless `dry_run`.
pub async fn adopt(
    conn: Conn,
    zone: String,
    account: String,
    dry_run: bool,
    digest: Option<String>,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(&conn).await?;
    let digest = match digest {
        Some(d) => d,
        None => {
            let plan = client
                .adopt(pb::AdoptRequest {
                    zone: zone.clone(),
                    dry_run: true,
                    digest: String::new(),
                    account: account.clone(),
                })
                .await
                .map_err(status_err)?
                .into_inner();
            print_adopt_plan(&plan);
            if dry_run {
                println!("dry run: nothing written");
                return Ok(ExitCode::SUCCESS);
            }
            if plan.changes.is_empty() {
                println!("zone {}: nothing to adopt", plan.zone);
                return Ok(ExitCode::SUCCESS);
            }
            plan.digest
        }
    };
    let done = client
        .adopt(pb::AdoptRequest {
            zone: zone.clone(),
            dry_run: false,
            digest,
            account,
        })
        .await
        .map_err(status_err)?
        .into_inner();
    println!(
        "zone {}: adopted {} of {} record(s) (plan {}); their values are unchanged",
        done.zone,
        done.adopted,
        done.changes.len(),
        done.digest
    );
    Ok(if done.adopted as usize == done.changes.len() {
        ExitCode::SUCCESS
    } else {
        println!(
            "some records were not taken (see `dnsplane records --zone {}`); run adopt again",
            done.zone
        );
        ExitCode::from(dnsplane_cli::EXIT_NOT_CONVERGED)
    })
}

fn print_adopt_plan(plan: &pb::AdoptResponse) {
    for c in &plan.changes {
        let key = c
            .change
            .as_ref()
            .and_then(|ch| ch.ops.first())
            .and_then(|op| op.key.clone())
            .unwrap_or_default();
        println!("  = {}    # {}", key_text(&key), c.reason);
    }
    const SHOWN: usize = 20;
    for l in plan.left_alone.iter().take(SHOWN) {
        println!(
            "  ! {} left alone: {}",
            key_text(&l.key.clone().unwrap_or_default()),
            l.reason
        );
    }
    if plan.left_alone.len() > SHOWN {
        println!(
            "  ... and {} more left alone",
            plan.left_alone.len() - SHOWN
        );
    }
    println!(
        "zone {}: adopt plan {}: {} record(s) to take (their data asserted unchanged, this planner's mark created), {} unowned record(s) left alone",
        plan.zone,
        plan.digest,
        plan.changes.len(),
        plan.left_alone.len()
    );
}
