//! Presentation-format tokens (RFC 1035 §5.1) for the types whose values mix numbers,
//! quoted character-strings and names (NAPTR, SVCB/HTTPS), and hex fields.

/// Splits `value` at unquoted white space; a token may hold quoted parts (`alpn="h2,h3"`)
/// and `\X` / `\DDD` escapes, which are resolved. Each token is returned as its bytes.
pub(super) fn split(value: &str) -> Result<Vec<Vec<u8>>, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut token = Vec::new();
        let mut quoted = false;
        while let Some(&b) = bytes.get(i) {
            if !quoted && b.is_ascii_whitespace() {
                break;
            }
            i += 1;
            match b {
                b'"' => quoted = !quoted,
                b'\\' => {
                    let digits = bytes
                        .get(i..i + 3)
                        .filter(|d| d.iter().all(u8::is_ascii_digit));
                    if let Some(d) = digits {
                        let n: u32 = std::str::from_utf8(d)
                            .unwrap_or("999")
                            .parse()
                            .unwrap_or(999);
                        token.push(
                            u8::try_from(n).map_err(|_| format!("escape \\{n} is above 255"))?,
                        );
                        i += 3;
                    } else if let Some(&c) = bytes.get(i) {
                        token.push(c);
                        i += 1;
                    } else {
                        return Err("dangling backslash".into());
                    }
                }
                _ => token.push(b),
            }
        }
        if quoted {
            return Err("unterminated quoted string".into());
        }
        out.push(token);
    }
    Ok(out)
}

/// A token as text (tokens of numbers, names and keys are ASCII).
pub(super) fn text(token: &[u8]) -> String {
    String::from_utf8_lossy(token).into_owned()
}

/// Hex digits (white space allowed between them, as zone files split long digests).
pub(super) fn hex(field: &str, s: &str) -> Result<Vec<u8>, String> {
    let digits: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if digits.is_empty() {
        return Err(format!("{field} is empty"));
    }
    ::hex::decode(&digits).map_err(|_| {
        format!(
            "{field} {:?} is not hexadecimal digits in pairs",
            crate::error::excerpt(&digits)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_quoted_and_escaped_tokens() {
        let t = split(r#"10 "a b" alpn="h2,h3" x\032y "" "\"""#).unwrap();
        let t: Vec<String> = t.iter().map(|t| text(t)).collect();
        assert_eq!(t, ["10", "a b", "alpn=h2,h3", "x y", "", "\""]);
        assert!(split("\"open").unwrap_err().contains("unterminated"));
        assert!(split("\\300").unwrap_err().contains("300"));
    }

    #[test]
    fn hex_fields() {
        assert_eq!(hex("digest", "AB cd").unwrap(), vec![0xab, 0xcd]);
        assert!(hex("digest", "abc").unwrap_err().contains("digest"));
        assert!(hex("digest", "").unwrap_err().contains("empty"));
    }
}
