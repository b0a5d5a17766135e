//! The layering rules of docs/ARCHITECTURE.md, checked on the source itself, so that
//! a new module cannot quietly bring back what the re-layering took out:
//!
//! - no import cycle between sibling modules of any crate (at every level of the
//!   module tree: `engine → metrics → engine` is a cycle; a child using its parent's
//!   items through `super::` is not);
//! - no `static` metrics registry, no `task_local!`, and no provider error classified by
//!   matching its text;
//! - generated proto types (`pb::`) only at the edges: each service's `service.rs` (and
//!   the planner's `client.rs`, its edge towards appliers), the admin ports' JSON, and
//!   the binaries;
//! - the planner library does not depend on the applier.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, with its module path relative to the crate root
/// (`["engine", "sync"]` for `src/engine/sync.rs`; `[]` for `lib.rs`).
fn modules(src: &Path) -> Vec<(Vec<String>, PathBuf)> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(Vec<String>, PathBuf)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(base).expect("under src");
                let mut parts: Vec<String> = rel
                    .iter()
                    .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
                    .collect();
                let last = parts.last().cloned().unwrap_or_default();
                if last == "mod" || last == "lib" || last == "main" {
                    parts.pop();
                }
                // Test modules (`tests.rs`, `hostile_tests.rs`) are not part of the
                // layering.
                if parts
                    .last()
                    .is_some_and(|l| l == "tests" || l.ends_with("_tests"))
                {
                    continue;
                }
                out.push((parts, p));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out
}

/// The code of a file without its inline `#[cfg(test)] mod tests { … }` and comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read source");
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths a file refers to: `crate::a::b`, and `super::x` resolved against
/// the file's own module.
fn references(module: &[String], is_mod_file: bool, code: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|p| {
                p.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty())
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        if code[..i].ends_with('$') || code[..i].ends_with("dnsplane_") {
            continue;
        }
        out.insert(ident(&code[i + 7..]));
    }
    // `super` is the parent of this module (for a mod.rs/lib.rs, of the folder).
    let parent: Vec<String> = if is_mod_file || module.is_empty() {
        module[..module.len().saturating_sub(1)].to_vec()
    } else {
        module[..module.len() - 1].to_vec()
    };
    for (i, _) in code.match_indices("super::") {
        if code[..i].ends_with("::") {
            continue; // super::super, handled below as a whole
        }
        let mut base = parent.clone();
        let mut rest = &code[i + 7..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        let mut path = base;
        path.extend(ident(rest));
        out.insert(path);
    }
    // `use a::b` inside a folder module may name a child (`use sync::Scope`): children
    // are below, never a cycle, so they need no edge.
    out
}

/// Sibling-level edges: from `a` to `b` when a file of `a` (or below it) refers to `b`
/// (or below it), and `a`, `b` share a parent.
fn sibling_edges(mods: &[(Vec<String>, PathBuf)]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = mods.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, path) in mods {
        let is_mod_file = path
            .file_name()
            .is_some_and(|f| f == "mod.rs" || f == "lib.rs" || f == "main.rs");
        for target in references(module, is_mod_file, &code(path)) {
            // The longest known module the reference names.
            let Some(target) = (0..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|p| known.contains(p))
            else {
                continue;
            };
            // The first level where the two paths part: an edge between siblings.
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= module.len() || common >= target.len() {
                continue; // one contains the other: parent and child
            }
            edges
                .entry(module[..=common].to_vec())
                .or_default()
                .insert(target[..=common].to_vec());
        }
    }
    edges
}

fn find_cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<String>> {
    fn visit(
        n: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let from = stack.iter().position(|s| s == n).unwrap_or(0);
                let mut cycle: Vec<String> = stack[from..].iter().map(|m| m.join("::")).collect();
                cycle.push(n.join("::"));
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

const CRATES: [&str; 4] = [
    "common/src",
    "planner/src",
    "applier/src",
    "planner/cli/src",
];

#[test]
fn no_module_imports_a_sibling_that_imports_it_back() {
    for krate in CRATES {
        let mods = modules(&root().join(krate));
        assert!(mods.len() > 3, "{krate}: modules found");
        let edges = sibling_edges(&mods);
        if let Some(cycle) = find_cycle(&edges) {
            panic!("{krate}: import cycle {}", cycle.join(" → "));
        }
    }
    // The checker itself finds a cycle when there is one.
    let fake = |m: &[&str], refs: &str| -> (Vec<String>, String) {
        (m.iter().map(|s| s.to_string()).collect(), refs.to_string())
    };
    let files = [
        fake(&["metrics"], "use crate::service::Service;"),
        fake(&["service"], "use crate::metrics::Families;"),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let mut mods = Vec::new();
    for (m, text) in &files {
        let p = dir.path().join(format!("{}.rs", m.join("_")));
        std::fs::write(&p, text).expect("write");
        mods.push((m.clone(), p));
    }
    let cycle = find_cycle(&sibling_edges(&mods)).expect("a cycle is found");
    assert_eq!(cycle.first(), cycle.last(), "{cycle:?}");
}

/// Every library file of the two services, with its code.
fn library_files() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for krate in ["common/src", "planner/src", "applier/src"] {
        for (_, path) in modules(&root().join(krate)) {
            let text = code(&path);
            out.push((path, text));
        }
    }
    out
}

#[test]
fn no_hidden_channels_and_no_text_matching_of_errors() {
    for (path, code) in library_files() {
        let shown = path.display();
        assert!(!code.contains("task_local!"), "{shown}: task_local!");
        assert!(
            !(code.contains("static ") && code.contains("LazyLock") && code.contains("Metrics")),
            "{shown}: a static metrics registry"
        );
        assert!(
            !code.contains(".message.contains("),
            "{shown}: classifies an error by its text"
        );
        for outcome in [
            "\"APPLIED\"",
            "\"ALREADY_APPLIED\"",
            "\"CONFLICT\"",
            "\"REJECTED_PERMANENT\"",
        ] {
            let allowed = path.ends_with("common/src/outcome.rs");
            assert!(
                allowed || !code.contains(outcome),
                "{shown}: compares the outcome name {outcome} instead of the Outcome type"
            );
        }
    }
}

#[test]
fn proto_types_stay_at_the_edges() {
    // The edges: where messages are built and read.
    let edges = [
        "planner/src/service.rs",
        "planner/src/service/admission.rs",
        "planner/src/service/encode.rs",
        "planner/src/service/push.rs",
        "planner/src/service/history.rs",
        "planner/src/service/plan.rs",
        "planner/src/service/proposed.rs",
        "planner/src/service/record_states.rs",
        "planner/src/service/zone_records.rs",
        "planner/src/client.rs",
        // The admin port (split in a folder for the status page), which shows
        // GetStatus and approves through the gRPC service.
        "planner/src/admin/mod.rs",
        "planner/src/admin/page.rs",
        "planner/src/admin/view.rs",
        "planner/src/pool.rs",
        "applier/src/service/mod.rs",
        "applier/src/admin.rs",
        "applier/src/lib.rs",
        "planner/src/lib.rs",
    ];
    for (path, code) in library_files() {
        let rel = path.strip_prefix(root()).expect("under root");
        if rel.starts_with("common") || edges.iter().any(|e| rel == Path::new(e)) {
            continue;
        }
        assert!(
            !code.contains("pb::"),
            "{}: names a generated proto type outside the gRPC edges",
            rel.display()
        );
    }
}

#[test]
fn the_planner_library_does_not_depend_on_the_applier() {
    let manifest = std::fs::read_to_string(root().join("planner/Cargo.toml")).expect("read");
    let manifest: toml::Table = manifest.parse().expect("toml");
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let deps = manifest.get(section).and_then(toml::Value::as_table);
        assert!(
            deps.is_none_or(|d| !d.contains_key("dnsplane-applier")),
            "planner/Cargo.toml [{section}] names the applier"
        );
    }
}
