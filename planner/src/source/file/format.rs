//! Which format a file of the file source is in, and which files a directory walk
//! reads (`[[sources]] type = "file"`, `format = "…"`).
//!
//! - `dnsendpoint`: external-dns `DNSEndpoint` manifests (`*.yaml`, `*.yml`);
//! - `zone`: RFC 1035 zone files ([`crate::source::zonefile`]); in a directory every
//!   file is one (`example.com.zone`, `db.example.com`, octodns-bind's
//!   `example.com.`); its zone is its `$ORIGIN`, else its file name without a
//!   `.zone` or `.db` extension;
//! - `octodns`: octoDNS YAML zone files ([`crate::source::octodns`]), one per zone,
//!   named as octoDNS names them: `example.com.yaml` holds zone `example.com.`;
//! - `auto` (the default): by extension, `*.zone` a zone file and `*.yaml`/`*.yml` a
//!   DNSEndpoint manifest; octoDNS's YAML is only read when asked for, as a
//!   manifest that lost its `kind` must never be read as a zone of records.
use super::super::dnsendpoint::{MAX_MANIFEST_BYTES, ParsedFile, file_error, parse_file};
pub use crate::config::FileFormat;
use dnsplane_common::Name;
use std::path::Path;

impl FileFormat {
    /// The config and flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FileFormat::Auto => "auto",
            FileFormat::Dnsendpoint => "dnsendpoint",
            FileFormat::Zone => "zone",
            FileFormat::Octodns => "octodns",
        }
    }

    /// The format of the file at `path` (a format other than `auto` is every file's).
    pub fn of(self, path: &Path) -> FileFormat {
        match self {
            FileFormat::Auto if has_extension(path, &["zone"]) => FileFormat::Zone,
            FileFormat::Auto => FileFormat::Dnsendpoint,
            other => other,
        }
    }

    /// Whether a directory walk reads the file at `path`.
    pub fn reads(self, path: &Path) -> bool {
        match self {
            FileFormat::Auto => has_extension(path, &["yaml", "yml", "zone"]),
            FileFormat::Dnsendpoint | FileFormat::Octodns => has_extension(path, &["yaml", "yml"]),
            FileFormat::Zone => true,
        }
    }

    /// The largest file of this format read: a zone file is read line by line, and a
    /// large zone is one file; YAML is loaded whole.
    pub fn max_bytes(self) -> usize {
        match self {
            FileFormat::Zone => crate::source::zonefile::MAX_ZONE_FILE_BYTES,
            FileFormat::Octodns => crate::source::octodns::MAX_OCTODNS_BYTES,
            _ => MAX_MANIFEST_BYTES,
        }
    }

    /// How a file of this format says "no records" explicitly.
    pub fn explicit_empty(self) -> &'static str {
        match self {
            FileFormat::Auto | FileFormat::Dnsendpoint => "write `endpoints: []`",
            FileFormat::Zone => "leave only its SOA record",
            FileFormat::Octodns => "write `{}`",
        }
    }

    /// What a file of this format declares records in.
    pub fn document(self) -> &'static str {
        match self {
            FileFormat::Auto | FileFormat::Dnsendpoint => "DNSEndpoint document",
            FileFormat::Zone => "record or directive",
            FileFormat::Octodns => "mapping of records",
        }
    }

    /// What a directory that holds no file of this format is said to match none of.
    pub fn pattern(self) -> &'static str {
        match self {
            FileFormat::Auto => "*.yaml, *.yml, *.zone",
            FileFormat::Dnsendpoint | FileFormat::Octodns => "*.yaml, *.yml",
            FileFormat::Zone => "a zone file",
        }
    }
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// The zone a file is named for: its name without `strip` extensions and a trailing
/// dot (`example.com.zone`, `example.com.yaml`, `example.com.`), or `None` when that
/// is not a name.
fn zone_of_file(path: &Path, strip: &[&str]) -> Option<Name> {
    let file = path.file_name()?.to_str()?;
    let stem = strip
        .iter()
        .find_map(|x| {
            let (stem, ext) = file.rsplit_once('.')?;
            ext.eq_ignore_ascii_case(x).then_some(stem)
        })
        .unwrap_or(file);
    let stem = stem.strip_prefix("db.").unwrap_or(stem);
    Name::parse(stem).ok()
}

/// Parses `text` (the file at `path`, `label` in locations) in `format`.
pub(crate) fn parse(format: FileFormat, label: &str, text: &str, path: &Path) -> ParsedFile {
    match format {
        FileFormat::Auto | FileFormat::Dnsendpoint => parse_file(label, text),
        FileFormat::Zone => {
            let origin = zone_of_file(path, &["zone", "db"]);
            crate::source::zonefile::parse_file(label, text, origin.as_ref())
        }
        FileFormat::Octodns => match zone_of_file(path, &["yaml", "yml"]) {
            Some(zone) => crate::source::octodns::parse_file(label, text, &zone),
            None => {
                let mut out = ParsedFile::default();
                out.fatal.push(0);
                out.errors.push(file_error(
                    label,
                    None,
                    "an octoDNS zone file is named for its zone (`example.com.yaml`); this name is not a zone".into(),
                ));
                out
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_tells_zone_files_by_their_extension_and_never_reads_yaml_as_octodns() {
        assert_eq!(
            FileFormat::Auto.of(Path::new("a/example.com.zone")),
            FileFormat::Zone
        );
        assert_eq!(
            FileFormat::Auto.of(Path::new("a/web.yaml")),
            FileFormat::Dnsendpoint
        );
        assert_eq!(
            FileFormat::Octodns.of(Path::new("a/web.yaml")),
            FileFormat::Octodns
        );
        assert!(FileFormat::Auto.reads(Path::new("x.ZONE")));
        assert!(!FileFormat::Auto.reads(Path::new("README.md")));
        assert!(FileFormat::Zone.reads(Path::new("unit.tests.")));
    }

    #[test]
    fn a_file_is_named_for_its_zone() {
        let zone = |p: &str, x: &[&str]| zone_of_file(Path::new(p), x).map(|n| n.to_string());
        assert_eq!(
            zone("d/example.com.zone", &["zone", "db"]).as_deref(),
            Some("example.com.")
        );
        assert_eq!(
            zone("d/db.example.com", &["zone", "db"]).as_deref(),
            Some("example.com.")
        );
        assert_eq!(
            zone("d/unit.tests.", &["zone", "db"]).as_deref(),
            Some("unit.tests.")
        );
        assert_eq!(
            zone("d/example.com.yaml", &["yaml", "yml"]).as_deref(),
            Some("example.com.")
        );
    }
}
