//! Writes desired entries as `DNSEndpoint` manifests (`dnsplane import` and `export`):
//! what [`super::parse_file`] reads back to exactly the same entries.
//!
//! Every string is written double-quoted with JSON's escapes (a YAML double-quoted
//! scalar is a superset of a JSON string), so no value, however odd (`yes`, `0x10`,
//! `"quoted"`, `# not a comment`), is read back as anything else. Output is
//! deterministic: the entries in the order given (callers sort them), no timestamps.
use crate::source::DesiredEntry;
use std::fmt::Write as _;

/// The API version and kind written.
const HEADER: &str = "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n";

/// One manifest named `name` in `namespace` holding `entries` (labels included).
pub fn write(name: &str, namespace: &str, entries: &[DesiredEntry]) -> String {
    let mut out = String::with_capacity(128 + entries.len() * 96);
    out.push_str(HEADER);
    let _ = write!(
        out,
        "metadata:\n  name: {}\n  namespace: {}\nspec:\n  endpoints:",
        quoted(name),
        quoted(namespace)
    );
    if entries.is_empty() {
        out.push_str(" []\n");
        return out;
    }
    out.push('\n');
    for e in entries {
        let name = e.name.as_str().strip_suffix('.').unwrap_or(e.name.as_str());
        let _ = writeln!(out, "    - dnsName: {}", quoted(name));
        let _ = writeln!(out, "      recordType: {}", e.rtype.as_str());
        if let Some(ttl) = e.ttl {
            let _ = writeln!(out, "      recordTTL: {ttl}");
        }
        if !e.set.is_none() {
            let _ = writeln!(out, "      setIdentifier: {}", quoted(e.set.as_str()));
        }
        out.push_str("      targets:\n");
        for v in &e.values {
            let _ = writeln!(out, "        - {}", quoted(v));
        }
        if !e.properties.is_empty() {
            out.push_str("      providerSpecific:\n");
            for (n, v) in &e.properties {
                let _ = writeln!(
                    out,
                    "        - name: {}\n          value: {}",
                    quoted(n),
                    quoted(v)
                );
            }
        }
        let labels: Vec<(&str, &str)> = e.labels.iter().collect();
        if !labels.is_empty() {
            out.push_str("      labels:\n");
            for (k, v) in labels {
                let _ = writeln!(out, "        {}: {}", quoted(k), quoted(v));
            }
        }
    }
    out
}

/// `s` as a YAML double-quoted scalar (JSON's escapes).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::parse_manifests;

    fn entries(text: &str) -> Vec<DesiredEntry> {
        let (entries, errors) = parse_manifests("in.yaml", text);
        assert!(errors.is_empty(), "{errors:?}");
        entries
    }

    /// What identifies an entry's data (not where it was read).
    fn data(e: &[DesiredEntry]) -> Vec<String> {
        e.iter()
            .map(|e| {
                format!(
                    "{} {} {:?} {:?} {:?} {:?} {:?}",
                    e.name,
                    e.rtype,
                    e.ttl,
                    e.values,
                    e.set,
                    e.properties,
                    e.labels.iter().collect::<Vec<_>>()
                )
            })
            .collect()
    }

    #[test]
    fn reads_back_to_the_same_entries_whatever_the_values() {
        let text = r#"
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSEndpoint
metadata: {name: web}
spec:
  endpoints:
    - {dnsName: yes.example.com, recordType: A, recordTTL: 300, targets: [192.0.2.1, 192.0.2.2]}
    - {dnsName: "*.example.com", recordType: TXT, targets: ['"quoted text"', 'a # b', 'yes', "0x10", 'ünïcode \ back']}
    - {dnsName: mx.example.com, recordType: MX, targets: ["10 mail.example.com"]}
    - dnsName: w.example.com
      recordType: CNAME
      setIdentifier: eu
      targets: [lb.example.net]
      providerSpecific: [{name: aws/weight, value: "10"}]
      labels: {owner: "team: a"}
"#;
        let first = entries(text);
        let written = write("imported", "default", &first);
        let again = entries(&written);
        assert_eq!(data(&first), data(&again), "{written}");
        assert_eq!(
            written,
            write("imported", "default", &again),
            "deterministic"
        );
    }

    #[test]
    fn no_entries_is_an_explicit_empty_list() {
        let written = write("empty", "default", &[]);
        assert!(written.contains("endpoints: []"), "{written}");
        assert!(entries(&written).is_empty());
    }
}
