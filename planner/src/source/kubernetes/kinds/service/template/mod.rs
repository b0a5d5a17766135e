//! `--fqdn-template`: the part of Go's `text/template` external-dns users write
//! (external-dns v0.22 `source/template`: `NewEngine`, `ExecFQDN`, `execTemplate`).
//!
//! Supported: text; `{{ pipeline }}` with `|`; fields of the object (`.Name`,
//! `.Namespace`, `.Kind`, `.APIVersion`, `.Labels`, `.Annotations`, `.ObjectMeta…`,
//! `.Spec…`, `.Status…`, Go names mapped to the JSON ones: `.Spec.ClusterIP` →
//! `spec.clusterIP`); variables (`$x := …`, `$x = …`, `$`); `if`/`else if`/`else`,
//! `range` (with `$k, $v :=`, `{{break}}`, `{{continue}}`), `with`; `{{-`/`-}}`
//! trimming and `{{/* comments */}}`; the functions `eq ne lt le gt ge and or not len
//! index printf print` and v0.22's own `contains trimPrefix trimSuffix trim toLower
//! replace isIPv4 isIPv6 isSource hasKey fromJson`. Every template of external-dns's
//! fqdn-templating guide is accepted (tests). Anything else is refused when the configuration is read
//! ([`check_template`]), not at the first object.
//!
//! Differences from Go: a missing map key or struct field reads as an empty value
//! (Go prints `<no value>` for a missing map key; both end in a name dnsplane refuses).
use serde_json::Value;
use std::collections::BTreeSet;

mod exec;
#[cfg(test)]
mod tests;

use exec::Exec;

/// The object fields a template may name at its top level (TypeMeta, ObjectMeta and
/// the Service's own); Go refuses any other (`can't evaluate field`).
const TOP_FIELDS: [&str; 20] = [
    "Kind",
    "APIVersion",
    "TypeMeta",
    "ObjectMeta",
    "Name",
    "Namespace",
    "Labels",
    "Annotations",
    "UID",
    "GenerateName",
    "ResourceVersion",
    "Generation",
    "CreationTimestamp",
    "DeletionTimestamp",
    "DeletionGracePeriodSeconds",
    "Finalizers",
    "OwnerReferences",
    "ManagedFields",
    "Spec",
    "Status",
];

/// The functions a template may call.
const FUNCTIONS: [&str; 24] = [
    "isSource",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "and",
    "or",
    "not",
    "len",
    "index",
    "printf",
    "print",
    "contains",
    "trimPrefix",
    "trimSuffix",
    "trim",
    "toLower",
    "replace",
    "isIPv4",
    "isIPv6",
    "hasKey",
    "fromJson",
];

/// Whether `template` can be used as an `fqdn_template`: it parses, names only known
/// functions, and runs on an example Service. The error says what is wrong, for the
/// config loader to show with the key.
pub fn check_template(template: &str) -> Result<(), String> {
    let nodes = parse(template)?;
    let sample = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "example", "namespace": "default", "labels": {}, "annotations": {}},
        "spec": {"type": "ClusterIP", "ports": [], "selector": {}},
        "status": {},
    });
    let mut out = String::new();
    Exec::new(&sample, "service")
        .run(&nodes, &sample, &mut out)
        .map(|_| ())
}

/// `ExecFQDN`: the names `template` gives for `object` (comma-separated, spaces and a
/// trailing dot trimmed, empty ones dropped, deduplicated and sorted).
pub fn exec_fqdn(template: &str, object: &Value, kind: &str) -> Result<Vec<String>, String> {
    let nodes = parsed(template)?;
    // The informer leaves kind/apiVersion empty; external-dns fills them in.
    let filled;
    let mut obj = object;
    let missing = |k: &str| obj[k].as_str().is_none_or(str::is_empty);
    if missing("kind") || missing("apiVersion") {
        let mut o = object.clone();
        if missing("kind") {
            o["kind"] = Value::from(kind);
        }
        if missing("apiVersion") {
            o["apiVersion"] = Value::from("v1");
        }
        filled = o;
        obj = &filled;
    }
    let mut out = String::new();
    Exec::new(obj, &source_name(kind)).run(&nodes, obj, &mut out)?;
    let names: BTreeSet<String> = out
        .split(',')
        .map(|n| n.trim().trim_end_matches('.').to_string())
        .filter(|n| !n.is_empty())
        .collect();
    Ok(names.into_iter().collect())
}

/// external-dns's source name for a kind (`source/types`): `Service` → `service`,
/// `HTTPRoute` → `gateway-httproute`.
fn source_name(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with("route") {
        format!("gateway-{lower}")
    } else {
        lower
    }
}

/// The last template parsed on this thread: a source applies one template to every
/// object, and parsing it for each of 10,000 Services is most of the work.
fn parsed(template: &str) -> Result<std::rc::Rc<Vec<Node>>, String> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, std::rc::Rc<Vec<Node>>)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        if let Some((t, nodes)) = &*last.borrow()
            && t == template
        {
            return Ok(nodes.clone());
        }
        let nodes = std::rc::Rc::new(parse(template)?);
        *last.borrow_mut() = Some((template.to_string(), nodes.clone()));
        Ok(nodes)
    })
}

// ---- parsing ----

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Action(Pipe),
    If(Vec<(Pipe, Vec<Node>)>, Vec<Node>),
    Range(Pipe, Vec<Node>, Vec<Node>),
    With(Pipe, Vec<Node>, Vec<Node>),
    Break,
    Continue,
}

#[derive(Debug, Clone)]
struct Pipe {
    /// Variables declared (`:=`) or assigned (`=`).
    vars: Vec<String>,
    declare: bool,
    cmds: Vec<Vec<Arg>>,
}

#[derive(Debug, Clone)]
enum Arg {
    /// `.A.B` (empty: `.`).
    Field(Vec<String>),
    /// `$x.A.B` (`$` alone: the root).
    Var(String, Vec<String>),
    Func(String),
    Lit(Value),
    /// `(pipeline).A.B`.
    Sub(Pipe, Vec<String>),
}

/// A token inside `{{ }}`.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Field(Vec<String>),
    Var(String, Vec<String>),
    Ident(String),
    Lit(Value),
    Open,
    Close(Vec<String>),
    Pipe,
    Declare,
    Assign,
    Comma,
}

fn parse(src: &str) -> Result<Vec<Node>, String> {
    // Split into text and actions, with the trim markers applied.
    let mut items: Vec<Result<String, String>> = Vec::new(); // Ok: text, Err: action
    let mut rest = src;
    while let Some(start) = rest.find("{{") {
        let mut text = rest[..start].to_string();
        let after = &rest[start + 2..];
        let (trim_left, after) = match after.strip_prefix("- ") {
            Some(a) => (true, a),
            None => (false, after),
        };
        if trim_left {
            text = text.trim_end().to_string();
        }
        let end = find_close(after).ok_or_else(|| format!("unclosed action in {src:?}"))?;
        let mut action = &after[..end];
        let mut tail = &after[end + 2..];
        if let Some(a) = action.strip_suffix(" -") {
            action = a;
            tail = tail.trim_start();
        }
        items.push(Ok(text));
        let action = action.trim();
        if !(action.starts_with("/*") && action.ends_with("*/")) {
            items.push(Err(action.to_string()));
        }
        rest = tail;
    }
    items.push(Ok(rest.to_string()));
    let mut pos = 0;
    let (nodes, end) = parse_list(&items, &mut pos, false)?;
    match end {
        None => Ok(nodes),
        Some(e) => Err(format!("unexpected {{{{{e}}}}}")),
    }
}

/// The end of an action: `}}` outside a string literal.
fn find_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match quote {
            Some(q) => {
                if b[i] == b'\\' && q == b'"' {
                    i += 1;
                } else if b[i] == q {
                    quote = None;
                }
            }
            None => {
                if b[i] == b'"' || b[i] == b'`' {
                    quote = Some(b[i]);
                } else if b[i..].starts_with(b"}}") {
                    return Some(i);
                }
            }
        }
        i += 1;
    }
    None
}

/// Nodes up to an `else`/`end` (returned) or the end of input (`None`).
fn parse_list(
    items: &[Result<String, String>],
    pos: &mut usize,
    in_range: bool,
) -> Result<(Vec<Node>, Option<String>), String> {
    let mut nodes = Vec::new();
    while *pos < items.len() {
        let item = &items[*pos];
        *pos += 1;
        let action = match item {
            Ok(text) => {
                if !text.is_empty() {
                    nodes.push(Node::Text(text.clone()));
                }
                continue;
            }
            Err(a) => a.as_str(),
        };
        let (word, rest) = match action.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (action, ""),
        };
        match word {
            "end" | "else" => return Ok((nodes, Some(action.to_string()))),
            "if" => {
                let mut branches = vec![(parse_pipe(rest)?, Vec::new())];
                let mut otherwise = Vec::new();
                loop {
                    let (body, end) = parse_list(items, pos, in_range)?;
                    let end = end.ok_or("{{if}} without {{end}}")?;
                    branches.last_mut().expect("one branch").1 = body;
                    if end == "end" {
                        break;
                    }
                    if let Some(cond) = end.strip_prefix("else if ") {
                        branches.push((parse_pipe(cond.trim())?, Vec::new()));
                        continue;
                    }
                    if end != "else" {
                        return Err(format!("unexpected {{{{{end}}}}}"));
                    }
                    let (body, end) = parse_list(items, pos, in_range)?;
                    if end.as_deref() != Some("end") {
                        return Err("{{else}} without {{end}}".into());
                    }
                    otherwise = body;
                    break;
                }
                nodes.push(Node::If(branches, otherwise));
            }
            "range" | "with" => {
                let pipe = parse_pipe(rest)?;
                let (body, end) = parse_list(items, pos, in_range || word == "range")?;
                let otherwise = match end.as_deref() {
                    Some("end") => Vec::new(),
                    Some("else") => {
                        let (b, end) = parse_list(items, pos, in_range)?;
                        if end.as_deref() != Some("end") {
                            return Err(format!("{{{{{word}}}}} without {{{{end}}}}"));
                        }
                        b
                    }
                    _ => return Err(format!("{{{{{word}}}}} without {{{{end}}}}")),
                };
                nodes.push(if word == "range" {
                    Node::Range(pipe, body, otherwise)
                } else {
                    Node::With(pipe, body, otherwise)
                });
            }
            "break" | "continue" if in_range && rest.is_empty() => {
                nodes.push(if word == "break" {
                    Node::Break
                } else {
                    Node::Continue
                });
            }
            "break" | "continue" => {
                return Err(format!("{{{{{word}}}}} outside {{{{range}}}}"));
            }
            "define" | "template" | "block" => {
                return Err(format!(
                    "{{{{{word}}}}} is not supported in an fqdn template"
                ));
            }
            _ => nodes.push(Node::Action(parse_pipe(action)?)),
        }
    }
    Ok((nodes, None))
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let fields = |i: &mut usize| -> Vec<String> {
        let mut out = Vec::new();
        while *i < chars.len() && chars[*i] == '.' {
            let start = *i + 1;
            let mut j = start;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            if j == start {
                break;
            }
            out.push(chars[start..j].iter().collect());
            *i = j;
        }
        out
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '(' => {
                toks.push(Tok::Open);
                i += 1;
            }
            ')' => {
                i += 1;
                toks.push(Tok::Close(fields(&mut i)));
            }
            '|' => {
                toks.push(Tok::Pipe);
                i += 1;
            }
            ',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            ':' if chars.get(i + 1) == Some(&'=') => {
                toks.push(Tok::Declare);
                i += 2;
            }
            '=' => {
                toks.push(Tok::Assign);
                i += 1;
            }
            '.' => {
                let f = fields(&mut i);
                if f.is_empty() {
                    i += 1; // `.` alone
                }
                toks.push(Tok::Field(f));
            }
            '$' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                toks.push(Tok::Var(name, fields(&mut i)));
            }
            '"' => {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    return Err(format!("unterminated string in {s:?}"));
                }
                i += 1;
                let lit: String = chars[start..i].iter().collect();
                let v: String =
                    serde_json::from_str(&lit).map_err(|e| format!("bad string {lit}: {e}"))?;
                toks.push(Tok::Lit(Value::from(v)));
            }
            '`' => {
                let start = i + 1;
                let end = chars[start..]
                    .iter()
                    .position(|&c| c == '`')
                    .ok_or_else(|| format!("unterminated raw string in {s:?}"))?;
                toks.push(Tok::Lit(Value::from(
                    chars[start..start + end].iter().collect::<String>(),
                )));
                i = start + end + 1;
            }
            c if c.is_ascii_digit() || c == '-' => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let v = text
                    .parse::<i64>()
                    .map(Value::from)
                    .or_else(|_| text.parse::<f64>().map(Value::from))
                    .map_err(|_| format!("bad number {text:?}"))?;
                toks.push(Tok::Lit(v));
            }
            c if c.is_alphabetic() => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                toks.push(match word.as_str() {
                    "true" => Tok::Lit(Value::Bool(true)),
                    "false" => Tok::Lit(Value::Bool(false)),
                    "nil" => Tok::Lit(Value::Null),
                    _ if FUNCTIONS.contains(&word.as_str()) => Tok::Ident(word),
                    _ => return Err(format!("function {word:?} not defined")),
                });
            }
            c => return Err(format!("unexpected {c:?} in {s:?}")),
        }
    }
    Ok(toks)
}

fn parse_pipe(s: &str) -> Result<Pipe, String> {
    let toks = lex(s)?;
    let mut pos = 0;
    let pipe = pipe_of(&toks, &mut pos, true)?;
    if pos != toks.len() {
        return Err(format!("unexpected tokens in {s:?}"));
    }
    Ok(pipe)
}

fn pipe_of(toks: &[Tok], pos: &mut usize, top: bool) -> Result<Pipe, String> {
    let mut pipe = Pipe {
        vars: Vec::new(),
        declare: false,
        cmds: Vec::new(),
    };
    // `$a, $b :=` / `$a :=` / `$a =`
    if top {
        let mut j = *pos;
        let mut vars = Vec::new();
        while let Some(Tok::Var(name, f)) = toks.get(j) {
            if !f.is_empty() {
                break;
            }
            vars.push(name.clone());
            j += 1;
            if toks.get(j) == Some(&Tok::Comma) {
                j += 1;
            } else {
                break;
            }
        }
        if !vars.is_empty() && matches!(toks.get(j), Some(Tok::Declare | Tok::Assign)) {
            pipe.declare = toks[j] == Tok::Declare;
            pipe.vars = vars;
            *pos = j + 1;
        }
    }
    let mut cmd = Vec::new();
    while let Some(t) = toks.get(*pos) {
        *pos += 1;
        match t {
            Tok::Pipe => {
                if cmd.is_empty() {
                    return Err("empty command in pipeline".into());
                }
                pipe.cmds.push(std::mem::take(&mut cmd));
            }
            Tok::Close(_) if !top => {
                *pos -= 1;
                break;
            }
            Tok::Field(f) => cmd.push(Arg::Field(f.clone())),
            Tok::Var(n, f) => cmd.push(Arg::Var(n.clone(), f.clone())),
            Tok::Ident(n) => cmd.push(Arg::Func(n.clone())),
            Tok::Lit(v) => cmd.push(Arg::Lit(v.clone())),
            Tok::Open => {
                let sub = pipe_of(toks, pos, false)?;
                match toks.get(*pos) {
                    Some(Tok::Close(f)) => {
                        *pos += 1;
                        cmd.push(Arg::Sub(sub, f.clone()));
                    }
                    _ => return Err("unclosed (".into()),
                }
            }
            t => return Err(format!("unexpected {t:?}")),
        }
    }
    if cmd.is_empty() {
        return Err("missing value in pipeline".into());
    }
    pipe.cmds.push(cmd);
    Ok(pipe)
}
