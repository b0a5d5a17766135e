//! `plan -o markdown`: a plan as a pull-request comment, like octoDNS's PlanMarkdown:
//! the counts on top, the guard's verdict, then a table per zone.
//!
//! A comment has a size limit (GitHub's is 65,536 characters), so each zone lists at
//! most [`MAX_ROWS`] rows and counts the rest; the counts are always whole. Every
//! cell is escaped: a value holding `|`, a backtick or a newline cannot break the
//! table or inject markup.
use crate::view;
use std::fmt::Write as _;

/// Rows listed per zone; the rest are counted.
pub const MAX_ROWS: usize = 200;

/// The comment for `plan`.
pub fn render(plan: &view::Plan, proposed: bool) -> String {
    let mut out = String::new();
    let count = |kind: &str| {
        plan.zones
            .iter()
            .flat_map(|z| &z.changes)
            .filter(|c| c.kind == kind)
            .count()
    };
    let held = plan.zones.iter().filter(|z| z.held.is_some()).count();
    let errors = plan.zones.iter().filter(|z| !z.error.is_empty()).count();
    let _ = writeln!(
        out,
        "## dnsplane plan{}\n",
        if proposed {
            " of the proposed desired state"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "**{} change(s)** in {} zone(s): {} create, {} update, {} delete, {} adopt, {} release; {} record(s) held back{}{}\n",
        plan.changes,
        plan.zones.len(),
        count("create"),
        count("update"),
        count("delete"),
        count("adopt"),
        count("release"),
        plan.blocked,
        if held > 0 {
            format!("; **{held} zone(s) would be HELD**")
        } else {
            String::new()
        },
        if errors > 0 {
            format!("; **{errors} zone(s) could not be planned**")
        } else {
            String::new()
        },
    );
    for z in &plan.zones {
        let _ = writeln!(out, "### {}\n", cell(&z.zone));
        if !z.error.is_empty() {
            let _ = writeln!(out, "**Error**: {}\n", cell(&z.error));
            continue;
        }
        if let Some(h) = &z.held {
            let _ = writeln!(
                out,
                "**Would be HELD** by the mass-change guard: {} deletes and {} updates of {} owned records ({}). A sync would wait for `dnsplane approve {} --digest {}`.\n",
                h.deletes,
                h.updates,
                h.owned_records,
                cell(&h.reason),
                cell(&z.zone),
                cell(&h.digest)
            );
        }
        if z.changes.is_empty() && z.blocked.is_empty() {
            out.push_str("No changes.\n\n");
            continue;
        }
        out.push_str(
            "| Change | Name | Type | Before | After | Why |\n|---|---|---|---|---|---|\n",
        );
        let rows = z.changes.len() + z.blocked.len();
        // A change's first op is its record; the others are ownership marks.
        for c in z.changes.iter().take(MAX_ROWS) {
            let Some(op) = c.ops.first() else { continue };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                c.kind,
                name_cell(op),
                op.r#type,
                rrset_cell(op.before.as_ref()),
                rrset_cell(op.after.as_ref()),
                cell(&c.reason)
            );
        }
        for b in z
            .blocked
            .iter()
            .take(MAX_ROWS.saturating_sub(z.changes.len()))
        {
            let _ = writeln!(
                out,
                "| held back | {} | {} | {} | {} | {} |",
                cell(&b.name),
                b.r#type,
                rrset_cell(b.observed.as_ref()),
                rrset_cell(b.desired.as_ref()),
                cell(&b.reason)
            );
        }
        if rows > MAX_ROWS {
            let _ = writeln!(
                out,
                "\n… and {} more (`dnsplane plan -o json` lists every one)",
                rows - MAX_ROWS
            );
        }
        out.push('\n');
    }
    out
}

fn name_cell(op: &view::Op) -> String {
    match op.set_identifier.as_str() {
        "" => cell(&op.name),
        set => format!("{} (set {})", cell(&op.name), cell(set)),
    }
}

fn rrset_cell(r: Option<&view::RrSet>) -> String {
    match r {
        None => String::new(),
        Some(r) => {
            let mut text = format!("{} {}", r.ttl, r.values.join(", "));
            for (k, v) in &r.properties {
                let _ = write!(text, " {k}={v}");
            }
            cell(&text)
        }
    }
}

/// `text` safe inside a table cell: code-spanned where it holds markup, with `|` and
/// line breaks escaped.
fn cell(text: &str) -> String {
    let flat = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    if flat
        .chars()
        .any(|c| matches!(c, '`' | '*' | '_' | '<' | '>' | '[' | ']' | '#' | '~'))
    {
        // A code span shows its content literally; one with backticks inside is
        // fenced by a longer run of them.
        let ticks = "`".repeat(longest_run(&flat, '`') + 1);
        format!("{ticks} {flat} {ticks}")
    } else {
        flat
    }
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in s.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table_or_add_markup() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(cell("*bold*"), "` *bold* `");
        assert_eq!(cell("x`y"), "`` x`y ``");
        assert_eq!(cell("192.0.2.1"), "192.0.2.1");
    }
}
