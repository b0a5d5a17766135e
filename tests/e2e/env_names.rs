//! Issue 35, item 5: the environment variables the binaries read are documented, and
//! the documented ones are read. docs/cli.md's table of them is checked against the
//! code both ways: a variable read but not in the table, or in the table but read
//! nowhere, fails, naming it.
use crate::metric_names::literals;
use dnsplane_e2e::repo_root;
use std::collections::BTreeSet;

#[test]
fn every_environment_variable_read_is_documented_and_every_documented_one_is_read() {
    let part = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    let code = literals(
        &[
            "planner/src",
            "planner/cli/src",
            "applier/src",
            "common/src",
        ],
        "DNSPLANE_",
        part,
    );
    assert!(code.len() >= 10, "the scan found the variables: {code:?}");
    let cli = std::fs::read_to_string(repo_root().join("docs/cli.md")).expect("docs/cli.md");
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
