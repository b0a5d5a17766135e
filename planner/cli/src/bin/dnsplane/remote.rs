//! The read commands: `plan`, `status`, `records`. Each fetches every page, builds
//! its document ([`crate::view`], sorted) and prints it as a table or as JSON/YAML
//! ([`crate::output`]); the exit code says whether all is converged (docs/cli.md,
//! "Exit codes").
use crate::conn::{Conn, connect, status_err};
use crate::output::{Output, Tone, short, tone_of};
use crate::view;
use dnsplane_common::pb;
use std::process::ExitCode;

/// A record set as `ttl v1 | v2 prop=value`, or `nothing`.
fn show_view(r: Option<&view::RrSet>) -> String {
    match r {
        None => "nothing".into(),
        Some(r) => {
            let mut text = format!("{} {}", r.ttl, r.values.join(" | "));
            for (name, value) in &r.properties {
                text.push_str(&format!(" {name}={value}"));
            }
            text
        }
    }
}

/// `name type`, and the routing-policy set when there is one.
pub fn key_text(key: &pb::RecordKey) -> String {
    name_type(&key.name, &key.r#type, &key.set_identifier)
}

fn name_type(name: &str, rtype: &str, set: &str) -> String {
    match set {
        "" => format!("{name} {rtype}"),
        set => format!("{name} {rtype} [set {set:?}]"),
    }
}

/// `plan`: 1 on a zone error; with `--detailed-exitcode`, 2 when there are changes
/// (or a held plan), else 0.
pub async fn plan(
    conn: Conn,
    zones: Vec<String>,
    account: String,
    out: Output,
    detailed: bool,
) -> anyhow::Result<ExitCode> {
    let mut client = connect(&conn).await?;
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let resp = client
            .plan(pb::PlanRequest {
                zones: zones.clone(),
                fresh: true,
                page_size: 1000,
                page_token: token.clone(),
                account: account.clone(),
            })
            .await
            .map_err(status_err)?
            .into_inner();
        pages.extend(resp.zones);
        if resp.next_page_token.is_empty() {
            break;
        }
        token = resp.next_page_token;
    }
    show_plan(&view::Plan::new(pages), out, false, detailed)
}

/// Prints a plan as `out` says and returns its exit code: 1 on a zone error; with
/// `detailed`, 2 when there are changes (or a held plan), else 0.
pub fn show_plan(
    plan: &view::Plan,
    out: Output,
    proposed: bool,
    detailed: bool,
) -> anyhow::Result<ExitCode> {
    match out.format {
        crate::output::Format::Table => print_plan(plan, out, proposed),
        crate::output::Format::Markdown => print!("{}", crate::markdown::render(plan, proposed)),
        _ => out.emit(plan)?,
    }
    let errors = plan.zones.iter().any(|z| !z.error.is_empty());
    let changes = plan.changes > 0 || plan.zones.iter().any(|z| z.held.is_some());
    Ok(if errors {
        ExitCode::FAILURE
    } else if detailed && changes {
        ExitCode::from(dnsplane_cli::EXIT_NOT_CONVERGED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The plan as a readable diff: `+` create, `-` delete, `~` update, `=` adopt, `>`
/// release, `!` held back.
fn print_plan(plan: &view::Plan, out: Output, proposed: bool) {
    for z in &plan.zones {
        println!("zone {}", z.zone);
        if !z.error.is_empty() {
            println!("  {}", out.paint(&format!("error: {}", z.error), Tone::Bad));
            continue;
        }
        if z.changes.is_empty() && z.blocked.is_empty() {
            println!("  {}", out.paint("in sync", Tone::Good));
        }
        if let Some(h) = &z.held {
            let text = if proposed {
                format!(
                    "would be HELD by the mass-change guard: {} deletes and {} updates of {} owned records ({}); a sync would wait for `dnsplane approve {}`",
                    h.deletes, h.updates, h.owned_records, h.reason, z.zone
                )
            } else {
                format!(
                    "HELD by the mass-change guard: {}; the deletes and updates below wait for `dnsplane approve {}` (digest {})",
                    h.reason, z.zone, h.digest
                )
            };
            println!("  {}", out.paint(&text, Tone::Bad));
        }
        for c in &z.changes {
            let Some(op) = c.ops.first() else { continue };
            let (before, after) = (show_view(op.before.as_ref()), show_view(op.after.as_ref()));
            let (sign, body, tone) = match c.kind.as_str() {
                "create" => ("+", after, Tone::Good),
                "delete" => ("-", before, Tone::Bad),
                "update" => ("~", format!("{before} → {after}"), Tone::Warn),
                "adopt" if op.before != op.after => {
                    ("=", format!("{before} → {after} (adopt)"), Tone::Warn)
                }
                "adopt" => ("=", format!("{after} (adopt)"), Tone::Good),
                "release" => (">", release_body(op), Tone::Warn),
                _ => ("?", String::new(), Tone::Warn),
            };
            let line = format!(
                "{sign} {} {body}",
                name_type(&op.name, &op.r#type, &op.set_identifier)
            );
            println!("  {}    # {}", out.paint(&line, tone), c.reason);
        }
        for b in &z.blocked {
            let retry = b
                .next_retry_in_seconds
                .map(|s| format!(", next try in {s}s"))
                .unwrap_or_default();
            let owner = if b.observed_owner.is_empty() {
                String::new()
            } else {
                format!(", owner {}", b.observed_owner)
            };
            let line = format!(
                "! {} held back",
                name_type(&b.name, &b.r#type, &b.set_identifier)
            );
            println!(
                "  {}: {} (observed: {}{owner}{retry})",
                out.paint(&line, Tone::Bad),
                b.reason,
                show_view(b.observed.as_ref()),
            );
        }
    }
    if plan.blocked > 0 {
        println!("{} change(s), {} held back", plan.changes, plan.blocked);
    } else {
        println!("{} change(s)", plan.changes);
    }
}

fn release_body(op: &view::Op) -> String {
    match (&op.before, &op.after) {
        (Some(b), Some(a)) if b == a => {
            format!("{} (kept)", show_view(Some(a)))
        }
        (Some(b), None) => format!("{} (dnsplane's mark removed)", show_view(Some(b))),
        (None, Some(a)) => format!("{} (external-dns's mark written)", show_view(Some(a))),
        (b, a) => format!("{} → {}", show_view(b.as_ref()), show_view(a.as_ref())),
    }
}

/// `status`: 0 converged, 2 degraded or not converged, 3 a healthy standby.
pub async fn status(conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let mut client = connect(&conn).await?;
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await
        .map_err(status_err)?
        .into_inner();
    let doc = view::Status::from(&s);
    if out.is_table() {
        print_status(&doc, &s, out);
    } else {
        out.emit(&doc)?;
    }
    Ok(ExitCode::from(doc.exit_code))
}

fn print_status(doc: &view::Status, s: &pb::PlannerStatus, out: Output) {
    let level = out.paint(
        &doc.level,
        tone_of(&doc.level).unwrap_or(crate::output::Tone::Warn),
    );
    println!(
        "planner: {level}{}",
        if doc.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", doc.reason)
        }
    );
    // One line per rule that applies (docs/reliability.md says what to do).
    for r in &doc.reasons {
        let tone = tone_of(&r.level).unwrap_or(crate::output::Tone::Warn);
        println!(
            "  {} [{}]: {}",
            out.paint(&r.level, tone),
            r.rule,
            r.message
        );
    }
    if doc.safety_mode == "observe" {
        println!("mode: observe (plans are reported, nothing is written)");
    } else if !doc.safety_mode.is_empty() {
        println!("mode: {}", doc.safety_mode);
    }
    if let Some(l) = &s.lease {
        println!("lease: {}", lease_line(l));
    }
    let mut t = out.table(&[
        "ZONE",
        "POLICY",
        "ACCOUNT",
        "DESIRED",
        "OBSERVED",
        "RECORDS",
        "LAST SYNC",
        "ERROR",
    ]);
    for z in &doc.zones {
        let states: Vec<String> = z
            .records_by_state
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let last = match (&z.last_sync, z.last_sync_age_seconds) {
            (Some(at), Some(age)) => format!("{at} ({} ago)", short(age)),
            _ => "never".to_string(),
        };
        let tone = if z.converged() {
            Some(Tone::Good)
        } else {
            Some(Tone::Bad)
        };
        t.add_row(vec![
            out.cell(&z.zone, tone),
            out.cell(&z.policy, None),
            out.cell(&z.account, None),
            out.cell(z.desired_records, None),
            out.cell(z.observed_records, None),
            out.cell(states.join(" "), tone),
            out.cell(last, None),
            out.cell(&z.last_error, Some(Tone::Bad)),
        ]);
    }
    println!("{t}");
    for z in &doc.zones {
        if let Some(owner) = &z.released_to {
            println!(
                "zone {} RELEASED to external-dns owner {owner}: not planned until `dnsplane resume {}`",
                z.zone, z.zone
            );
        }
        if let Some(h) = &z.held {
            println!(
                "zone {} {}: {} creates, {} deletes, {} updates of {} owned records held ({}); digest {}; approve with `dnsplane approve {}`",
                z.zone,
                out.paint("HELD", Tone::Bad),
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
    for src in doc
        .sources
        .iter()
        .filter(|src| !src.ready && src.parts.is_empty())
    {
        println!(
            "source {} {}: {} (its last accepted records are kept)",
            src.name,
            out.paint("NOT READY", Tone::Bad),
            src.reason
        );
    }
    // A source with parts (a Kubernetes source's kinds): every part, ready or not.
    for src in doc.sources.iter().filter(|src| !src.parts.is_empty()) {
        for p in &src.parts {
            let detail = if p.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.detail)
            };
            if p.ready {
                println!(
                    "source {} {}: {}{detail}",
                    src.name,
                    p.name,
                    out.paint("ready", Tone::Good)
                );
            } else {
                println!(
                    "source {} {}: {}: {} (its last accepted records are kept){detail}",
                    src.name,
                    p.name,
                    out.paint("NOT READY", Tone::Bad),
                    p.reason
                );
            }
        }
    }
    for e in &doc.source_errors {
        // An error about a whole object (a Kubernetes Service's load balancer) names
        // no record.
        if e.record.is_empty() {
            println!("source error: {}: {}", e.location, e.message);
        } else {
            println!("source error: {}: {}: {}", e.location, e.record, e.message);
        }
    }
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
    } else if l.role == "fenced" {
        format!(
            "fenced by epoch {} (holder {}; {} {}, since {since}): {}",
            l.epoch, l.holder, l.backend, l.location, l.fenced
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

/// What `records` lists.
pub struct RecordsQuery {
    /// One name (empty: every name of the zones).
    pub name: String,
    pub zone: String,
    pub account: String,
    pub all: bool,
}

/// `records`: 2 when any record listed is not converged.
pub async fn records(conn: Conn, q: RecordsQuery, out: Output) -> anyhow::Result<ExitCode> {
    let RecordsQuery {
        name,
        zone,
        account,
        all,
    } = q;
    let mut client = connect(&conn).await?;
    let mut token = String::new();
    let mut list = Vec::new();
    loop {
        let page = client
            .list_record_states(pb::ListRecordStatesRequest {
                zone: zone.clone(),
                states: vec![],
                include_converged: all,
                page_size: 1000,
                page_token: token.clone(),
                account: account.clone(),
                name: name.clone(),
            })
            .await
            .map_err(status_err)?
            .into_inner();
        list.extend(page.records.iter().map(view::Record::from));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let doc = view::Records::new(list);
    if out.is_table() {
        let mut t = out.table(&[
            "NAME",
            "TYPE",
            "STATE",
            "REASON",
            "DESIRED",
            "OBSERVED",
            "OWNER",
            "ATTEMPTS",
            "NEXT RETRY",
        ]);
        for r in &doc.records {
            let name = match r.set_identifier.as_str() {
                "" => r.name.clone(),
                set => format!("{} [set {set:?}]", r.name),
            };
            t.add_row(vec![
                out.cell(name, None),
                out.cell(&r.r#type, None),
                out.cell(&r.state, tone_of(&r.state)),
                out.cell(if r.reason.is_empty() { "-" } else { &r.reason }, None),
                out.cell(show_view(r.desired.as_ref()), None),
                out.cell(show_view(r.observed.as_ref()), None),
                out.cell(
                    if r.observed_owner.is_empty() {
                        "-"
                    } else {
                        &r.observed_owner
                    },
                    None,
                ),
                out.cell(r.attempts, None),
                out.cell(
                    r.next_retry_in_seconds
                        .map_or("-".to_string(), |s| format!("in {}", short(s))),
                    None,
                ),
            ]);
        }
        println!("{t}");
        println!("{} record(s)", doc.records.len());
        // `records NAME`: where each value comes from.
        for r in doc.records.iter().filter(|r| !r.sources.is_empty()) {
            println!("{} {} at {}:", r.name, r.r#type, r.account);
            for v in &r.sources {
                println!("  {}  from {}", v.value, v.sources.join(", "));
            }
        }
    } else {
        out.emit(&doc)?;
    }
    Ok(if doc.not_converged > 0 {
        ExitCode::from(dnsplane_cli::EXIT_NOT_CONVERGED)
    } else {
        ExitCode::SUCCESS
    })
}
