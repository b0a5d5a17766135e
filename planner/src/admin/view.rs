//! The status page's live fragment: plain HTML from the engine's read model. Every
//! text that reaches it passes [`esc`]: record values, owners and reasons come from
//! providers and sources, that is from anyone who can write a record.
use super::changes::{ChangeRow, Recent};
use crate::auth::{Caller, Role};
use crate::state::{RecordState, RecordStateKind};
use crate::target::Target;
use dnsplane_common::{Name, RRSet, RecordKey, pb};
use std::fmt::Write;
use std::time::SystemTime;

/// What one fragment shows.
#[derive(Debug)]
pub struct Live<'a> {
    pub status: &'a pb::PlannerStatus,
    /// Records in conflict (the first page of them).
    pub conflicts: &'a [(Target, RecordKey, RecordState)],
    /// More conflicts than shown.
    pub conflicts_more: bool,
    pub recent: &'a Recent,
    /// Who asked: decides whether the Approve buttons work.
    pub caller: &'a Caller,
    pub now: SystemTime,
}

/// HTML-escapes `s` for text and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn ts(t: Option<&dnsplane_common::wkt::Timestamp>) -> String {
    match t {
        None => "never".to_string(),
        Some(t) => SystemTime::try_from(*t).map_or_else(|_| t.to_string(), time),
    }
}

fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn values(r: Option<&RRSet>) -> String {
    r.map_or_else(
        || "—".to_string(),
        |r| format!("{} (ttl {})", r.values_vec().join(" "), r.ttl),
    )
}

/// Why `caller` may not approve `zone`'s plan (`None`: it may).
fn approve_refusal(caller: &Caller, zone: &str) -> Option<String> {
    if caller.role < Role::Approve {
        return Some(format!(
            "approving needs the approve role; this token ({}) has {}",
            caller.name,
            caller.role.as_str()
        ));
    }
    match Name::parse(zone) {
        Ok(z) if caller.scope.allows_zone(&z) => None,
        _ => Some(format!(
            "this token ({}) may only touch {}",
            caller.name,
            caller.scope.describe()
        )),
    }
}

/// The fragment the page's script puts in place every few seconds.
pub fn render(live: &Live<'_>) -> String {
    let mut h = String::new();
    let s = live.status;
    let _ = write!(
        h,
        "<p class=\"level {lvl}\" id=\"level\">Planner <b>{lvl}</b>{reason} <span class=\"muted\">as of {now}, as {who}</span></p>",
        lvl = esc(&s.level),
        reason = if s.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", esc(&s.reason))
        },
        now = time(live.now),
        who = esc(&live.caller.name),
    );
    zones(&mut h, s);
    conflicts(&mut h, live);
    held(&mut h, live);
    recent(&mut h, live.recent);
    h
}

fn zones(h: &mut String, s: &pb::PlannerStatus) {
    h.push_str("<section id=\"zones\"><h2>Zones</h2>");
    if s.zones.is_empty() {
        h.push_str("<p class=\"muted\">No zones configured.</p></section>");
        return;
    }
    h.push_str("<table><thead><tr><th>Zone</th><th>State</th><th>Records by state</th><th>Desired</th><th>Observed</th><th>Last sync</th><th>Last success</th><th>Last error</th><th>Applier</th></tr></thead><tbody>");
    for z in &s.zones {
        let by_state: Vec<String> = RecordStateKind::ALL
            .iter()
            .filter_map(|k| {
                let n = *z.records_by_state.get(k.as_str())?;
                (n > 0).then(|| format!("<span class=\"st {k}\">{k} {n}</span>", k = k.as_str()))
            })
            .collect();
        let _ = write!(
            h,
            "<tr class=\"zone\" data-zone=\"{zone}\" data-account=\"{account}\"><td>{zone} <span class=\"muted\">{account}</span></td><td class=\"state\">{state}{syncing}</td><td>{by}</td><td>{desired}</td><td>{observed}</td><td>{last}</td><td>{ok}</td><td class=\"err\">{err}</td><td>{applier}</td></tr>",
            zone = esc(&z.zone),
            account = esc(&z.account),
            state = esc(&z.state),
            syncing = if z.syncing { " (syncing)" } else { "" },
            by = if by_state.is_empty() {
                "—".to_string()
            } else {
                by_state.join(" ")
            },
            desired = z.desired_records,
            observed = z.observed_records,
            last = ts(z.last_sync.as_ref()),
            ok = ts(z.last_success.as_ref()),
            err = esc(&z.last_error),
            applier = esc(&z.applier),
        );
    }
    h.push_str("</tbody></table></section>");
}

fn conflicts(h: &mut String, live: &Live<'_>) {
    h.push_str("<section id=\"conflicts\"><h2>Conflicts</h2>");
    if live.conflicts.is_empty() {
        h.push_str("<p class=\"muted\">No record in conflict.</p></section>");
        return;
    }
    h.push_str("<table><thead><tr><th>Zone</th><th>Name</th><th>Type</th><th>Occupant</th><th>Observed value</th><th>Desired value</th><th>Reason</th></tr></thead><tbody>");
    for (t, k, st) in live.conflicts {
        let occupant = match st.observed_owner.as_deref() {
            Some(o) if !o.is_empty() => esc(o),
            _ => "<i>no owner mark</i>".to_string(),
        };
        let _ = write!(
            h,
            "<tr class=\"conflict\"><td>{}</td><td>{}</td><td>{}</td><td class=\"occupant\">{occupant}</td><td class=\"observed\">{}</td><td class=\"desired\">{}</td><td>{}</td></tr>",
            esc(&t.to_string()),
            esc(k.name.as_str()),
            esc(&k.rtype.to_string()),
            esc(&values(st.observed.as_ref())),
            esc(&values(st.desired.as_ref())),
            esc(&st.reason),
        );
    }
    h.push_str("</tbody></table>");
    if live.conflicts_more {
        let _ = write!(
            h,
            "<p class=\"muted\">The first {} shown; `dnsplane records` lists them all.</p>",
            live.conflicts.len()
        );
    }
    h.push_str("</section>");
}

fn held(h: &mut String, live: &Live<'_>) {
    h.push_str("<section id=\"held\"><h2>Held plans</h2>");
    let held: Vec<(&pb::ZoneStatus, &pb::HeldPlan)> = live
        .status
        .zones
        .iter()
        .filter_map(|z| Some((z, z.held.as_ref()?)))
        .collect();
    if held.is_empty() {
        h.push_str("<p class=\"muted\">No plan is held.</p></section>");
        return;
    }
    h.push_str("<table><thead><tr><th>Zone</th><th>Digest</th><th>Deletes</th><th>Updates</th><th>Reason</th><th>Since</th><th></th></tr></thead><tbody>");
    for (z, p) in held {
        let button = match approve_refusal(live.caller, &z.zone) {
            None => format!(
                "<button class=\"approve\" data-zone=\"{}\" data-account=\"{}\" data-digest=\"{}\">Approve</button>",
                esc(&z.zone),
                esc(&z.account),
                esc(&p.digest)
            ),
            Some(why) => format!(
                "<button class=\"approve\" disabled title=\"{why}\" data-zone=\"{}\" data-account=\"{}\" data-digest=\"{}\">Approve</button> <span class=\"muted\">{why}</span>",
                esc(&z.zone),
                esc(&z.account),
                esc(&p.digest),
                why = esc(&why)
            ),
        };
        let _ = write!(
            h,
            "<tr class=\"held\" data-zone=\"{zone}\" data-account=\"{account}\"><td>{zone} <span class=\"muted\">{account}</span></td><td class=\"digest\"><code>{digest}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{button}</td></tr>",
            p.deletes,
            p.updates,
            esc(&p.reason),
            ts(p.since.as_ref()),
            zone = esc(&z.zone),
            account = esc(&z.account),
            digest = esc(&p.digest),
        );
    }
    h.push_str("</tbody></table></section>");
}

fn recent(h: &mut String, recent: &Recent) {
    h.push_str("<section id=\"recent\"><h2>Recent changes</h2>");
    let (source, rows) = match recent {
        Recent::NotConfigured => {
            h.push_str("<p class=\"muted\">No audit trail configured.</p></section>");
            return;
        }
        Recent::Rows { source, rows } => (source, rows),
    };
    let _ = write!(h, "<p class=\"muted\">{}</p>", esc(source));
    if rows.is_empty() {
        h.push_str("<p class=\"muted\">Nothing changed yet.</p></section>");
        return;
    }
    h.push_str("<table><thead><tr><th>Time</th><th>Zone</th><th>Name</th><th>Type</th><th>Change</th><th>Outcome</th></tr></thead><tbody>");
    for ChangeRow {
        time: t,
        zone,
        name,
        rtype,
        change,
        outcome,
    } in rows
    {
        let _ = write!(
            h,
            "<tr class=\"change\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            time(*t),
            esc(zone),
            esc(name),
            esc(rtype),
            esc(change),
            esc(outcome),
        );
    }
    h.push_str("</tbody></table></section>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Scope;
    use std::sync::Arc;

    fn caller(role: Role) -> Caller {
        Caller {
            name: Arc::from("ops"),
            role,
            scope: Scope::default(),
        }
    }

    fn status() -> pb::PlannerStatus {
        pb::PlannerStatus {
            level: "degraded".into(),
            reason: "zone example.com.: a plan is held".into(),
            zones: vec![pb::ZoneStatus {
                zone: "example.com.".into(),
                account: "a".into(),
                state: "HELD".into(),
                records_by_state: [("held".to_string(), 10), ("converged".to_string(), 3)].into(),
                held: Some(pb::HeldPlan {
                    digest: "d1g3st".into(),
                    deletes: 10,
                    reason: "10 deletes of 20".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn conflict(value: &str) -> (Target, RecordKey, RecordState) {
        let zone = Name::parse("example.com.").unwrap();
        let key = RecordKey::new(
            zone,
            Name::parse("taken.example.com.").unwrap(),
            dnsplane_common::RecordType::Txt,
        );
        let mut st = RecordState {
            kind: RecordStateKind::Conflict,
            desired: None,
            observed: Some(RRSet::new(key.clone(), 60, &[value]).unwrap()),
            observed_owner: Some("team-<b>".into()),
            conflict_reason: Default::default(),
            reason: "owned by <someone> else".into(),
            attempts: 0,
            last_error: String::new(),
            next_retry: None,
            last_change_id: String::new(),
            updated: None,
        };
        st.desired = st.observed.clone();
        (Target::new(key.zone.clone(), "a", false), key, st)
    }

    fn render_with(role: Role, recent: &Recent) -> String {
        let status = status();
        let c = [conflict("\"<script>alert(1)</script>\"")];
        render(&Live {
            status: &status,
            conflicts: &c,
            conflicts_more: false,
            recent,
            caller: &caller(role),
            now: SystemTime::UNIX_EPOCH,
        })
    }

    #[test]
    fn attacker_controlled_text_is_escaped() {
        let h = render_with(Role::Approve, &Recent::NotConfigured);
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        assert!(h.contains("team-&lt;b&gt;"), "{h}");
        assert!(h.contains("owned by &lt;someone&gt; else"), "{h}");
    }

    #[test]
    fn the_approve_button_works_only_for_the_approve_role() {
        let h = render_with(Role::Approve, &Recent::NotConfigured);
        assert!(
            h.contains(
                "<button class=\"approve\" data-zone=\"example.com.\" data-account=\"a\" data-digest=\"d1g3st\">"
            ),
            "{h}"
        );
        let h = render_with(Role::Read, &Recent::NotConfigured);
        assert!(h.contains("<button class=\"approve\" disabled"), "{h}");
        assert!(h.contains("needs the approve role"), "{h}");
    }

    #[test]
    fn recent_changes_say_where_they_come_from_or_that_there_are_none() {
        let h = render_with(Role::Read, &Recent::NotConfigured);
        assert!(h.contains("No audit trail configured."), "{h}");
        let rows = Recent::Rows {
            source: "the audit file".into(),
            rows: vec![ChangeRow {
                time: SystemTime::UNIX_EPOCH,
                zone: "example.com.".into(),
                name: "<x>.example.com.".into(),
                rtype: "A".into(),
                change: "set 192.0.2.1".into(),
                outcome: "converged".into(),
            }],
        };
        let h = render_with(Role::Read, &rows);
        assert!(h.contains("the audit file"), "{h}");
        assert!(
            h.contains(
                "<td>1970-01-01T00:00:00Z</td><td>example.com.</td><td>&lt;x&gt;.example.com.</td>"
            ),
            "{h}"
        );
        assert!(h.contains("held 10") && h.contains("converged 3"), "{h}");
    }
}
