//! Issue 35, item 8: the README stays a page that gets a person started (the two
//! commands, the first ten minutes, one short config, a map of `docs/`), and the
//! reference stays in `docs/`: a README that grows back into a manual fails here, as
//! does a doc the map leaves out.
use dnsplane_e2e::repo_root;

/// Longest README, in lines: a first page, not a manual (it was 867).
const MAX_README_LINES: usize = 300;

#[test]
fn the_readme_is_a_first_page_with_a_map_of_every_doc() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= MAX_README_LINES,
        "README.md is {lines} lines (at most {MAX_README_LINES}): move reference text into docs/"
    );
    for section in [
        "## The two commands",
        "## The first ten minutes",
        "## The docs",
    ] {
        assert!(
            readme.lines().any(|l| l == section),
            "README.md has no `{section}` section"
        );
    }
    let map = readme
        .split("\n## The docs\n")
        .nth(1)
        .expect("the map")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    docs.sort();
    let missing: Vec<&String> = docs
        .iter()
        .filter(|d| !map.contains(&format!("(docs/{d})")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's map of the docs leaves out {missing:?}"
    );
}
