//! How a command prints: a table for people, JSON or YAML for scripts (`-o`), colour
//! only on a terminal and never under `NO_COLOR` (<https://no-color.org>). Every read
//! command (and `history`, later) builds one serialisable document and hands it here;
//! the JSON contract is docs/cli.md and the schemas under docs/cli/.
use comfy_table::{Cell, Color, ContentArrangement, Table, presets};
use serde::Serialize;
use std::io::IsTerminal;
use std::time::{Duration, SystemTime};

/// `--output`: what the command prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables and lines for people.
    #[default]
    Table,
    /// One JSON document (docs/cli.md).
    Json,
    /// The same document as YAML.
    Yaml,
    /// A pull-request comment (`plan` only): counts, the guard's verdict, a table per
    /// zone.
    Markdown,
}

/// The `-o/--output` flag every read command takes.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct OutputArgs {
    /// Print a table (people), or one JSON or YAML document (scripts; docs/cli.md).
    #[arg(short = 'o', long = "output", value_enum, default_value_t)]
    pub output: Format,
}

/// Colours a table cell or a line stands for.
#[derive(Clone, Copy, Debug)]
pub enum Tone {
    Good,
    Warn,
    Bad,
}

/// Where a command's output goes and how it looks.
#[derive(Clone, Copy, Debug)]
pub struct Output {
    pub format: Format,
    /// ANSI colour: stdout is a terminal and `NO_COLOR` is unset or empty.
    pub colour: bool,
}

impl Output {
    pub fn new(args: OutputArgs) -> Output {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Output {
            format: args.output,
            colour: !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// People's output: tables and lines.
    pub fn is_table(&self) -> bool {
        self.format == Format::Table
    }

    /// Prints the document as JSON or YAML (never called for a table).
    pub fn emit<T: Serialize>(&self, doc: &T) -> anyhow::Result<()> {
        let value = serde_json::to_value(doc)?;
        match self.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&value)?),
            Format::Yaml => print!("{}", to_yaml(&value)?),
            Format::Table => anyhow::bail!("a table has no document form"),
            Format::Markdown => anyhow::bail!("-o markdown is for `plan`; use json, yaml or table"),
        }
        Ok(())
    }

    /// A table with these column headers, drawn for a terminal or for a pipe.
    pub fn table(&self, header: &[&str]) -> Table {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        if self.colour {
            t.enforce_styling();
            // Wrap to the terminal's width, when it has a sensible one (a pty
            // without a size says 0).
            if t.width().is_some_and(|w| w >= 40) {
                t.set_content_arrangement(ContentArrangement::Dynamic);
            }
        } else {
            // No terminal width guessing and no escape codes: stable for pipes.
            t.force_no_tty();
            t.load_preset(presets::ASCII_MARKDOWN);
        }
        t.set_header(header.iter().map(Cell::new));
        t
    }

    /// A cell in a tone's colour (plain without colour).
    pub fn cell(&self, text: impl ToString, tone: Option<Tone>) -> Cell {
        let cell = Cell::new(text);
        match (self.colour, tone) {
            (true, Some(Tone::Good)) => cell.fg(Color::Green),
            (true, Some(Tone::Warn)) => cell.fg(Color::Yellow),
            (true, Some(Tone::Bad)) => cell.fg(Color::Red),
            _ => cell,
        }
    }

    /// A line's text in a tone's colour (plain without colour).
    pub fn paint(&self, text: &str, tone: Tone) -> String {
        if !self.colour {
            return text.to_string();
        }
        let code = match tone {
            Tone::Good => "32",
            Tone::Warn => "33",
            Tone::Bad => "31",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }
}

/// The tone of a record state or a planner level, for colour.
pub fn tone_of(state: &str) -> Option<Tone> {
    match state {
        "converged" | "healthy" | "leader" => Some(Tone::Good),
        "pending" | "in_flight" | "deferred" | "syncing" | "standby" => Some(Tone::Warn),
        "conflict" | "invalid" | "failed" | "rejected" | "held" | "degraded" | "failing" => {
            Some(Tone::Bad)
        }
        _ => None,
    }
}

/// A JSON value as a YAML document, through the emitter of the YAML parser the
/// sources already use (no second YAML crate).
pub fn to_yaml(value: &serde_json::Value) -> anyhow::Result<String> {
    let mut out = String::new();
    yaml_rust2::YamlEmitter::new(&mut out).dump(&yaml_of(value))?;
    // The emitter starts with `---` and ends without a newline.
    out.push('\n');
    Ok(out)
}

fn yaml_of(value: &serde_json::Value) -> yaml_rust2::Yaml {
    use yaml_rust2::Yaml;
    match value {
        serde_json::Value::Null => Yaml::Null,
        serde_json::Value::Bool(b) => Yaml::Boolean(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        serde_json::Value::String(s) => Yaml::String(s.clone()),
        serde_json::Value::Array(a) => Yaml::Array(a.iter().map(yaml_of).collect()),
        serde_json::Value::Object(o) => Yaml::Hash(
            o.iter()
                .map(|(k, v)| (Yaml::String(k.clone()), yaml_of(v)))
                .collect(),
        ),
    }
}

/// A protobuf timestamp as RFC 3339 (UTC, seconds), for documents and tables.
pub fn rfc3339(t: Option<dnsplane_common::wkt::Timestamp>) -> Option<String> {
    let t = SystemTime::try_from(t?).ok()?;
    Some(humantime::format_rfc3339_seconds(t).to_string())
}

/// Whole seconds from then to now (0 for the future).
pub fn age_seconds(t: Option<dnsplane_common::wkt::Timestamp>) -> Option<u64> {
    let t = SystemTime::try_from(t?).ok()?;
    Some(
        SystemTime::now()
            .duration_since(t)
            .unwrap_or_default()
            .as_secs(),
    )
}

/// Whole seconds from now to then (0 for the past).
pub fn in_seconds(t: Option<dnsplane_common::wkt::Timestamp>) -> Option<u64> {
    let t = SystemTime::try_from(t?).ok()?;
    Some(
        t.duration_since(SystemTime::now())
            .unwrap_or_default()
            .as_secs(),
    )
}

/// `12s`, `3m 4s`: a short duration for tables.
pub fn short(secs: u64) -> String {
    humantime::format_duration(Duration::from_secs(secs)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_carries_the_json_document() {
        let v = serde_json::json!({"a": [1, "x: y", null, true], "b": {"c": 2.5}, "d": ""});
        let text = to_yaml(&v).unwrap();
        let back = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
        assert_eq!(back[0], yaml_of(&v), "{text}");
        assert!(text.contains("\"x: y\""), "{text}");
    }

    #[test]
    fn no_colour_means_no_escape_codes() {
        let out = Output {
            format: Format::Table,
            colour: false,
        };
        let mut t = out.table(&["a"]);
        t.add_row(vec![out.cell("conflict", tone_of("conflict"))]);
        let text = t.to_string() + &out.paint("degraded", Tone::Bad);
        assert!(!text.contains('\x1b'), "{text}");
        let out = Output {
            colour: true,
            ..out
        };
        assert!(out.paint("degraded", Tone::Bad).contains('\x1b'));
    }
}
