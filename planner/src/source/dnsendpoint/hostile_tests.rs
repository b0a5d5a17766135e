//! Hostile and malformed manifest text: whatever it holds, the parser ends with
//! entries and errors that name the file and line, in bounded stack, time and memory.
use super::*;
use crate::source::testing::{entry, keys};
use proptest::prelude::*;

fn endpoint_doc(endpoints: &str) -> String {
    format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: web}}\nspec:\n  endpoints:\n{endpoints}"
    )
}

/// Texts nested `depth` levels deep in each way YAML can nest.
fn nested(style: usize, depth: usize) -> String {
    match style {
        0 => "[".repeat(depth),
        1 => "{a: ".repeat(depth),
        2 => format!("{}x\n", "- ".repeat(depth)),
        3 => {
            // Block mappings by indentation: quadratic in size, so the caller keeps
            // this one small enough to fit the size limit.
            let mut s = String::new();
            for i in 0..depth {
                s.push_str(&" ".repeat(i));
                s.push_str("a:\n");
            }
            s
        }
        _ => {
            let mut s = String::from("kind: DNSEndpoint\nspec:\n  endpoints:\n");
            s.push_str(&"  - ".repeat(depth));
            s.push_str("x\n");
            s
        }
    }
}

fn assert_refused_whole(label: &str, text: &str, what: &str) -> ParsedFile {
    let parsed = parse_file(label, text);
    assert_eq!(parsed.fatal.len(), 1, "{what}: {:?}", parsed.errors);
    assert!(parsed.accepted.is_empty(), "{what}");
    let e = &parsed.errors[parsed.fatal[0]];
    assert!(e.location.starts_with(label), "{what}: {e}");
    parsed
}

/// The reported crash: a 20 KB file of nested lists overflowed the stack. Every way
/// of nesting is refused at the line where it passes the limit, before a tree is
/// built.
#[test]
fn deep_nesting_is_refused_at_its_line_before_loading() {
    for style in 0..5 {
        let depth = if style == 3 { 2_000 } else { 100_000 };
        let text = nested(style, depth);
        let parsed = assert_refused_whole("deep.yaml", &text, &format!("style {style}"));
        let e = &parsed.errors[0];
        // Flow collections (`[[[`, `{a: {a:`) are read ahead by the scanner, which stops them
        // itself at 255 levels, before the parser's events reach the check.
        assert!(
            e.message
                .contains("nested more than 64 deep; a DNSEndpoint needs 5")
                || (style < 2 && e.message.contains("recursion limit exceeded")),
            "style {style}: {e}"
        );
        let line: usize = e.location.rsplit(':').next().unwrap().parse().unwrap();
        let expected = if style == 3 { 65 } else { 1 };
        let expected = if style == 4 { 4 } else { expected };
        assert_eq!(line, expected, "style {style}: {e}");
    }
    // The limit leaves real manifests alone: 64 levels pass the check.
    assert!(check_depth(&"[".repeat(64)).is_ok());
    assert!(check_depth(&"[".repeat(65)).is_err());
    // In a later document, the line is the file's.
    let text = format!("{}---\n{}", endpoint_doc(""), "- ".repeat(1000));
    let parsed = assert_refused_whole("deep.yaml", &text, "second document");
    assert_eq!(parsed.errors[0].location, "deep.yaml:7");
}

#[test]
fn nul_bytes_and_oversized_text_are_refused_whole() {
    let text = format!(
        "{}    - dnsName: a.example.com\n      recordType: A\n      targets: [192.0.2.1]\n",
        endpoint_doc("")
    );
    let parsed = assert_refused_whole("nul.yaml", &format!("{text}\0\0\0"), "NUL");
    assert_eq!(parsed.errors[0].location, "nul.yaml:9");
    assert!(
        parsed.errors[0].message.contains("a NUL byte"),
        "{:?}",
        parsed.errors
    );
    let parsed = assert_refused_whole("nul.yaml", &"\0".repeat(4096), "all NUL");
    assert_eq!(parsed.errors[0].location, "nul.yaml:1");

    let big = format!("{text}#{}\n", "x".repeat(MAX_MANIFEST_BYTES));
    let parsed = assert_refused_whole("big.yaml", &big, "size");
    assert!(
        parsed.errors[0]
            .message
            .contains("above the limit of 4 MiB"),
        "{:?}",
        parsed.errors
    );
}

/// The reported case: a 70 KB TXT value beside a valid record. The TXT endpoint is
/// refused with its size and the limit; the other one is accepted.
#[test]
fn a_value_no_dns_answer_can_carry_is_refused_alone() {
    let huge = "v".repeat(70_000);
    let many = (0..40)
        .map(|i| format!("{i}{}", "w".repeat(1990)))
        .collect::<Vec<_>>();
    let text = endpoint_doc(&format!(
        "    - dnsName: ok.example.com\n      recordType: A\n      targets: [192.0.2.1]\n\
         \x20   - dnsName: huge.example.com\n      recordType: TXT\n      targets: [\"{huge}\"]\n\
         \x20   - dnsName: set.example.com\n      recordType: TXT\n      targets: [{}]\n",
        many.join(", ")
    ));
    let (entries, errors) = parse_manifests("web.yaml", &text);
    assert_eq!(
        keys(&entries),
        vec![entry("ok.example.com.", "A", &["192.0.2.1"])]
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0].location, "web.yaml:11");
    assert_eq!(errors[0].record, "huge.example.com. TXT");
    assert!(
        errors[0].message.contains(
            "70275 octets of record data on the wire, above the 65535 one record can carry"
        ),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].message.len() < 400,
        "the value is not echoed whole"
    );
    assert_eq!(errors[1].location, "web.yaml:14");
    assert!(
        errors[1]
            .message
            .contains("octets as a DNS answer, above the 65535 one TCP message can carry"),
        "{}",
        errors[1]
    );
}

#[test]
fn oversized_metadata_refuses_the_resource() {
    let text = format!(
        "kind: DNSEndpoint\nmetadata: {{name: {}}}\nspec:\n  endpoints:\n  - dnsName: a.example.com\n    recordType: A\n    targets: [192.0.2.1]\n",
        "n".repeat(300)
    );
    let parsed = parse_file("meta.yaml", &text);
    assert!(parsed.accepted.is_empty());
    assert_eq!(parsed.rejected.len(), 1);
    assert!(
        parsed.errors[0]
            .message
            .contains("is 300 characters, above Kubernetes' limit of 253"),
        "{:?}",
        parsed.errors
    );
}

#[test]
fn documents_that_are_dnsendpoints_are_counted() {
    let other = "kind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n";
    assert_eq!(parse_file("a.yaml", other).endpoint_documents, 0);
    assert_eq!(
        parse_file("a.yaml", "# only a comment\n").endpoint_documents,
        0
    );
    let empty = "kind: DNSEndpoint\nmetadata: {name: x}\nspec: {endpoints: []}\n";
    assert_eq!(parse_file("a.yaml", empty).endpoint_documents, 1);
    let list = format!(
        "kind: List\nitems:\n- {}\n- {}\n",
        "{kind: DNSEndpoint, spec: {endpoints: []}}", "{kind: DNSEndpoint}"
    );
    assert_eq!(parse_file("a.yaml", &list).endpoint_documents, 2);
}

/// Every error names the file (and a line, where the text has one).
fn errors_name_the_file(parsed: &ParsedFile, label: &str) -> Result<(), TestCaseError> {
    for e in &parsed.errors {
        prop_assert!(e.location.starts_with(label), "{e}");
        prop_assert!(
            e.message.len() < 2_000,
            "an error stays short: {} bytes",
            e.message.len()
        );
    }
    for &i in &parsed.fatal {
        prop_assert!(i < parsed.errors.len());
    }
    Ok(())
}

/// YAML-ish text: the characters that drive the parser's states, in bursts.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("- ".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(": ".to_string()),
        Just("\n".to_string()),
        Just("\n  ".to_string()),
        Just("---\n".to_string()),
        Just("...\n".to_string()),
        Just("? ".to_string()),
        Just("&a ".to_string()),
        Just("*a ".to_string()),
        Just("!tag ".to_string()),
        Just("|\n".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("#".to_string()),
        Just("kind: DNSEndpoint\n".to_string()),
        Just("spec:\n  endpoints:\n".to_string()),
        Just("    - dnsName: a.example.com\n      recordType: TXT\n      targets: [".to_string()),
        "[a-zA-Z0-9 .:-]{0,12}",
        any::<String>(),
    ];
    proptest::collection::vec(token, 0..200).prop_map(|t| t.concat())
}

proptest! {
    /// Arbitrary bytes (as text): no panic, errors name the file.
    #[test]
    fn prop_manifest_parser_survives_arbitrary_text(text in any::<String>()) {
        let parsed = parse_file("fuzz.yaml", &text);
        errors_name_the_file(&parsed, "fuzz.yaml")?;
    }

    /// Text built from YAML's own syntax: no panic, errors name the file, and what is
    /// accepted is a valid, normalised entry.
    #[test]
    fn prop_manifest_parser_survives_yamlish_text(text in yamlish()) {
        let parsed = parse_file("fuzz.yaml", &text);
        errors_name_the_file(&parsed, "fuzz.yaml")?;
        for a in &parsed.accepted {
            prop_assert!(!a.entry.values.is_empty());
            prop_assert_eq!(&Name::parse(a.entry.name.as_str()).unwrap(), &a.entry.name);
        }
    }

    /// Nesting of every kind up to 100,000 levels (2,000 by indentation, which grows
    /// quadratically): never a stack overflow; beyond the limit, a refusal at a line.
    #[test]
    fn prop_manifest_parser_bounds_nesting(style in 0usize..5, depth in 0usize..100_000, tail in yamlish()) {
        let depth = if style == 3 { depth % 2_000 } else { depth };
        let text = format!("{}{tail}", nested(style, depth));
        let parsed = parse_file("deep.yaml", &text);
        errors_name_the_file(&parsed, "deep.yaml")?;
        if depth > MAX_DEPTH + 2 {
            prop_assert!(!parsed.fatal.is_empty(), "depth {depth} style {style} was loaded");
        }
    }
}
