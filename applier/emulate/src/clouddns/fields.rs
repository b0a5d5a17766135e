//! Partial responses: the `fields` query parameter of every Google JSON API, e.g.
//! `fields=rrsets(name,type),nextPageToken` or `fields=id` (which google-cloud-dns's
//! `Zone.exists()` sends). The grammar, as Google documents it: a comma-separated list
//! of paths (`a/b` selects `b` inside `a`), each optionally followed by a
//! parenthesised sub-selection applied to the object (or to each element of the
//! array) it names. A selection that does not parse is 400 `invalid`.
use serde_json::{Map, Value};

/// One selected field and what to keep inside it (`None`: all of it).
#[derive(Debug, PartialEq)]
pub(crate) struct Selection {
    name: String,
    inner: Option<Vec<Selection>>,
}

/// Parses `fields`; `Err` when it is malformed.
fn parse(text: &str) -> Result<Vec<Selection>, ()> {
    let mut chars = text.chars().filter(|c| !c.is_whitespace()).peekable();
    let out = parse_list(&mut chars)?;
    if chars.next().is_some() {
        return Err(());
    }
    Ok(out)
}

fn parse_list(
    chars: &mut std::iter::Peekable<impl Iterator<Item = char>>,
) -> Result<Vec<Selection>, ()> {
    let mut out = Vec::new();
    loop {
        out.push(parse_item(chars)?);
        match chars.peek() {
            Some(',') => {
                chars.next();
            }
            _ => return Ok(out),
        }
    }
}

fn parse_item(
    chars: &mut std::iter::Peekable<impl Iterator<Item = char>>,
) -> Result<Selection, ()> {
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '*' {
            name.push(c);
            chars.next();
        } else {
            break;
        }
    }
    if name.is_empty() {
        return Err(());
    }
    let inner = match chars.peek() {
        Some('/') => {
            chars.next();
            Some(vec![parse_item(chars)?])
        }
        Some('(') => {
            chars.next();
            let list = parse_list(chars)?;
            if chars.next() != Some(')') {
                return Err(());
            }
            Some(list)
        }
        _ => None,
    };
    Ok(Selection { name, inner })
}

/// `value` with only the selected fields.
fn select(value: &Value, sel: &[Selection]) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| select(v, sel)).collect()),
        Value::Object(obj) => {
            let mut out = Map::new();
            for s in sel {
                let picked: Vec<(&String, &Value)> = if s.name == "*" {
                    obj.iter().collect()
                } else {
                    obj.get_key_value(&s.name).into_iter().collect()
                };
                for (k, v) in picked {
                    let v = match &s.inner {
                        None => v.clone(),
                        Some(inner) => select(v, inner),
                    };
                    // Two selections of one field (`a/b,a/c`) merge.
                    match (out.get_mut(k), v) {
                        (Some(Value::Object(have)), Value::Object(more)) => have.extend(more),
                        (_, v) => {
                            out.insert(k.clone(), v);
                        }
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// The `fields` parameter: `Ok(None)` when absent (the whole answer), `Err(())` when
/// malformed. Checked before the call runs, as Google refuses the request whole.
pub(crate) fn selection(fields: Option<&str>) -> Result<Option<Vec<Selection>>, ()> {
    match fields.map(str::trim).filter(|f| !f.is_empty()) {
        None => Ok(None),
        Some(f) => parse(f).map(Some),
    }
}

/// The answer `value` cut down to the selection.
pub(crate) fn cut(value: Value, sel: Option<&[Selection]>) -> Value {
    match sel {
        None => value,
        Some(sel) => select(&value, sel),
    }
}

#[cfg(test)]
fn apply(value: Value, fields: Option<&str>) -> Result<Value, ()> {
    Ok(cut(value, selection(fields)?.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_fields_asked_for() {
        let v = json!({
            "kind": "dns#resourceRecordSetsListResponse",
            "nextPageToken": "t",
            "rrsets": [
                {"kind": "k", "name": "a.", "type": "A", "ttl": 300, "rrdatas": ["192.0.2.1"]},
                {"kind": "k", "name": "b.", "type": "TXT", "ttl": 60, "rrdatas": ["\"x\""]},
            ],
        });
        assert_eq!(
            apply(v.clone(), Some("rrsets(name,type),nextPageToken")).unwrap(),
            json!({"nextPageToken": "t", "rrsets": [{"name": "a.", "type": "A"}, {"name": "b.", "type": "TXT"}]})
        );
        assert_eq!(
            apply(v.clone(), Some("rrsets/name")).unwrap(),
            json!({"rrsets": [{"name": "a."}, {"name": "b."}]})
        );
        assert_eq!(
            apply(json!({"id": "1", "name": "z"}), Some("id")).unwrap(),
            json!({"id": "1"})
        );
        assert_eq!(
            apply(
                json!({"quota": {"a": 1, "b": 2, "c": 3}}),
                Some("quota/a,quota/b")
            )
            .unwrap(),
            json!({"quota": {"a": 1, "b": 2}})
        );
        assert_eq!(apply(v.clone(), None).unwrap(), v);
        assert_eq!(apply(v.clone(), Some("*")).unwrap(), v);
        for bad in ["rrsets(name", "a,,b", "(x)", "a)b", "a b/"] {
            assert!(apply(v.clone(), Some(bad)).is_err(), "{bad}");
        }
    }
}
