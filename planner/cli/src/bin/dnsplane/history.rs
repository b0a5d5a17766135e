//! `dnsplane history NAME`: the audit events of one record name, newest first, from
//! the planner's audit file (`Planner/History`).
use crate::conn::{Conn, connect, status_err};
use crate::output::Output;
use dnsplane_common::pb;
use serde::Serialize;

/// `dnsplane history -o json`: the events newest first, fields as in the audit file
/// (docs/observability.md, audit events).
#[derive(Debug, Serialize)]
struct History {
    name: String,
    events: Vec<Event>,
}

#[derive(Debug, Serialize)]
struct Event {
    time: String,
    event: String,
    zone: String,
    name: String,
    r#type: String,
    old: String,
    new: String,
    change: String,
    outcome: String,
    reason: String,
    batch_id: String,
    trace_id: String,
    source: String,
    caller: String,
}

impl From<&pb::AuditEvent> for Event {
    fn from(e: &pb::AuditEvent) -> Self {
        Event {
            time: e.time.clone(),
            event: e.event.clone(),
            zone: e.zone.clone(),
            name: e.name.clone(),
            r#type: e.r#type.clone(),
            old: e.old.clone(),
            new: e.new.clone(),
            change: e.change.clone(),
            outcome: e.outcome.clone(),
            reason: e.reason.clone(),
            batch_id: e.batch_id.clone(),
            trace_id: e.trace_id.clone(),
            source: e.source.clone(),
            caller: e.caller.clone(),
        }
    }
}

pub async fn history(
    conn: Conn,
    name: String,
    zone: String,
    account: String,
    limit: u32,
    out: Output,
) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let events = client
        .history(pb::HistoryRequest {
            name: name.clone(),
            zone,
            limit,
            account,
        })
        .await
        .map_err(status_err)?
        .into_inner()
        .events;
    if out.is_table() {
        for line in lines(&events) {
            println!("{line}");
        }
    } else {
        out.emit(&History {
            name,
            events: events.iter().map(Event::from).collect(),
        })?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// A header and one aligned line per event, in the order given (newest first), and
/// a count.
fn lines(events: &[pb::AuditEvent]) -> Vec<String> {
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    let mut rows = vec![[
        "TIME".to_string(),
        "EVENT".into(),
        "TYPE".into(),
        "CHANGE".into(),
        "OUTCOME".into(),
        "OLD -> NEW".into(),
        "BATCH".into(),
        "SOURCE".into(),
        "CALLER".into(),
        "REASON".into(),
    ]];
    for e in events {
        rows.push([
            e.time.clone(),
            e.event.clone(),
            e.r#type.clone(),
            dash(&e.change),
            dash(&e.outcome),
            format!("{} -> {}", dash(&e.old), dash(&e.new)),
            dash(&e.batch_id),
            dash(&e.source),
            dash(&e.caller),
            dash(&e.reason),
        ]);
    }
    let mut widths = [0usize; 10];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out: Vec<String> = rows
        .iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (c, w))| if i == 9 { c.clone() } else { format!("{c:w$}") })
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect();
    out.push(format!("{} event(s)", events.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_aligned_line_per_event_in_the_order_given() {
        let ev = |time: &str, outcome: &str| pb::AuditEvent {
            time: time.into(),
            event: if outcome.is_empty() {
                "attempt"
            } else {
                "outcome"
            }
            .into(),
            r#type: "A".into(),
            outcome: outcome.into(),
            new: "300 192.0.2.1".into(),
            reason: "occupied".into(),
            ..Default::default()
        };
        let out = lines(&[
            ev("2026-01-02T00:00:01.000Z", "CONFLICT"),
            ev("2026-01-02T00:00:00.000Z", ""),
        ]);
        assert_eq!(out.len(), 4, "{out:#?}");
        assert!(out[0].starts_with("TIME"), "{}", out[0]);
        assert!(
            out[1].contains("CONFLICT") && out[1].contains("- -> 300 192.0.2.1"),
            "{}",
            out[1]
        );
        assert!(
            out[2].contains("attempt") && out[2].starts_with("2026-01-02T00:00:00"),
            "{}",
            out[2]
        );
        let col = |l: &str| l.find("A ").unwrap();
        assert_eq!(
            col(&out[1]),
            col(&out[2]),
            "aligned:\n{}\n{}",
            out[1],
            out[2]
        );
        assert_eq!(out[3], "2 event(s)");
    }
}
