//! Running a parsed template on an object: Go's evaluation rules on JSON values.
use super::{Arg, Node, Pipe, TOP_FIELDS};
use serde_json::Value;

pub(super) struct Exec<'a> {
    root: &'a Value,
    /// The external-dns source name `isSource` compares with (`service`).
    source: &'a str,
    vars: Vec<(String, Value)>,
}

/// The most a template may count to with `range <n>`.
const RANGE_MAX: i64 = 10_000;

/// How a list of nodes ended: normally, or at `{{break}}`/`{{continue}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Normal,
    Break,
    Continue,
}

/// external-dns's source names (`source/types`), for `isSource`.
const SOURCES: [&str; 25] = [
    "node",
    "service",
    "ingress",
    "pod",
    "gateway-httproute",
    "gateway-grpcroute",
    "gateway-tlsroute",
    "gateway-tcproute",
    "gateway-udproute",
    "istio-gateway",
    "istio-virtualservice",
    "ambassador-host",
    "contour-httpproxy",
    "gloo-proxy",
    "traefik-proxy",
    "openshift-route",
    "fake",
    "empty",
    "connector",
    "crd",
    "skipper-routegroup",
    "kong-tcpingress",
    "f5-virtualserver",
    "f5-transportserver",
    "unstructured",
];

impl<'a> Exec<'a> {
    pub(super) fn new(root: &'a Value, source: &'a str) -> Exec<'a> {
        Exec {
            root,
            source,
            vars: Vec::new(),
        }
    }

    pub(super) fn run(
        &mut self,
        nodes: &[Node],
        dot: &Value,
        out: &mut String,
    ) -> Result<Flow, String> {
        let mark = self.vars.len();
        let mut flow = Flow::Normal;
        for node in nodes {
            let inner = match node {
                Node::Text(t) => {
                    out.push_str(t);
                    Flow::Normal
                }
                Node::Break => Flow::Break,
                Node::Continue => Flow::Continue,
                Node::Action(p) => {
                    let v = self.pipe(p, dot)?;
                    if p.vars.is_empty() {
                        out.push_str(&print(&v));
                    }
                    Flow::Normal
                }
                Node::If(branches, otherwise) => {
                    let mut taken = None;
                    for (cond, body) in branches {
                        if truthy(&self.pipe(cond, dot)?) {
                            taken = Some(body);
                            break;
                        }
                    }
                    self.run(taken.unwrap_or(otherwise), dot, out)?
                }
                Node::With(p, body, otherwise) => {
                    let v = self.pipe(p, dot)?;
                    if truthy(&v) {
                        self.run(body, &v, out)?
                    } else {
                        self.run(otherwise, dot, out)?
                    }
                }
                Node::Range(p, body, otherwise) => {
                    let v = self.pipe(
                        &Pipe {
                            vars: Vec::new(),
                            ..p.clone()
                        },
                        dot,
                    )?;
                    let items: Vec<(Value, Value)> = match &v {
                        Value::Array(a) => a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| (Value::from(i), x.clone()))
                            .collect(),
                        // Go ranges over a map in key order.
                        Value::Object(m) => {
                            let mut kv: Vec<_> = m
                                .iter()
                                .map(|(k, x)| (Value::from(k.clone()), x.clone()))
                                .collect();
                            kv.sort_by_key(|a| print(&a.0));
                            kv
                        }
                        Value::Null => Vec::new(),
                        // Go 1.22's range over an integer, bounded: a name list is short.
                        Value::Number(n) => {
                            let n = n.as_i64().unwrap_or(0);
                            if n > RANGE_MAX {
                                return Err(format!("range over {n}: more than {RANGE_MAX}"));
                            }
                            (0..n).map(|i| (Value::from(i), Value::from(i))).collect()
                        }
                        other => return Err(format!("range can't iterate over {}", print(other))),
                    };
                    let mut flow = Flow::Normal;
                    if items.is_empty() {
                        flow = self.run(otherwise, dot, out)?;
                    }
                    for (k, x) in items {
                        let inner = self.vars.len();
                        match p.vars.as_slice() {
                            [] => {}
                            [v] => self.vars.push((v.clone(), x.clone())),
                            [kname, vname] => {
                                self.vars.push((kname.clone(), k));
                                self.vars.push((vname.clone(), x.clone()));
                            }
                            _ => return Err("too many variables in range".into()),
                        }
                        let f = self.run(body, &x, out)?;
                        self.vars.truncate(inner);
                        if f == Flow::Break {
                            break;
                        }
                    }
                    flow
                }
            };
            if inner != Flow::Normal {
                flow = inner;
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(flow)
    }

    /// `isSource "name"`: whether this is external-dns's source of that name
    /// (case-insensitive); an unknown name is an error, as in v0.22.
    fn is_source(&self, args: &[Value]) -> Result<Value, String> {
        let [Value::String(want)] = args else {
            return Err("isSource: want one string argument".into());
        };
        if !SOURCES.iter().any(|s| s.eq_ignore_ascii_case(want)) {
            return Err(format!(
                "isSource: unknown source {want:?} (valid: {})",
                SOURCES.join(", ")
            ));
        }
        Ok(Value::Bool(self.source.eq_ignore_ascii_case(want)))
    }

    fn pipe(&mut self, p: &Pipe, dot: &Value) -> Result<Value, String> {
        let mut value: Option<Value> = None;
        for cmd in &p.cmds {
            value = Some(self.command(cmd, dot, value)?);
        }
        let v = value.unwrap_or(Value::Null);
        for name in &p.vars {
            if p.declare {
                self.vars.push((name.clone(), v.clone()));
            } else {
                let slot = self
                    .vars
                    .iter_mut()
                    .rev()
                    .find(|(n, _)| n == name)
                    .ok_or_else(|| format!("undefined variable {name}"))?;
                slot.1 = v.clone();
            }
        }
        Ok(v)
    }

    fn command(&mut self, cmd: &[Arg], dot: &Value, piped: Option<Value>) -> Result<Value, String> {
        if let Some(Arg::Func(name)) = cmd.first() {
            let mut args = Vec::new();
            for a in &cmd[1..] {
                args.push(self.arg(a, dot)?);
            }
            args.extend(piped);
            if name == "isSource" {
                return self.is_source(&args);
            }
            return call(name, &args);
        }
        if cmd.len() != 1 || piped.is_some() {
            return Err("can't give an argument to a non-function".into());
        }
        self.arg(&cmd[0], dot)
    }

    fn arg(&mut self, a: &Arg, dot: &Value) -> Result<Value, String> {
        match a {
            Arg::Field(f) => walk(dot, f, std::ptr::eq(dot, self.root)),
            Arg::Var(name, f) if name == "$" => walk(self.root, f, true),
            Arg::Var(name, f) => {
                let v = self
                    .vars
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v)
                    .ok_or_else(|| format!("undefined variable {name}"))?;
                walk(v, f, false)
            }
            Arg::Lit(v) => Ok(v.clone()),
            Arg::Func(name) => call(name, &[]),
            Arg::Sub(p, f) => {
                let v = self.pipe(p, dot)?;
                walk(&v, f, false)
            }
        }
    }
}

/// Field access, Go names on JSON: `Name` → `metadata.name` at the top, otherwise
/// the key as written or with its leading capitals lowered (`ClusterIP` →
/// `clusterIP`, `APIVersion` → `apiVersion`).
fn walk(v: &Value, fields: &[String], top: bool) -> Result<Value, String> {
    let Some((first, rest)) = fields.split_first() else {
        return Ok(v.clone());
    };
    if !top {
        return walk_from(field(v, first)?, rest);
    }
    if !TOP_FIELDS.contains(&first.as_str()) {
        return Err(format!("can't evaluate field {first} in the object"));
    }
    let next = match first.as_str() {
        "ObjectMeta" => &v["metadata"],
        "TypeMeta" => {
            let meta = serde_json::json!({"kind": v["kind"], "apiVersion": v["apiVersion"]});
            return walk_from(&meta, rest);
        }
        "Kind" | "APIVersion" | "Spec" | "Status" => &v[go_to_json(first)],
        _ => &v["metadata"][go_to_json(first)],
    };
    walk_from(next, rest)
}

/// The rest of a field chain, by reference; only the end is copied.
fn walk_from(v: &Value, fields: &[String]) -> Result<Value, String> {
    let mut cur = v;
    for f in fields {
        cur = field(cur, f)?;
    }
    Ok(cur.clone())
}

/// One field of a (non-root) value: the key as written, or as JSON spells the Go name.
fn field<'v>(v: &'v Value, f: &str) -> Result<&'v Value, String> {
    static NULL: Value = Value::Null;
    match v {
        Value::Object(m) => Ok(m.get(f).or_else(|| m.get(&go_to_json(f))).unwrap_or(&NULL)),
        Value::Null => Ok(&NULL),
        other => Err(format!("can't evaluate field {f} in {}", print(other))),
    }
}

/// `ClusterIP` → `clusterIP`, `APIVersion` → `apiVersion`, `UID` → `uid`.
pub(super) fn go_to_json(f: &str) -> String {
    let chars: Vec<char> = f.chars().collect();
    let upper = chars.iter().take_while(|c| c.is_uppercase()).count();
    let lower_to = if upper > 1 && upper < chars.len() {
        upper - 1
    } else {
        upper
    };
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i < lower_to.max(1) {
                c.to_lowercase().next().unwrap_or(*c)
            } else {
                *c
            }
        })
        .collect()
}

/// Go's `fmt.Sprint` of a value, as far as names go.
fn print(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(print).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, x)| format!("{k}:{}", print(x)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// Go's truth: false, 0, nil and empty strings, lists and maps are false.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

fn string_arg(args: &[Value], i: usize, name: &str) -> Result<String, String> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) => Ok(String::new()),
        Some(other) => Ok(print(other)),
        None => Err(format!("{name}: wrong number of arguments")),
    }
}

fn want_args(args: &[Value], n: usize, name: &str) -> Result<(), String> {
    if args.len() == n {
        Ok(())
    } else {
        Err(format!("{name}: want {n} arguments, got {}", args.len()))
    }
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Equality as Go's `eq`: a missing value equals the empty string.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::String(s)) | (Value::String(s), Value::Null) => s.is_empty(),
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    let s = |i| string_arg(args, i, name);
    Ok(match name {
        "eq" => {
            if args.len() < 2 {
                return Err("eq: want at least 2 arguments".into());
            }
            Value::Bool(args[1..].iter().any(|b| equal(&args[0], b)))
        }
        "ne" => {
            want_args(args, 2, name)?;
            Value::Bool(!equal(&args[0], &args[1]))
        }
        "lt" | "le" | "gt" | "ge" => {
            want_args(args, 2, name)?;
            let o = compare(&args[0], &args[1])
                .ok_or_else(|| format!("{name}: incompatible types for comparison"))?;
            Value::Bool(match name {
                "lt" => o.is_lt(),
                "le" => o.is_le(),
                "gt" => o.is_gt(),
                _ => o.is_ge(),
            })
        }
        "and" => args
            .iter()
            .find(|a| !truthy(a))
            .or(args.last())
            .cloned()
            .unwrap_or(Value::Null),
        "or" => args
            .iter()
            .find(|a| truthy(a))
            .or(args.last())
            .cloned()
            .unwrap_or(Value::Null),
        "not" => {
            want_args(args, 1, name)?;
            Value::Bool(!truthy(&args[0]))
        }
        "len" => {
            want_args(args, 1, name)?;
            Value::from(match &args[0] {
                Value::String(x) => x.len(),
                Value::Array(a) => a.len(),
                Value::Object(m) => m.len(),
                Value::Null => 0,
                other => return Err(format!("len of {}", print(other))),
            })
        }
        "index" => {
            let mut cur = args.first().cloned().unwrap_or(Value::Null);
            for k in args.iter().skip(1) {
                cur = match (&cur, k) {
                    (Value::Object(m), Value::String(k)) => {
                        m.get(k).cloned().unwrap_or(Value::Null)
                    }
                    (Value::Array(a), Value::Number(i)) => i
                        .as_u64()
                        .and_then(|i| a.get(i as usize).cloned())
                        .ok_or_else(|| format!("index out of range: {i}"))?,
                    (Value::Null, _) => Value::Null,
                    _ => return Err(format!("can't index {} with {}", print(&cur), print(k))),
                };
            }
            cur
        }
        "print" => Value::from(args.iter().map(print).collect::<String>()),
        "printf" => Value::from(printf(&s(0)?, &args[1..])?),
        "contains" => {
            want_args(args, 2, name)?;
            Value::Bool(s(0)?.contains(&s(1)?))
        }
        "trimPrefix" => {
            want_args(args, 2, name)?;
            let (x, p) = (s(0)?, s(1)?);
            Value::from(x.strip_prefix(&p).unwrap_or(&x).to_string())
        }
        "trimSuffix" => {
            want_args(args, 2, name)?;
            let (x, p) = (s(0)?, s(1)?);
            Value::from(x.strip_suffix(&p).unwrap_or(&x).to_string())
        }
        "trim" => {
            want_args(args, 1, name)?;
            Value::from(s(0)?.trim().to_string())
        }
        "toLower" => {
            want_args(args, 1, name)?;
            Value::from(s(0)?.to_lowercase())
        }
        "replace" => {
            want_args(args, 3, name)?;
            Value::from(s(2)?.replace(&s(0)?, &s(1)?))
        }
        "isIPv4" => {
            want_args(args, 1, name)?;
            Value::Bool(super::super::suitable_type(&s(0)?) == "A")
        }
        "isIPv6" => {
            want_args(args, 1, name)?;
            Value::Bool(super::super::suitable_type(&s(0)?) == "AAAA")
        }
        "hasKey" => {
            want_args(args, 2, name)?;
            let key = s(1)?;
            Value::Bool(args[0].as_object().is_some_and(|m| m.contains_key(&key)))
        }
        "fromJson" => {
            want_args(args, 1, name)?;
            serde_json::from_str(&s(0)?).unwrap_or(Value::Null)
        }
        _ => return Err(format!("function {name:?} not defined")),
    })
}

/// `printf` with `%s %v %d %q %%`.
fn printf(format: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut it = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(verb @ ('s' | 'v' | 'd' | 'q')) => {
                let a = it
                    .next()
                    .map(print)
                    .unwrap_or_else(|| format!("%!{verb}(MISSING)"));
                if verb == 'q' {
                    out.push_str(&format!("{a:?}"));
                } else {
                    out.push_str(&a);
                }
            }
            other => {
                return Err(format!(
                    "printf: verb %{} is not supported",
                    other.unwrap_or(' ')
                ));
            }
        }
    }
    Ok(out)
}
