//! `--fqdn-template` for Ingresses and routes: the names a Go template gives for an
//! object, run by the one template engine ([`super::service::template::exec_fqdn`],
//! external-dns v0.22's functions, `range`, `if`, …), its failure a [`Problem`] on the
//! source's option.
use super::Problem;
use serde_json::Value;

/// Where a template problem stands: the source's option, not the object.
pub const FIELD: &str = "fqdn_template";

/// The names `template` gives for `object` of `kind`.
pub fn hosts(template: &str, object: &Value, kind: &str) -> Result<Vec<String>, Problem> {
    super::service::template::exec_fqdn(template, object, kind).map_err(|e| problem(&e))
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
        // Go's templates: a missing map key is empty; the name left is checked later.
        assert_eq!(
            hosts("{{.Labels.none}}.x", &o, "Ingress").unwrap(),
            vec![".x"]
        );
    }
}
