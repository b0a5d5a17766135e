//! A config file's TOML error, shown at the key it is about.
//!
//! serde reports a mistake inside an array-of-tables entry (`[[accounts]]`,
//! `[[sources]]`) at the entry's header: the entry is read whole before the keys in it
//! (a driver's table, an internally tagged enum), so the span the error carries is the
//! header's. A user then reads "line 3: unknown field" about a key on line 11. When the
//! message names the key (`unknown field `k``, or a path `k.sub: …` as the planner's
//! and applier's own errors begin), [`describe`] finds that key's line inside the entry
//! and shows it there; otherwise it shows the error where TOML put it.

/// The error as the `toml` crate renders it (`TOML parse error at line L, column C`,
/// the line, a caret and the message), moved to the key the message names when that
/// key is written in the table the error points at; else exactly as `toml` says it.
pub fn describe(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim_end();
    let Some(span) = err.span() else {
        return err.to_string().trim_end().to_string();
    };
    match key_of(message).and_then(|path| find_key(text, span.start, &path)) {
        Some(at) if at.0 != span.start => render(text, at, message),
        _ => err.to_string().trim_end().to_string(),
    }
}

/// The key path the message is about: `unknown field `k`` → `[k]`; `a.b: …` → `[a, b]`.
fn key_of(message: &str) -> Option<Vec<String>> {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let key = rest.split('`').next()?;
        return Some(vec![key.to_string()]);
    }
    let (path, _) = message.split_once(": ")?;
    let bare = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let segments: Vec<String> = path.split('.').map(str::to_string).collect();
    segments.iter().all(|s| bare(s)).then_some(segments)
}

/// The byte range of the key `path` inside the table whose header starts at `from`:
/// `k = …` among its own lines, else `sub = …` under its `[table.k]` sub-table (or that
/// header). `None` when the key is not written there (a default, a typo elsewhere).
fn find_key(text: &str, from: usize, path: &[String]) -> Option<(usize, usize)> {
    let header_line = text[from..].lines().next()?.trim();
    let table = header_line
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim()
        .to_string();
    if !header_line.starts_with('[') || table.is_empty() {
        return None;
    }
    let mut offset = from + text[from..].find('\n')? + 1;
    // (the sub-table the lines are in, relative to `table`: "" for the entry itself)
    let mut within = String::new();
    let mut sub_header = None;
    for line in text[offset..].split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let name = trimmed.trim_matches(|c| c == '[' || c == ']').trim();
            match name.strip_prefix(&format!("{table}.")) {
                Some(sub) => {
                    within = sub.to_string();
                    if path.len() > 1 && within == path[0] {
                        sub_header = Some(key_range(text, start, trimmed));
                    }
                }
                _ => break,
            }
            continue;
        }
        let key = trimmed.split('=').next().unwrap_or("").trim();
        let wanted = if within.is_empty() {
            &path[0]
        } else if path.len() > 1 && within == path[0] {
            &path[1]
        } else {
            continue;
        };
        if !trimmed.starts_with('#') && trimmed.contains('=') && key == wanted.as_str() {
            return Some(key_range(text, start, key));
        }
    }
    sub_header
}

/// The range of `needle` in the line that starts at `line_start`.
fn key_range(text: &str, line_start: usize, needle: &str) -> (usize, usize) {
    let line = text[line_start..].lines().next().unwrap_or("");
    let at = line_start + line.find(needle).unwrap_or(0);
    (at, at + needle.len().max(1))
}

/// `TOML parse error at line L, column C`, the line with a caret under the range, and
/// the message: the `toml` crate's own shape.
fn render(text: &str, (start, end): (usize, usize), message: &str) -> String {
    let start = start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..start].matches('\n').count() + 1;
    let whole = text[line_start..].lines().next().unwrap_or("");
    // The key, not its value: a mistyped `api_key = "…"` must not put the secret in
    // a log.
    let line = match whole.split_once('=') {
        Some((key, _)) if start <= line_start + key.len() => format!("{key}= …"),
        _ => whole.to_string(),
    };
    let column = text[line_start..start].chars().count() + 1;
    let width = text[start..end.min(line_start + line.len()).max(start)]
        .chars()
        .count()
        .max(1);
    let gutter = " ".repeat(line_no.to_string().len());
    format!(
        "TOML parse error at line {line_no}, column {column}\n{gutter} |\n{line_no} | {line}\n{gutter} | {}{}\n{message}",
        " ".repeat(column - 1),
        "^".repeat(width)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct File {
        top: Option<u32>,
        entry: Vec<toml::Table>,
    }

    /// Parses `text` as a [`File`] whose entries are then read whole (as a driver's
    /// table is), failing with `message` for the entry: the error points at the header.
    fn error_at_entry(text: &str, message: &str) -> toml::de::Error {
        #[derive(Debug)]
        struct Entry;
        impl<'de> serde::Deserialize<'de> for Entry {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let _ = toml::Table::deserialize(d)?;
                Err(serde::de::Error::custom(
                    MESSAGE.with(|m| m.borrow().clone()),
                ))
            }
        }
        thread_local!(static MESSAGE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) });
        MESSAGE.with(|m| *m.borrow_mut() = message.to_string());
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct F {
            entry: Vec<Entry>,
        }
        toml::from_str::<F>(text).unwrap_err()
    }

    const TEXT: &str = "top = 1\n\n[[entry]]\nname = \"a\"\n\n[[entry]]\nname = \"b\"\n# bogus = 0\nbogus = 1\nlimit = { burst = \"x\" }\n\n[entry.rate]\nburst = \"x\"\n\n[other]\nbogus = 2\n";

    #[test]
    fn an_unknown_key_is_shown_on_its_own_line_in_its_own_entry() {
        let e = error_at_entry(TEXT, "unknown field `bogus`, expected `name`");
        // The entry the error is about is the first (serde stops there): its header.
        let shown = describe(TEXT, &e);
        assert!(
            shown.starts_with("TOML parse error at line 3, column 1"),
            "{shown}"
        );
        // The second entry's key, on line 7 (not the commented line 6, not [other]'s).
        let second = TEXT.replacen("[[entry]]\nname = \"a\"\n", "", 1);
        let e = error_at_entry(&second, "unknown field `bogus`, expected `name`");
        let shown = describe(&second, &e);
        assert!(
            shown.starts_with(
                "TOML parse error at line 7, column 1\n  |\n7 | bogus = …\n  | ^^^^^\nunknown field"
            ),
            "{shown}"
        );
    }

    #[test]
    fn a_key_path_is_shown_at_the_key_or_in_its_sub_table() {
        let second = TEXT.replacen("[[entry]]\nname = \"a\"\n", "", 1);
        for (message, want) in [
            (
                "limit.burst: invalid type",
                "TOML parse error at line 8, column 1\n  |\n8 | limit",
            ),
            (
                "rate.burst: invalid type",
                "TOML parse error at line 11, column 1\n   |\n11 | burst",
            ),
        ] {
            let shown = describe(&second, &error_at_entry(&second, message));
            assert!(shown.starts_with(want), "{shown}");
        }
        // Not written in the entry: where TOML put it.
        let e = error_at_entry(&second, "zones: missing");
        assert!(describe(&second, &e).starts_with("TOML parse error at line 4"));
        // A message that names no key: where TOML put it, as TOML says it.
        let e = toml::from_str::<File>("top = \"x\"\nentry = []\n").unwrap_err();
        assert_eq!(
            describe("top = \"x\"\nentry = []\n", &e),
            e.to_string().trim_end()
        );
    }
}
