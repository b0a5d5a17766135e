//! Reading the files of one load: each file read and parsed in its format, on up to
//! [`LOAD_THREADS`] threads, what broke standing in with what it last had accepted
//! ([`super::Old`]), warnings logged and errors capped.
use super::Old;
use super::format::{self, FileFormat};
use super::merge::{merge, with_kept_note};
use super::scan::read_manifest;
use crate::source::SourceError;
use crate::source::dnsendpoint::{Accepted, ParsedFile, file_error};
use crate::store::StoreError;
use std::path::PathBuf;

/// What one file contributes: its entries and its errors.
type FileLoad = (Vec<Accepted>, Vec<SourceError>);

/// What each file contributes (in the order of `files`), read and parsed on up to
/// [`LOAD_THREADS`] threads: a source of many files is read at the speed of the
/// machine, not of one core.
pub(super) fn load_files(
    files: &[PathBuf],
    format: FileFormat,
    old: &Old<'_>,
    zones: Option<&crate::source::zones::ZoneCheck>,
) -> Vec<Result<FileLoad, StoreError>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(LOAD_THREADS)
        .min(files.len());
    if threads <= 1 {
        return files
            .iter()
            .map(|p| load_file(p, format, old, zones))
            .collect();
    }
    let per_thread = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = files
            .chunks(per_thread)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|p| load_file(p, format, old, zones))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// The most threads one load reads files on.
const LOAD_THREADS: usize = 4;

/// What the file at `path` contributes now: its entries (what it declares, with what
/// it last had standing in for what broke) and its errors.
fn load_file(
    path: &std::path::Path,
    format: FileFormat,
    old: &Old<'_>,
    zones: Option<&crate::source::zones::ZoneCheck>,
) -> Result<FileLoad, StoreError> {
    let label = path.display().to_string();
    let format = format.of(path);
    let text = read_manifest(path, format.max_bytes())
        .map_err(|e| (None, e))
        .and_then(|b| {
            String::from_utf8(b).map_err(|e| {
                let at = e.utf8_error().valid_up_to();
                let line = e.as_bytes()[..at].iter().filter(|&&c| c == b'\n').count() + 1;
                (Some(line), format!("not valid UTF-8: {}", e.utf8_error()))
            })
        });
    match text {
        Err((line, message)) => Ok((
            old.kept(path)?,
            vec![file_error(
                &label,
                line,
                with_kept_note(message, old.count(path)),
            )],
        )),
        Ok(text) => load_text(&label, &text, path, format, old, zones),
    }
}

/// The most warnings of one file logged at a load; the rest are counted.
const MAX_WARNINGS_LOGGED: usize = 10;

/// The most errors one file reports; the rest are counted. A hostile file of 100,000
/// broken endpoints must not make a status answer too large to be read.
pub(super) const MAX_ERRORS_PER_FILE: usize = 100;

/// What the text of one file (`label`, at `path`) contributes, given what it last
/// contributed (`old`, read back only when something in the file broke): its entries
/// (new ones, plus old ones standing for what broke) and errors.
fn load_text(
    label: &str,
    text: &str,
    path: &std::path::Path,
    format: FileFormat,
    old: &Old<'_>,
    zones: Option<&crate::source::zones::ZoneCheck>,
) -> Result<(Vec<Accepted>, Vec<SourceError>), StoreError> {
    let count = old.count(path);
    let kept = |message: String| -> Result<_, StoreError> {
        Ok((
            old.kept(path)?,
            vec![file_error(label, None, with_kept_note(message, count))],
        ))
    };
    if text.is_empty() {
        return kept(format!(
            "the file is empty (0 bytes); to remove its records, delete the file or {}",
            format.explicit_empty()
        ));
    }
    let mut parsed: ParsedFile = format::parse(format, label, text, path);
    // Logged at each load of the file (when it changed), the first few only.
    for w in parsed.warnings.iter().take(MAX_WARNINGS_LOGGED) {
        tracing::warn!(location = %w.location, record = %w.record, "file source: {}", w.message);
    }
    if parsed.warnings.len() > MAX_WARNINGS_LOGGED {
        tracing::warn!(
            file = label,
            more = parsed.warnings.len() - MAX_WARNINGS_LOGGED,
            "file source: more records not used in this file (see `dnsplane plan --desired`)"
        );
    }
    if !parsed.fatal.is_empty() {
        for &i in &parsed.fatal {
            let e = &mut parsed.errors[i];
            e.message = with_kept_note(std::mem::take(&mut e.message), count);
        }
        return Ok((old.kept(path)?, parsed.errors));
    }
    // A file that had records and now declares no DNSEndpoint at all was most likely
    // overwritten by something else: that is not how records are deleted.
    if parsed.endpoint_documents == 0 && count > 0 {
        let (entries, mut errors) = kept(format!(
            "no {} in the file; to remove its records, delete the file or {}",
            format.document(),
            format.explicit_empty()
        ))?;
        errors.append(&mut parsed.errors);
        return Ok((entries, errors));
    }
    if let Some(zones) = zones {
        zones.check_parsed(&mut parsed);
    }
    let before = if parsed.rejected.is_empty() {
        None
    } else {
        old.entries(path)?
    };
    let entries = merge(&mut parsed, before.as_ref());
    Ok((entries, parsed.errors))
}

/// Keeps the first [`MAX_ERRORS_PER_FILE`] errors of a file and counts the rest.
pub(super) fn cap_errors(label: &str, errors: &mut Vec<SourceError>) {
    if errors.len() > MAX_ERRORS_PER_FILE {
        let more = errors.len() - MAX_ERRORS_PER_FILE;
        errors.truncate(MAX_ERRORS_PER_FILE);
        errors.push(file_error(
            label,
            None,
            format!("{more} more error(s) in this file not shown"),
        ));
    }
}
