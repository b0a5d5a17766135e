//! What starting an emulator from the command line can fail with.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// An emulator could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulateError {
    /// The config file is missing, unreadable or wrong; `message` names the field.
    #[error("config file {}: {message}", path.display())]
    Config { path: PathBuf, message: String },
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("emulator stopped: {0}")]
    Io(#[from] std::io::Error),
}

impl EmulateError {
    /// Whether the error is the operator's configuration (exit code 64 in a CLI).
    pub fn is_config(&self) -> bool {
        matches!(self, EmulateError::Config { .. })
    }
}

/// Reads an emulator's TOML config file and checks it with `validate`: every
/// emulator's `from_file`, so that problems name the file and the field alike.
pub(crate) fn options_from_file<O: serde::de::DeserializeOwned>(
    path: &Path,
    validate: impl FnOnce(&O) -> Result<(), String>,
) -> Result<O, EmulateError> {
    let err = |message: String| EmulateError::Config {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let opts: O = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    validate(&opts).map_err(err)?;
    Ok(opts)
}
