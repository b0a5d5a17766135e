//! RFC 1035 zone files (the master-file format BIND, NSD and Knot read) as desired
//! entries, and desired entries written back as a zone file ([`write`]).
//!
//! ```text
//! $ORIGIN example.com.
//! $TTL 1h
//! @        IN SOA ns1 hostmaster ( 1 3600 600 604800 300 )   ; read, never an entry
//!          IN NS  ns1.example.net.                           ; the apex NS: likewise
//! www  300 IN A   192.0.2.10
//!              A   192.0.2.11                                ; the same owner, RRSet merged
//! txt          TXT "v=spf1 -all" "a \"quoted\" part"
//! ```
//!
//! Read as BIND reads it: `$ORIGIN`, `$TTL`, `@`, relative names, a blank owner (the
//! previous one), parentheses across lines, `;` comments, quoted strings, `\X` and
//! `\DDD` escapes, TTL and class in either order, TTL units (`1h30m`). The lines of
//! one (name, type) make one entry, its values sorted and deduplicated. Its TTL is
//! BIND's: an omitted TTL is the `$TTL`, else the last TTL given (RFC 1035), else the
//! SOA's minimum when the SOA itself has none; when the lines of one RRSet disagree,
//! the first line of a run of lines with the same owner sets the run's TTL and the
//! last run wins (what `named-checkzone -D` prints); a warning names the lines.
//!
//! SOA and the NS at the apex are read and checked but never become entries: the
//! provider owns them. `$INCLUDE` and `$GENERATE` are refused. A type dnsplane does not
//! model (LOC, HINFO, TYPE65534…) is skipped with a warning, never turned into
//! something else. A syntax error that breaks the reading of what follows (an
//! unbalanced parenthesis or quote, a bad directive, an unknown type, a bad owner) is
//! fatal: the file source keeps the file's last accepted records. A bad value only
//! rejects its RRSet, which keeps its last accepted version. Every error names
//! `file:line:column`. Pure and synchronous like [`super::dnsendpoint`].
use super::dnsendpoint::{ParsedFile, SOURCE_KIND};
use super::{DesiredEntry, SourceError};
use dnsplane_common::error::excerpt;
use dnsplane_common::rrset::MAX_TTL;
use dnsplane_common::{Name, RecordType};
use fields::{FieldError, Kind, NameError};
use lexer::{Lexer, Token, column};
use rrsets::Set;
use std::collections::HashMap;

mod fields;
mod lexer;
mod rrsets;
mod soa;
mod write;

pub use write::{Written, write};

/// The largest zone-file text parsed (64 MiB, about a million records): far above a
/// real zone, low enough that memory stays bounded whatever a file holds.
pub const MAX_ZONE_FILE_BYTES: usize = 64 << 20;

/// What a zone file declares, for callers outside the file source (the CLI).
#[derive(Debug, Default)]
pub struct Parsed {
    /// The accepted entries; empty when an error was fatal.
    pub entries: Vec<DesiredEntry>,
    pub errors: Vec<SourceError>,
    /// What was read and deliberately not used (an unmodelled type), or read
    /// differently from how it was written (an RRSet's disagreeing TTLs).
    pub warnings: Vec<SourceError>,
    /// The zone the file is for: its `$ORIGIN` before the first record, else the
    /// origin given, else the owner of a SOA that comes first.
    pub origin: Option<Name>,
}

/// Parses a zone file; `label` names it in locations (`label:line:column`), `origin`
/// completes relative names until a `$ORIGIN`.
pub fn parse(label: &str, text: &str, origin: Option<&Name>) -> Parsed {
    let (parsed, zone) = parse_with_zone(label, text, origin);
    Parsed {
        entries: if parsed.fatal.is_empty() {
            parsed.accepted.into_iter().map(|a| a.entry).collect()
        } else {
            Vec::new()
        },
        errors: parsed.errors,
        warnings: parsed.warnings,
        origin: zone,
    }
}

/// [`parse`] for the file source: the accepted entries with their slots (one per
/// RRSet, in first-appearance order), what each error stands for, and which are fatal.
pub(crate) fn parse_file(label: &str, text: &str, origin: Option<&Name>) -> ParsedFile {
    parse_with_zone(label, text, origin).0
}

struct Reader<'t> {
    label: &'t str,
    text: &'t str,
    origin: Option<Name>,
    /// The zone: decided at the first record.
    zone: Option<Name>,
    zone_decided: bool,
    default_ttl: Option<u32>,
    last_ttl: Option<u32>,
    owner: Option<Name>,
    /// The previous owner as written (after completion, before lower-casing): BIND
    /// starts a new run when it changes, even only in case.
    owner_written: String,
    run: u64,
    sets: Vec<Set>,
    index: HashMap<(Name, RecordType), usize>,
    out: ParsedFile,
}

/// Stops reading: a fatal error.
struct Fatal;

fn parse_with_zone(label: &str, text: &str, origin: Option<&Name>) -> (ParsedFile, Option<Name>) {
    let mut r = Reader {
        label,
        text,
        origin: origin.cloned(),
        zone: None,
        zone_decided: false,
        default_ttl: None,
        last_ttl: None,
        owner: None,
        owner_written: String::new(),
        run: 0,
        sets: Vec::new(),
        index: HashMap::new(),
        out: ParsedFile::default(),
    };
    if text.len() > MAX_ZONE_FILE_BYTES {
        let message = format!(
            "{} bytes, above the limit of {} MiB for one zone file",
            text.len(),
            MAX_ZONE_FILE_BYTES >> 20
        );
        r.fatal(None, message);
        return (r.out, None);
    }
    if let Some(at) = text.find('\0') {
        let line = text[..at].matches('\n').count() + 1;
        let message =
            "a NUL byte: this is not a zone file (a truncated or corrupted write?)".to_string();
        r.fatal(Some((line, at)), message);
        return (r.out, None);
    }
    if r.read().is_ok() {
        r.finish();
    }
    let zone = r.zone.clone();
    (r.out, zone)
}

impl<'t> Reader<'t> {
    fn location(&self, line: usize, at: usize) -> String {
        format!("{}:{line}:{}", self.label, column(self.text, at))
    }

    fn error(&self, record: String, line: usize, at: usize, message: String) -> SourceError {
        SourceError {
            source: SOURCE_KIND.into(),
            location: self.location(line, at),
            record,
            message,
        }
    }

    fn fatal(&mut self, at: Option<(usize, usize)>, message: String) {
        let location = match at {
            Some((line, at)) => self.location(line, at),
            None => self.label.to_string(),
        };
        self.out.fatal.push(self.out.errors.len());
        self.out.errors.push(SourceError {
            source: SOURCE_KIND.into(),
            location,
            record: String::new(),
            message,
        });
    }

    fn read(&mut self) -> Result<(), Fatal> {
        let mut lexer = Lexer::new(self.text);
        let mut tokens: Vec<Token<'t>> = Vec::new();
        loop {
            let entry = match lexer.next_entry(&mut tokens) {
                Ok(Some(entry)) => entry,
                Ok(None) => return Ok(()),
                Err(e) => {
                    self.fatal(Some((e.line, e.at)), e.message);
                    return Err(Fatal);
                }
            };
            self.out.endpoint_documents = 1;
            if !entry.blank_owner && tokens[0].raw.starts_with('$') {
                self.directive(&tokens)?;
            } else {
                self.record(entry.blank_owner, entry.line, &tokens)?;
            }
        }
    }

    fn directive(&mut self, tokens: &[Token<'t>]) -> Result<(), Fatal> {
        let d = tokens[0];
        fn fail<T>(r: &mut Reader<'_>, t: &Token<'_>, message: String) -> Result<T, Fatal> {
            r.fatal(Some((t.line, t.at)), message);
            Err(Fatal)
        }
        let upper = d.raw.to_ascii_uppercase();
        let one_argument = |r: &mut Self| -> Result<Token<'t>, Fatal> {
            match tokens {
                [_, arg] => Ok(*arg),
                [_] => fail(r, &d, format!("{upper} needs a value")),
                [_, _, extra, ..] => fail(
                    r,
                    extra,
                    format!(
                        "{upper} takes one value; {:?} follows it",
                        excerpt(extra.raw)
                    ),
                ),
                [] => Err(Fatal),
            }
        };
        match upper.as_str() {
            "$ORIGIN" => {
                let arg = one_argument(self)?;
                match fields::name(arg.raw, self.origin.as_ref()) {
                    Ok(n) => self.origin = Some(n),
                    Err(NameError::NoOrigin) => {
                        return fail(
                            self,
                            &arg,
                            format!(
                                "$ORIGIN {:?} is relative, and there is no origin before it to complete it",
                                excerpt(arg.raw)
                            ),
                        );
                    }
                    Err(NameError::Bad(m)) => return fail(self, &arg, format!("$ORIGIN: {m}")),
                }
            }
            "$TTL" => {
                let arg = one_argument(self)?;
                match fields::ttl(arg.raw) {
                    Some(Ok(t)) if t <= MAX_TTL => self.default_ttl = Some(t),
                    Some(Ok(t)) => {
                        return fail(
                            self,
                            &arg,
                            format!("$TTL {t} is above the maximum of {MAX_TTL} seconds"),
                        );
                    }
                    Some(Err(m)) => return fail(self, &arg, m),
                    None => {
                        return fail(
                            self,
                            &arg,
                            format!(
                                "$TTL {:?} is not a TTL (seconds, or units such as 1h30m)",
                                excerpt(arg.raw)
                            ),
                        );
                    }
                }
            }
            "$INCLUDE" => {
                return fail(
                    self,
                    &d,
                    "$INCLUDE is not supported: a zone file is read alone; put the included records in the file, or give the other file as a source of its own".into(),
                );
            }
            "$GENERATE" => {
                return fail(
                    self,
                    &d,
                    "$GENERATE is not supported: write the records it would generate".into(),
                );
            }
            _ => {
                return fail(
                    self,
                    &d,
                    format!(
                        "unknown directive {:?} (dnsplane reads $ORIGIN and $TTL)",
                        excerpt(d.raw)
                    ),
                );
            }
        }
        Ok(())
    }

    fn record(&mut self, blank: bool, line: usize, tokens: &[Token<'t>]) -> Result<(), Fatal> {
        let mut rest = tokens;
        let owner = if blank {
            match self.owner.clone() {
                Some(o) => o,
                None => {
                    self.fatal(
                        Some((line, tokens[0].at)),
                        "the first record has no owner name (the line starts with white space)"
                            .into(),
                    );
                    return Err(Fatal);
                }
            }
        } else {
            let t = tokens[0];
            rest = &tokens[1..];
            let owner = match fields::name(t.raw, self.origin.as_ref()) {
                Ok(n) => n,
                Err(NameError::NoOrigin) => {
                    self.fatal(
                        Some((t.line, t.at)),
                        format!(
                            "{:?} is a relative name, and there is no $ORIGIN or zone to complete it",
                            excerpt(t.raw)
                        ),
                    );
                    return Err(Fatal);
                }
                Err(NameError::Bad(m)) => {
                    self.fatal(Some((t.line, t.at)), format!("owner name: {m}"));
                    return Err(Fatal);
                }
            };
            self.new_owner(t.raw, &owner);
            owner
        };
        // [TTL] [class] type, TTL and class in either order.
        let mut ttl = None;
        let mut other_class = None;
        let mut kind = None;
        while let Some((t, after)) = rest.split_first() {
            rest = after;
            if ttl.is_none()
                && let Some(parsed) = fields::ttl(t.raw)
            {
                match parsed {
                    Ok(v) => ttl = Some((v, *t)),
                    Err(m) => {
                        self.fatal(Some((t.line, t.at)), m);
                        return Err(Fatal);
                    }
                }
                continue;
            }
            if let Some(is_in) = fields::class(t.raw) {
                if !is_in {
                    other_class = Some(*t);
                }
                continue;
            }
            match fields::kind(t.raw) {
                Some(k) => {
                    kind = Some((k, *t));
                    break;
                }
                None => {
                    let message = if t.raw.as_bytes()[0].is_ascii_digit() {
                        format!(
                            "{:?} is neither a TTL (seconds, or units such as 1h30m) nor a record type",
                            excerpt(t.raw)
                        )
                    } else {
                        format!("unknown record type {:?}", excerpt(t.raw))
                    };
                    self.fatal(Some((t.line, t.at)), message);
                    return Err(Fatal);
                }
            }
        }
        let Some((kind, type_token)) = kind else {
            let last = tokens[tokens.len() - 1];
            self.fatal(
                Some((last.line, last.at + last.raw.len())),
                "the record has no type".into(),
            );
            return Err(Fatal);
        };
        if !self.zone_decided {
            self.zone_decided = true;
            self.zone = self.origin.clone().or_else(|| match kind {
                Kind::Soa => Some(owner.clone()),
                _ => None,
            });
        }
        let data = rest;
        let data_at = type_token.at + type_token.raw.len();
        match kind {
            Kind::Unmodelled => {
                let warning = self.error(
                    format!("{owner} {}", type_token.raw.to_ascii_uppercase()),
                    line,
                    type_token.at,
                    format!(
                        "type {} is not one dnsplane manages: the record is skipped",
                        type_token.raw.to_ascii_uppercase()
                    ),
                );
                self.out.warnings.push(warning);
                // Its TTL still counts as the last one given, as for BIND.
                if let Some((v, _)) = ttl {
                    self.last_ttl = Some(v);
                }
                Ok(())
            }
            Kind::Soa => self.soa(&owner, line, ttl, data, data_at),
            Kind::Generic(rtype) | Kind::Modelled(rtype) => {
                // Only built for an error: a million-record file has few.
                let record = || format!("{owner} {rtype}");
                let mut problems = Vec::new();
                if let Some(t) = other_class {
                    problems.push(self.error(
                        record(),
                        t.line,
                        t.at,
                        format!("class {} is not IN, the zone's class", t.raw),
                    ));
                }
                if let Kind::Generic(_) = kind {
                    problems.push(self.error(
                        record(),
                        type_token.line,
                        type_token.at,
                        format!(
                            "{} is the generic name of {rtype}: write {rtype} and its data in its own form",
                            type_token.raw
                        ),
                    ));
                }
                let ttl = self.ttl_of(ttl, &record, line, type_token.at, &mut problems);
                let apex = self.zone.as_ref().is_some_and(|z| *z == owner);
                if let Some(zone) = &self.zone
                    && !owner.is_within(zone)
                {
                    problems.push(self.error(
                        record(),
                        line,
                        tokens[0].at,
                        format!("{owner} is outside the zone {zone}"),
                    ));
                }
                if apex && rtype == RecordType::Ds {
                    problems.push(self.error(
                        record(),
                        line,
                        type_token.at,
                        "a DS record at the zone's apex belongs in the parent zone (BIND refuses it too)"
                            .into(),
                    ));
                }
                let value = if problems.is_empty() {
                    let end = (type_token.line, data_at);
                    match fields::value(rtype, data, end, self.origin.as_ref()) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            self.field_error(&record(), e, &mut problems)?;
                            None
                        }
                    }
                } else {
                    None
                };
                if apex && rtype == RecordType::Ns {
                    // The provider's: checked, never an entry.
                    self.out.errors.extend(problems);
                    return Ok(());
                }
                self.add(owner, rtype, line, ttl, value, problems);
                Ok(())
            }
        }
    }

    /// Notes an explicit owner: a new run of lines unless it is written as the last.
    fn new_owner(&mut self, raw: &str, owner: &Name) {
        let written = if raw == "@" || raw.ends_with('.') {
            raw.to_string()
        } else {
            format!("{raw}.{}", self.origin.as_ref().map_or("", |o| o.as_str()))
        };
        if self.owner.as_ref() != Some(owner) || written != self.owner_written {
            self.run += 1;
        }
        self.owner_written = written;
        self.owner = Some(owner.clone());
    }

    /// A record's TTL as BIND reads it (see the module docs).
    fn ttl_of(
        &mut self,
        given: Option<(u32, Token<'_>)>,
        record: &dyn Fn() -> String,
        line: usize,
        at: usize,
        problems: &mut Vec<SourceError>,
    ) -> Option<u32> {
        let ttl = match given {
            Some((v, _)) => {
                self.last_ttl = Some(v);
                Some(v)
            }
            None => self.default_ttl.or(self.last_ttl),
        };
        match (ttl, given) {
            (None, _) => problems.push(self.error(
                record(),
                line,
                at,
                "no TTL: give one on the record, or a $TTL before it".into(),
            )),
            (Some(t), Some((_, token))) if t > MAX_TTL => problems.push(self.error(
                record(),
                token.line,
                token.at,
                format!("TTL {t} is above the maximum of {MAX_TTL} seconds"),
            )),
            _ => {}
        }
        ttl
    }

    fn field_error(
        &mut self,
        record: &str,
        e: FieldError,
        problems: &mut Vec<SourceError>,
    ) -> Result<(), Fatal> {
        if e.no_origin {
            self.fatal(Some((e.line, e.at)), e.message);
            return Err(Fatal);
        }
        problems.push(self.error(record.to_string(), e.line, e.at, e.message));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
