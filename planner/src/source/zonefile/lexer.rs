//! The presentation-format lexer (RFC 1035 §5.1): the text cut into logical entries (a
//! line, or several joined by parentheses), each a list of tokens that still hold their
//! quotes and escapes, with the byte offset of each so that errors name line and column.
//!
//! One pass over the bytes, no backtracking and no recursion: parentheses are a counter
//! (BIND accepts them nested), so a hostile text costs time linear in its length.

/// The most fields one entry may have: more than any record's data can hold (65,535
/// octets; even hex split into single digits takes two fields an octet). A longer
/// entry is refused as it is read, so a hostile 64 MiB line of one-letter words costs
/// no more memory than its text.
pub(super) const MAX_FIELDS: usize = 2 * 65_535 + 16;

/// One token: its raw text (quotes and escapes as written) and where it starts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Token<'a> {
    pub(super) raw: &'a str,
    /// Byte offset in the text.
    pub(super) at: usize,
    /// 1-based line.
    pub(super) line: usize,
}

/// A logical entry: its tokens are in the `Vec` given to [`Lexer::next_entry`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    /// The entry starts with white space: its owner is the previous one.
    pub(super) blank_owner: bool,
    /// 1-based line of its first token.
    pub(super) line: usize,
}

/// A syntax error that makes the rest of the text unreadable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LexError {
    pub(super) at: usize,
    pub(super) line: usize,
    pub(super) message: String,
}

pub(super) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(text: &'a str) -> Lexer<'a> {
        Lexer {
            text,
            pos: 0,
            line: 1,
        }
    }

    /// The next entry that holds at least one token, its tokens in `tokens` (cleared
    /// first); `None` at the end of the text.
    pub(super) fn next_entry(
        &mut self,
        tokens: &mut Vec<Token<'a>>,
    ) -> Result<Option<Entry>, LexError> {
        tokens.clear();
        let bytes = self.text.as_bytes();
        // Where the open parenthesis of the current group is (for the error if the
        // text ends inside it), and how deep the group is.
        let mut depth = 0usize;
        let mut open = (0usize, 0usize);
        let mut blank_owner = matches!(bytes.get(self.pos), Some(b' ' | b'\t'));
        let mut first_line = self.line;
        loop {
            let Some(&b) = bytes.get(self.pos) else {
                if depth > 0 {
                    return Err(LexError {
                        at: open.0,
                        line: open.1,
                        message: "'(' is never closed: the text ends inside parentheses".into(),
                    });
                }
                return Ok((!tokens.is_empty()).then_some(Entry {
                    blank_owner,
                    line: first_line,
                }));
            };
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    if depth == 0 {
                        if !tokens.is_empty() {
                            return Ok(Some(Entry {
                                blank_owner,
                                line: first_line,
                            }));
                        }
                        // An empty or comment-only line: the next line starts afresh.
                        blank_owner = matches!(bytes.get(self.pos), Some(b' ' | b'\t'));
                        first_line = self.line;
                    }
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b';' => {
                    let rest = &bytes[self.pos..];
                    self.pos += memchr_newline(rest);
                }
                b'(' => {
                    if depth == 0 {
                        open = (self.pos, self.line);
                    }
                    depth += 1;
                    self.pos += 1;
                }
                b')' => {
                    if depth == 0 {
                        return Err(LexError {
                            at: self.pos,
                            line: self.line,
                            message: "')' without a matching '('".into(),
                        });
                    }
                    depth -= 1;
                    self.pos += 1;
                }
                _ => {
                    if tokens.is_empty() {
                        first_line = self.line;
                    }
                    let token = self.token()?;
                    if tokens.len() == MAX_FIELDS {
                        return Err(LexError {
                            at: token.at,
                            line: token.line,
                            message: format!(
                                "more than {MAX_FIELDS} fields in one record: more than any record's data can hold"
                            ),
                        });
                    }
                    tokens.push(token);
                }
            }
        }
    }

    /// One token from the current position: up to white space, a parenthesis or a
    /// comment outside quotes. A quoted part may not cross a line end (BIND refuses it
    /// too: "unbalanced quotes").
    fn token(&mut self) -> Result<Token<'a>, LexError> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let mut quote: Option<usize> = None;
        while let Some(&b) = bytes.get(self.pos) {
            match (quote, b) {
                (_, b'\n') => break,
                (None, b' ' | b'\t' | b'\r' | b'(' | b')' | b';') => break,
                (_, b'\\') => {
                    if matches!(bytes.get(self.pos + 1), None | Some(b'\n')) {
                        return Err(LexError {
                            at: self.pos,
                            line: self.line,
                            message: "a backslash at the end of a line escapes nothing".into(),
                        });
                    }
                    self.pos += 2;
                    // The escaped byte may start a multi-byte character: keep whole
                    // characters so the token stays valid text.
                    while self.pos < bytes.len() && !self.text.is_char_boundary(self.pos) {
                        self.pos += 1;
                    }
                }
                (None, b'"') => {
                    quote = Some(self.pos);
                    self.pos += 1;
                }
                (Some(_), b'"') => {
                    quote = None;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        if let Some(at) = quote {
            return Err(LexError {
                at,
                line: self.line,
                message: "a quoted string is not closed on its line (unbalanced quotes)".into(),
            });
        }
        Ok(Token {
            raw: &self.text[start..self.pos],
            at: start,
            line: self.line,
        })
    }
}

/// The length up to (not including) the next line end.
fn memchr_newline(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len())
}

/// 1-based column (in characters) of byte offset `at` of `text`.
pub(super) fn column(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..at].chars().count() + 1
}
