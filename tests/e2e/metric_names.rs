//! Issue 35, item 3: metric names are a contract. Every family the services register
//! is listed here (`metric_names.txt`, the names as the code registers them: a
//! counter gains `_total` on the wire, the build info `_info`), documented in
//! docs/observability.md, and a name that appears or goes (a rename is both) must be
//! named in CHANGELOG.md. The names are read from the services' own source, not from
//! a scrape: a scrape shows only the families that a run happened to register.
use dnsplane_e2e::repo_root;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The `.rs` files below `dir`, tests left out (files named `tests.rs` or
/// `*_tests.rs`, and folders named `tests`).
pub(crate) fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// Every string literal `"PREFIX…"` (of characters `part` takes) in the code below
/// `dirs` before its `#[cfg(test)]` module.
pub(crate) fn literals(dirs: &[&str], prefix: &str, part: fn(char) -> bool) -> BTreeSet<String> {
    let mut files = Vec::new();
    for dir in dirs {
        sources(&repo_root().join(dir), &mut files);
    }
    let mut found = BTreeSet::new();
    let quoted = format!("\"{prefix}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for piece in code.split(quoted.as_str()).skip(1) {
            let tail: String = piece.chars().take_while(|c| part(*c)).collect();
            if piece[tail.len()..].starts_with('"') {
                found.insert(format!("{prefix}{tail}"));
            }
        }
    }
    found
}

/// The metric families the services register or encode.
fn registered() -> BTreeSet<String> {
    let part = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    let mut names = literals(
        &["planner/src", "applier/src", "common/src"],
        "dnsplane_",
        part,
    );
    names.remove("dnsplane_descriptor");
    // The NetBox custom field the write-back fills, not a metric.
    names.remove("dnsplane_status");
    names
}

/// Whether `text` names the family `name` (as registered, or with the suffix the wire
/// gives it), as a whole word.
fn names(text: &str, name: &str) -> bool {
    ["", "_total", "_info"].iter().any(|suffix| {
        let word = format!("{name}{suffix}");
        text.match_indices(&word).any(|(i, _)| {
            let next = text[i + word.len()..].chars().next();
            !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    })
}

#[test]
fn every_metric_name_is_listed_documented_and_changed_only_with_a_changelog_line() {
    let code = registered();
    assert!(code.len() > 40, "the scan found the families: {code:?}");
    let listed: BTreeSet<String> = include_str!("metric_names.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let changelog = std::fs::read_to_string(repo_root().join("CHANGELOG.md")).expect("CHANGELOG");
    let documented = std::fs::read_to_string(repo_root().join("docs/observability.md"))
        .expect("observability.md");

    let undocumented: Vec<&String> = code.iter().filter(|n| !names(&documented, n)).collect();
    assert!(
        undocumented.is_empty(),
        "metric families missing from docs/observability.md: {undocumented:?}"
    );
    let unannounced: Vec<&String> = code
        .symmetric_difference(&listed)
        .filter(|n| !names(&changelog, n))
        .collect();
    assert!(
        unannounced.is_empty(),
        "metric names are a contract: these appeared or went without a CHANGELOG.md line \
         naming them (a rename names both, old → new): {unannounced:?}; then list the \
         new names in tests/e2e/metric_names.txt"
    );
    // The names the CHANGELOG's rename table retires are gone from the code.
    let section = changelog
        .split("metric names, old → new")
        .nth(1)
        .expect("CHANGELOG.md has the rename table");
    let table = section
        .split("\n\n")
        .find(|p| p.contains('|'))
        .expect("the table");
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let old = row.split('`').nth(1).expect("old name");
        let family = old.trim_end_matches("_total");
        assert!(
            !code.contains(family),
            "{old} is retired but still registered"
        );
    }
}
