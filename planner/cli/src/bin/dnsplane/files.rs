//! Desired state in files, for `import`, `export` and `plan --desired`: reading a file
//! or directory exactly as the planner's file source reads it (same parsers, same
//! limits, same errors with file and line), and writing records in each format.
use dnsplane_common::{Name, RRSet, pb};
use dnsplane_planner::source::{DesiredEntry, FileFormat, FileSource, Labels, Origin};
use std::path::Path;
use std::sync::Arc;

/// `--format` of the commands that read or write files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// By extension: `*.zone` a zone file, `*.yaml`/`*.yml` a DNSEndpoint manifest.
    #[default]
    Auto,
    /// external-dns DNSEndpoint manifests.
    Dnsendpoint,
    /// RFC 1035 zone files.
    Zone,
    /// octoDNS YAML zone files (`example.com.yaml`).
    Octodns,
}

impl From<FormatArg> for FileFormat {
    fn from(f: FormatArg) -> FileFormat {
        match f {
            FormatArg::Auto => FileFormat::Auto,
            FormatArg::Dnsendpoint => FileFormat::Dnsendpoint,
            FormatArg::Zone => FileFormat::Zone,
            FormatArg::Octodns => FileFormat::Octodns,
        }
    }
}

/// `--format` of `import` and `export`: what to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum WriteFormat {
    /// external-dns DNSEndpoint manifests.
    #[default]
    Dnsendpoint,
    /// An RFC 1035 zone file.
    Zone,
    /// An octoDNS YAML zone file.
    Octodns,
}

/// Reads `path` (a file or directory) as the planner's file source would: every
/// problem is an error naming its file and line, and any problem refuses the whole
/// state (a plan of half a state would show deletions that nobody asked for).
pub fn load(path: &Path, format: FormatArg) -> anyhow::Result<Vec<DesiredEntry>> {
    let mut source = FileSource::new([path]).with_format(format.into());
    source.preflight().map_err(|why| anyhow::anyhow!("{why}"))?;
    let snapshot = source.load()?;
    if !snapshot.errors.is_empty() {
        let mut text = format!(
            "{} problem(s) in {}; nothing planned:",
            snapshot.errors.len(),
            path.display()
        );
        for e in &snapshot.errors {
            text.push_str(&format!("\n  {e}"));
        }
        anyhow::bail!(text);
    }
    Ok(snapshot.entries)
}

/// An entry as the gRPC record of a proposed or pushed desired state.
pub fn to_pb(e: &DesiredEntry) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: e.name.to_string(),
        r#type: e.rtype.as_str().to_string(),
        ttl: e.ttl.unwrap_or(0),
        values: e.values.clone(),
        set_identifier: e.set.as_str().to_string(),
        provider_specific: e
            .properties
            .iter()
            .map(|(name, value)| pb::Property {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        labels: e
            .labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// A record read from the planner, as an entry to write.
pub fn from_rrset(r: &RRSet, origin: &Origin) -> DesiredEntry {
    DesiredEntry {
        name: r.key.name.clone(),
        rtype: r.key.rtype,
        ttl: Some(r.ttl),
        values: r.values_vec(),
        set: r.key.set,
        properties: r.properties_vec(),
        labels: Labels::NONE,
        origin: origin.clone(),
    }
}

/// The origin written into entries read from the planner (never shown).
pub fn planner_origin(zone: &Name) -> Origin {
    let text: Arc<str> = zone.to_string().into();
    Origin {
        source: "planner".into(),
        location: text.clone(),
        resource: text,
    }
}

/// A file to write: its name in the output directory and its text.
pub struct OutFile {
    pub name: String,
    pub text: String,
    pub records: usize,
}

/// What writing a zone's entries gave: the files, and the entries the format cannot
/// hold (a routing-policy set, provider properties), each with why.
pub struct Written {
    pub files: Vec<OutFile>,
    pub skipped: Vec<(DesiredEntry, String)>,
}

/// `entries` of `zone` (sorted by the caller) in `format`, at most `per_file` records
/// a file (octoDNS reads one file per zone: it is never split).
pub fn write(
    format: WriteFormat,
    zone: &Name,
    entries: &[DesiredEntry],
    per_file: usize,
    apex_ns: &[String],
) -> anyhow::Result<Written> {
    let base = zone.as_str().trim_end_matches('.');
    let slug = base.replace('.', "-");
    let per_file = per_file.max(1);
    let mut skipped = Vec::new();
    let files = match format {
        WriteFormat::Dnsendpoint => {
            let chunks: Vec<&[DesiredEntry]> = if entries.is_empty() {
                vec![&[][..]]
            } else {
                entries.chunks(per_file).collect()
            };
            chunks
                .iter()
                .enumerate()
                .map(|(i, chunk)| {
                    let name = format!("{slug}-{:04}", i + 1);
                    OutFile {
                        name: format!("{name}.yaml"),
                        text: dnsplane_planner::source::dnsendpoint::write::write(
                            &name, "default", chunk,
                        ),
                        records: chunk.len(),
                    }
                })
                .collect()
        }
        WriteFormat::Zone => {
            let written = dnsplane_planner::source::zonefile::write(zone, entries, apex_ns);
            skipped.extend(
                written
                    .skipped
                    .into_iter()
                    .map(|(e, why)| (e.clone(), why.to_string())),
            );
            vec![OutFile {
                name: format!("{base}.zone"),
                records: entries.len() - skipped.len(),
                text: written.text,
            }]
        }
        WriteFormat::Octodns => {
            let (text, left) = dnsplane_planner::source::octodns::write(zone, entries);
            skipped.extend(
                left.into_iter()
                    .map(|e| (e.clone(), not_in_format(e, "octoDNS YAML"))),
            );
            vec![OutFile {
                name: format!("{base}.yaml"),
                records: entries.len() - skipped.len(),
                text,
            }]
        }
    };
    Ok(Written { files, skipped })
}

fn not_in_format(e: &DesiredEntry, format: &str) -> String {
    if !e.set.is_none() {
        format!(
            "a routing-policy set ({:?}) cannot be written in {format}",
            e.set.as_str()
        )
    } else if !e.properties.is_empty() {
        format!("provider-specific properties cannot be written in {format}")
    } else {
        format!(
            "{format} cannot hold its values exactly (a TXT value split otherwise than into 255-octet strings, or not ASCII)"
        )
    }
}
