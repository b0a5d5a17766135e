//! Issue 35, item 5: every config key and command-line flag is documented, and every
//! documented one exists, checked both ways against the code (the metric names and
//! environment variables have their own tests: metric_names.rs, env_names.rs).
//!
//! - **Config keys** are the fields of the structs the config files are read into
//!   (every `#[serde(deny_unknown_fields)]` struct or tagged enum of the services and
//!   emulators, their renames and tags, and the account keys the applier takes out by
//!   hand), read from the source. A key is documented when README.md or a doc names it
//!   in backticks or writes it in a TOML example. Every key of a doc's `| key |`
//!   reference table and of its TOML examples must be a key of the code.
//! - **Flags** are what the binaries' own `--help` lists, for every subcommand. A flag
//!   is documented when a doc writes it. Every flag docs/cli.md writes in backticks,
//!   and every flag of a `dnsplane …` command the README writes, must be a flag of a
//!   dnsplane binary.
use crate::metric_names::sources;
use dnsplane_e2e::{binary, repo_root};
use std::collections::BTreeSet;
use std::process::Command;

/// Structs with `deny_unknown_fields` that are not read from a config file: request
/// bodies, each with where it is documented instead.
const NOT_CONFIG: &[&str] = &[
    // The status page's approve form (a JSON body, docs/observability.md).
    "ApproveForm",
    // The Azure emulator's `POST /_emulator/tokens` body (JSON, docs/emulators.md).
    "NewToken",
];

/// README.md and every docs/*.md, by name.
fn docs() -> Vec<(String, String)> {
    let root = repo_root();
    let mut out = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).expect("README.md"),
    )];
    let mut entries: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    entries.sort();
    for path in entries {
        let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
        out.push((name, std::fs::read_to_string(&path).expect("read doc")));
    }
    out
}

fn ident(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
}

/// The words (`a_b`) of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !ident(c))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_lowercase()))
}

/// What is between backticks in `text`.
fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// `span` without what is in double quotes (values: `type = "kubernetes"`).
fn unquoted(span: &str) -> String {
    span.split('"').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The lines of `text`'s ```toml blocks.
fn toml_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = line.trim_start() == "```toml";
            continue;
        }
        if inside {
            out.push(line);
        }
    }
    out
}

/// The keys a TOML line sets or opens (commented examples too): `a = 1`, `# b = 2`,
/// `{ c = 3 }`, `[d.e]`, `[[f]]`.
fn toml_keys(line: &str) -> Vec<&str> {
    let line = line.trim_start().trim_start_matches('#').trim();
    // A comment after the value (`requests = 1200  # 0 = off`) is prose.
    let mut quoted = false;
    let end = line
        .char_indices()
        .find(|&(_, c)| {
            quoted ^= c == '"';
            c == '#' && !quoted
        })
        .map_or(line.len(), |(i, _)| i);
    let line = &line[..end];
    if line.starts_with('[') {
        return words(line.split(']').next().unwrap_or("")).collect();
    }
    // Keys stand before `=`; what is in quotes is a value.
    let mut keys = Vec::new();
    for (i, piece) in line.split('"').enumerate() {
        if i % 2 == 1 {
            continue;
        }
        for part in piece.split('=').rev().skip(1) {
            if let Some(key) = part
                .rsplit(|c: char| c == '{' || c == ',' || c.is_whitespace())
                .find(|s| !s.is_empty())
                && key.chars().all(|c| ident(c) || c == '.')
            {
                keys.extend(key.split('.'));
            }
        }
    }
    keys
}

/// The config keys of the code: the fields (renamed as serde reads them) of every
/// `deny_unknown_fields` struct, the tags and struct variants' fields of such enums,
/// and the keys the applier's account reads by hand.
fn code_keys() -> BTreeSet<String> {
    let mut files = Vec::new();
    for dir in ["planner/src", "applier/src", "applier/emulate/src"] {
        sources(&repo_root().join(dir), &mut files);
    }
    let mut keys = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if let Some(rest) = line.split("take(&mut table, \"").nth(1) {
                keys.insert(rest.split('"').next().unwrap_or_default().to_string());
            }
            if !(line.contains("#[serde(") && line.contains("deny_unknown_fields")) {
                continue;
            }
            if let Some(tag) = line.split("tag = \"").nth(1) {
                keys.insert(tag.split('"').next().unwrap_or_default().to_string());
            }
            let Some(start) = (i..lines.len())
                .find(|&j| lines[j].contains("struct ") || lines[j].contains("enum "))
            else {
                continue;
            };
            let name = lines[start]
                .split([' ', '{', '(', '<'])
                .skip_while(|w| *w != "struct" && *w != "enum")
                .nth(1)
                .unwrap_or_default();
            if NOT_CONFIG.contains(&name) {
                continue;
            }
            fields(&lines[start..], &mut keys);
        }
    }
    keys
}

/// The fields of the item whose first line `item[0]` opens: `name:` lines inside its
/// braces (in a struct, or in an enum's struct variants), a `#[serde(rename)]` above a
/// field read as renamed, `flatten`ed and `skip`ped fields left out.
fn fields(item: &[&str], keys: &mut BTreeSet<String>) {
    let mut depth = 0i32;
    let mut rename: Option<String> = None;
    let mut skip = false;
    for line in item {
        let trimmed = line.trim();
        if depth > 0 && trimmed.starts_with("#[serde(") {
            if let Some(r) = trimmed.split("rename = \"").nth(1) {
                rename = Some(r.split('"').next().unwrap_or_default().to_string());
            }
            skip |= trimmed.contains("flatten")
                || trimmed.contains("skip_deserializing")
                || trimmed.contains("(skip)")
                || trimmed.contains("(skip,")
                || trimmed.contains(" skip,")
                || trimmed.contains(" skip)");
        } else if depth > 0 && !trimmed.starts_with("//") && !trimmed.starts_with('#') {
            let bare = trimmed
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ");
            if let Some((field, _)) = bare.split_once(':')
                && !field.is_empty()
                && field.chars().all(ident)
                && !skip
            {
                keys.insert(rename.take().unwrap_or_else(|| field.to_string()));
            }
            if !trimmed.is_empty() {
                rename = None;
                skip = false;
            }
        }
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if depth <= 0 && line.contains('}') {
            return;
        }
    }
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    let code = code_keys();
    // Keys every config has, so that a scan that found nothing fails here.
    for key in [
        "owner_id",
        "zones",
        "accounts",
        "driver",
        "dns_listen",
        "tokens_file",
    ] {
        assert!(
            code.contains(key),
            "the scan of the code found no `{key}`: {code:?}"
        );
    }
    let mut named = BTreeSet::new();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (doc, text) in docs() {
        for span in backticked(&text) {
            named.extend(words(&unquoted(span)).map(str::to_string));
        }
        for line in toml_lines(&text) {
            for key in toml_keys(line) {
                named.insert(key.to_string());
                documented.push((doc.clone(), key.to_string()));
            }
        }
        // The first column of each `| key |` reference table.
        let mut in_table = false;
        for line in text.lines() {
            if line.starts_with("| key |") {
                in_table = true;
                continue;
            }
            if !line.starts_with('|') {
                in_table = false;
                continue;
            }
            if in_table && !line.starts_with("|---") {
                let first = line.split('|').nth(1).unwrap_or_default();
                for span in backticked(first) {
                    let keys = unquoted(span);
                    documented.extend(words(&keys).map(|w| (doc.clone(), w.to_string())));
                }
            }
        }
    }
    let undocumented: Vec<&String> = code.difference(&named).collect();
    assert!(
        undocumented.is_empty(),
        "config keys the code reads that no doc names (in backticks or a TOML example): {undocumented:?}"
    );
    let absent: BTreeSet<String> = documented
        .iter()
        .filter(|(_, key)| !code.contains(key))
        .map(|(doc, key)| format!("{doc}: {key}"))
        .collect();
    assert!(
        absent.is_empty(),
        "config keys the docs document that the code does not read: {absent:?}"
    );
}

/// `bin args… --help`: its flags, and its subcommands.
fn help(bin: &str, args: &[&str]) -> (BTreeSet<String>, Vec<String>) {
    let out = Command::new(binary(bin))
        .args(args)
        .arg("--help")
        .output()
        .expect("run --help");
    assert!(out.status.success(), "{bin} {args:?} --help failed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut flags = BTreeSet::new();
    let mut commands = Vec::new();
    let mut in_commands = false;
    for line in text.lines() {
        if line.ends_with(':') && !line.starts_with(' ') {
            in_commands = line == "Commands:";
            continue;
        }
        let trimmed = line.trim_start();
        if in_commands && line.starts_with("  ") && !line.starts_with("      ") {
            let name = trimmed.split_whitespace().next().unwrap_or_default();
            if name != "help" && !name.is_empty() {
                commands.push(name.to_string());
            }
        }
        let option = trimmed.strip_prefix('-').and_then(|t| {
            t.split_once(", ")
                .map_or(Some(trimmed), |(_, long)| Some(long))
        });
        if let Some(long) = option.and_then(|o| o.strip_prefix("--")) {
            let flag: String = long
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if flag != "help" && flag != "version" && !flag.is_empty() {
                flags.insert(format!("--{flag}"));
            }
        }
    }
    (flags, commands)
}

/// The flags of `bin` and all its subcommands, to any depth.
fn all_flags(bin: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let (found, commands) = help(bin, &args);
        flags.extend(found);
        for c in commands {
            let mut next = path.clone();
            next.push(c);
            todo.push(next);
        }
    }
    flags
}

/// The `--flags` written in `text`.
fn flags_in(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("--").skip(1).filter_map(|rest| {
        let flag: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        (flag.len() > 1 && flag.starts_with(|c: char| c.is_ascii_lowercase()))
            .then(|| format!("--{flag}"))
    })
}

#[test]
fn every_flag_is_documented_and_every_documented_flag_exists() {
    let mut code = BTreeSet::new();
    for bin in ["dnsplane", "dnsplane-planner", "dnsplane-applier"] {
        code.extend(all_flags(bin));
    }
    for flag in [
        "--config",
        "--desired",
        "--detailed-exitcode",
        "--route53-emulator",
    ] {
        assert!(
            code.contains(flag),
            "the binaries' help lists no {flag}: {code:?}"
        );
    }
    let docs = docs();
    let written: BTreeSet<String> = docs.iter().flat_map(|(_, t)| flags_in(t)).collect();
    let undocumented: Vec<&String> = code.difference(&written).collect();
    assert!(
        undocumented.is_empty(),
        "flags the binaries take that no doc writes: {undocumented:?}"
    );
    // docs/cli.md and the README speak of dnsplane's own flags: every one written
    // there in backticks must exist, unless those backticks run another program.
    // (The README's lone flags are external-dns's, which it maps to config keys.)
    let ours = |doc: &str, span: &str| {
        let first = span.split_whitespace().next().unwrap_or_default();
        (first.starts_with("--") && doc == "docs/cli.md")
            || first.starts_with("dnsplane")
            || span.contains("-- ")
    };
    code.extend(["--help".to_string(), "--version".to_string()]);
    let mut absent = BTreeSet::new();
    for (doc, text) in docs
        .iter()
        .filter(|(d, _)| d == "docs/cli.md" || d == "README.md")
    {
        for span in backticked(text).filter(|s| ours(doc, s)) {
            let span = span.rsplit("-- ").next().unwrap_or(span);
            for flag in flags_in(span).filter(|f| !code.contains(f)) {
                absent.insert(format!("{doc}: {flag} (in `{span}`)"));
            }
        }
    }
    assert!(
        absent.is_empty(),
        "flags the docs write that no dnsplane binary takes: {absent:?}"
    );
}
