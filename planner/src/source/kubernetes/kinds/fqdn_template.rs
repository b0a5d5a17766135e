//! external-dns's `--fqdn-template` (`source/template`, `ExecFQDN`), for the part of Go's
//! template language such templates use: `{{.Name}}`, `{{.Namespace}}`, `{{.Kind}}`,
//! `{{.Labels.key}}`, `{{.Annotations.key}}` and `{{index .Labels "key"}}` /
//! `{{index .Annotations "key"}}`. Anything else is refused with the construct named,
//! rather than guessed at: a name nobody asked for is worse than no name.
//!
//! The output is split on commas; each name is trimmed of spaces and of a trailing
//! dot, empties dropped, the rest deduplicated and sorted, as `execTemplate` does.
//!
//! TODO(merge): the Service translation's branch brings a fuller engine
//! (`service::template::exec_fqdn`, with `range`, `if`, the v0.22 functions). Once both
//! are in one tree, [`hosts`] should call it and this subset go; the four
//! `ingress_fqdn_test.go` cases listed as not ported in `ingress_tests.rs` can then be.
use super::Problem;
use serde_json::Value;

/// Where a template problem stands: the source's option, not the object.
pub const FIELD: &str = "fqdn_template";

/// The names `template` gives for `object` of `kind`.
pub fn hosts(template: &str, object: &Value, kind: &str) -> Result<Vec<String>, Problem> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| problem("a \"{{\" is not closed"))?;
        let action = after[..end]
            .trim()
            .trim_start_matches('-')
            .trim_end_matches('-');
        out.push_str(&eval(action.trim(), object, kind)?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    let mut names: Vec<String> = out
        .split(',')
        .map(|n| n.trim().trim_end_matches('.').to_string())
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

fn eval(action: &str, object: &Value, kind: &str) -> Result<String, Problem> {
    let meta = &object["metadata"];
    let map_value = |map: &str, key: &str| -> Result<String, Problem> {
        let field = if map == "Labels" {
            "labels"
        } else {
            "annotations"
        };
        meta[field][key]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| problem(&format!("the object has no {field} {key:?}")))
    };
    if let Some(args) = action.strip_prefix("index ") {
        let mut parts = args.split_whitespace();
        let (Some(map), Some(key), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(unsupported(action));
        };
        let key = key.trim_matches('"');
        return match map {
            ".Labels" => map_value("Labels", key),
            ".Annotations" => map_value("Annotations", key),
            _ => Err(unsupported(action)),
        };
    }
    match action {
        ".Name" => Ok(meta["name"].as_str().unwrap_or_default().to_string()),
        ".Namespace" => Ok(meta["namespace"].as_str().unwrap_or_default().to_string()),
        ".Kind" => Ok(object["kind"].as_str().unwrap_or(kind).to_string()),
        _ => {
            if let Some(key) = action.strip_prefix(".Labels.") {
                map_value("Labels", key)
            } else if let Some(key) = action.strip_prefix(".Annotations.") {
                map_value("Annotations", key)
            } else {
                Err(unsupported(action))
            }
        }
    }
}

fn unsupported(action: &str) -> Problem {
    problem(&format!(
        "{{{{{action}}}}} is not supported (only .Name, .Namespace, .Kind, .Labels.key, .Annotations.key, index)"
    ))
}

fn problem(message: &str) -> Problem {
    Problem {
        field: FIELD.to_string(),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_split_trimmed_and_sorted() {
        let o = json!({"metadata": {"name": "web", "namespace": "shop", "labels": {"team": "a"}}});
        assert_eq!(
            hosts(
                "{{.Name}}.zero.internal, {{ .Name }}.one.internal. ,  {{.Labels.team}}.{{.Namespace}}.two  ",
                &o,
                "Ingress"
            )
            .unwrap(),
            vec!["a.shop.two", "web.one.internal", "web.zero.internal"]
        );
        assert_eq!(
            hosts("{{index .Labels \"team\"}}.x", &o, "Ingress").unwrap(),
            vec!["a.x"]
        );
        assert_eq!(
            hosts("{{.Kind}}.x", &o, "Ingress").unwrap(),
            vec!["Ingress.x"]
        );
        assert_eq!(
            hosts("{{index . 0}}", &o, "Ingress").unwrap_err().field,
            FIELD
        );
        assert!(hosts("{{.Labels.none}}.x", &o, "Ingress").is_err());
    }
}
