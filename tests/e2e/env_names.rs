//! Issue 35, item 5: the environment variables the binaries read are documented, and
//! the documented ones are read. docs/cli.md's table of them is checked against the
//! code both ways: a variable read but not in the table, or in the table but read
//! nowhere, fails, naming it.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

/// `"DNSPLANE_…"` literals in the `.rs` files below `dir`, before any `#[cfg(test)]`,
/// test files and folders left out.
fn read_in(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if name != "tests" {
                read_in(&path, out);
            }
            continue;
        }
        if !name.ends_with(".rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for piece in code.split("\"DNSPLANE_").skip(1) {
            let tail: String = piece
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if piece[tail.len()..].starts_with('"') {
                out.insert(format!("DNSPLANE_{tail}"));
            }
        }
    }
}

#[test]
fn every_environment_variable_read_is_documented_and_every_documented_one_is_read() {
    let mut code = BTreeSet::new();
    for dir in [
        "planner/src",
        "planner/cli/src",
        "applier/src",
        "common/src",
    ] {
        read_in(&repo().join(dir), &mut code);
    }
    assert!(code.len() >= 10, "the scan found the variables: {code:?}");
    let cli = std::fs::read_to_string(repo().join("docs/cli.md")).expect("docs/cli.md");
    let table: BTreeSet<String> = cli
        .split("## Environment variables")
        .nth(1)
        .expect("docs/cli.md has the table")
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    let undocumented: Vec<&String> = code.difference(&table).collect();
    assert!(
        undocumented.is_empty(),
        "read by the binaries but not in docs/cli.md's table: {undocumented:?}"
    );
    let unread: Vec<&String> = table.difference(&code).collect();
    assert!(
        unread.is_empty(),
        "in docs/cli.md's table but read nowhere: {unread:?}"
    );
}
