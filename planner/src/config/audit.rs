//! `[audit]`: the append-only JSONL audit file (docs/observability.md).
use serde::Deserialize;
use std::path::PathBuf;

/// `[audit]`: where audit events are kept besides the log, and how it rotates.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The JSONL file, relative to the config file; its directory must exist and be
    /// writable (checked at startup). `dnsplane history` reads it.
    pub file: PathBuf,
    /// The file is rotated when the next events would take it past this size.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// Rotated files kept (`file.1` … `file.<keep>`); 0 keeps none.
    #[serde(default = "default_keep")]
    pub keep: usize,
}

fn default_max_bytes() -> u64 {
    64 << 20
}

fn default_keep() -> usize {
    5
}

impl AuditConfig {
    /// The checks serde cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_bytes == 0 {
            return Err("audit.max_bytes must be more than 0".into());
        }
        if self.keep > 1000 {
            return Err(format!("audit.keep is {}; at most 1000", self.keep));
        }
        if self.file.as_os_str().is_empty() {
            return Err("audit.file must name a file".into());
        }
        Ok(())
    }
}
