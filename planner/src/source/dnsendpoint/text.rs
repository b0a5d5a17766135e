//! The text of a manifest before it is a tree: the limits every text must meet (size,
//! no NUL byte, nesting depth), checked without building anything, and the YAML
//! plumbing around the loader (splitting a stream into documents, the loader's errors
//! in words a user can act on).
use marked_yaml::LoadError;
use yaml_rust2::parser::{Event, Parser};

/// The largest manifest text parsed (4 MiB): far above any real one (a Kubernetes
/// object is at most 1.5 MiB), low enough that memory stays bounded whatever a file
/// holds.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// The deepest nesting of mappings and sequences a document may have. A DNSEndpoint
/// needs 5 (`spec.endpoints[].targets[]` in a `List`); the loader builds and drops a
/// tree recursively, so depth, not size, is what could exhaust the stack.
pub const MAX_DEPTH: usize = 64;

/// Refuses a text over [`MAX_MANIFEST_BYTES`] or holding a NUL byte (a file truncated
/// or overwritten by a crash often is), with the line of the first NUL.
pub(crate) fn check_text(text: &str) -> Result<(), (Option<usize>, String)> {
    check_text_within(text, MAX_MANIFEST_BYTES)
}

/// [`check_text`] with another size limit (a format that holds a whole zone in one
/// file).
pub(crate) fn check_text_within(text: &str, max: usize) -> Result<(), (Option<usize>, String)> {
    if text.len() > max {
        return Err((
            None,
            format!(
                "{} bytes, above the limit of {} MiB for one manifest text",
                text.len(),
                max >> 20
            ),
        ));
    }
    if let Some(at) = text.find('\0') {
        let line = text[..at].matches('\n').count() + 1;
        return Err((
            Some(line),
            "a NUL byte: this is not a YAML text (a truncated or corrupted write?)".into(),
        ));
    }
    Ok(())
}

/// Refuses a document nested deeper than [`MAX_DEPTH`], at the line where it gets too
/// deep, before it is loaded. The check streams the parser's events (no tree, constant
/// stack), so it stops at the first too-deep level whatever follows; a syntax error is
/// left to the loader, which reports it with its own words.
pub(crate) fn check_depth(text: &str) -> Result<(), (usize, String)> {
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) | Err(_) => return Ok(()),
            Ok((Event::SequenceStart(..) | Event::MappingStart(..), mark)) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err((
                        mark.line().max(1),
                        format!(
                            "mappings and lists nested more than {MAX_DEPTH} deep; a DNSEndpoint needs 5"
                        ),
                    ));
                }
            }
            Ok((Event::SequenceEnd | Event::MappingEnd, _)) => depth = depth.saturating_sub(1),
            Ok(_) => {}
        }
    }
}

/// One YAML document of a file: its text, and the number of lines before it.
#[derive(Debug)]
pub(crate) struct Document {
    pub(crate) offset: usize,
    pub(crate) text: String,
}

/// Splits a multi-document stream at `---` and `...` lines. Each document keeps its
/// lines' columns (the marker is blanked, not removed), and `offset` maps its line
/// numbers back to the file's. (`marked-yaml` loads one document per call.)
pub(crate) fn split_documents(text: &str) -> Vec<Document> {
    let is_marker = |line: &str, m: &str| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    };
    let mut docs = vec![Document {
        offset: 0,
        text: String::new(),
    }];
    for (i, line) in text.lines().enumerate() {
        if is_marker(line, "---") {
            docs.push(Document {
                offset: i,
                text: format!("   {}\n", &line[3..]),
            });
        } else if is_marker(line, "...") {
            docs.push(Document {
                offset: i + 1,
                text: String::new(),
            });
        } else if let Some(doc) = docs.last_mut() {
            doc.text.push_str(line);
            doc.text.push('\n');
        }
    }
    docs
}

/// True when a document holds nothing but blank lines, comments and directives.
pub(crate) fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || l.starts_with('%')
    })
}

pub(crate) fn describe_load_error(e: &LoadError) -> (Option<usize>, String) {
    match e {
        LoadError::ScanError(m, se) => (Some(m.line()), format!("invalid YAML: {}", se.info())),
        LoadError::TopLevelMustBeMapping(m) | LoadError::TopLevelMustBeSequence(m) => (
            Some(m.line()),
            "a document must be a mapping (apiVersion, kind, metadata, spec)".into(),
        ),
        LoadError::UnexpectedAnchor(m) => (
            Some(m.line()),
            "YAML anchors and aliases are not supported".into(),
        ),
        LoadError::MappingKeyMustBeScalar(m) => {
            (Some(m.line()), "mapping keys must be plain scalars".into())
        }
        LoadError::UnexpectedTag(m) => (Some(m.line()), "YAML tags are not supported".into()),
        LoadError::DuplicateKey(inner) => {
            let first = inner.prev_key.span().start().map(|m| m.line());
            let at = first
                .map(|l| format!(" (first at line {l})"))
                .unwrap_or_default();
            (
                inner.key.span().start().map(|m| m.line()),
                format!("duplicate key {:?}{at}", inner.key.as_str()),
            )
        }
    }
}
