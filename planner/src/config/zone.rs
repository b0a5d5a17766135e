//! `[[zones]]`: a zone, its policies and, for a takeover, external-dns's registry.
use dnsplane_common::Name;
use serde::Deserialize;
use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What the planner may do in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Create, update and delete owned records.
    Sync,
    /// Create and update; never delete.
    UpsertOnly,
    /// Create only; never update or delete.
    CreateOnly,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Sync => "sync",
            Policy::UpsertOnly => "upsert-only",
            Policy::CreateOnly => "create-only",
        }
    }
}

/// What to do with an existing record that nobody owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictPolicy {
    /// Leave it alone and report it as a conflict.
    #[default]
    Report,
    /// Take ownership when it already equals the desired record; report otherwise.
    Adopt,
}

/// What becomes of a record set that several sources want with other values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Merge {
    /// The first source's claim holds; the others are shadowed, each a source error.
    #[default]
    None,
    /// For A, AAAA, TXT, MX, SRV and CAA: the set is the union of every source's
    /// values, at the lowest of their TTLs (issue 33). Other types as `none`.
    Union,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneConfig {
    /// Absolute zone name, e.g. `example.com.`.
    pub name: Name,
    /// Provider account (a name in the applier's config) hosting the zone: the
    /// one-target form of `accounts`. In a target ([`crate::config::PlannerConfig::targets`])
    /// it is the target's account.
    #[serde(default)]
    pub account: String,
    /// Several accounts serving the zone at once: one target per account, each read,
    /// planned and reported on its own (exclusive with `account`).
    #[serde(default)]
    pub accounts: Vec<String>,
    /// The view these targets serve (split horizon: `"public"`, `"internal"`): they
    /// get the records fed to every view, and those fed to this one (a source's
    /// `views`, a record's `dnsplane.io/view` label). None: every-view records only.
    #[serde(default)]
    pub view: Option<String>,
    #[serde(default = "default_policy")]
    pub policy: Policy,
    #[serde(default)]
    pub conflict: ConflictPolicy,
    /// TTL for desired records that give none.
    #[serde(default = "default_ttl")]
    pub default_ttl: u32,
    /// `[zones.external_dns]`: take over the records one external-dns owner id owns
    /// through external-dns's TXT registry (read by `external_dns.rs`).
    #[serde(default)]
    pub external_dns: Option<ExternalDnsConfig>,
    /// `merge`: several sources wanting one record set ([`Merge`]).
    #[serde(default)]
    pub merge: Merge,
}

impl ZoneConfig {
    /// The accounts serving the zone: `accounts`, else `account`.
    pub fn account_names(&self) -> Vec<&str> {
        if self.accounts.is_empty() {
            vec![self.account.as_str()]
        } else {
            self.accounts.iter().map(String::as_str).collect()
        }
    }

    /// A zone as a `[[zones]]` entry naming only `name` and `account` gives: policy
    /// `sync`, conflicts reported, default TTL 300, no external-dns takeover, no merge (for
    /// programs and tests that build a config in code; override fields with
    /// `ZoneConfig { default_ttl: 60, ..ZoneConfig::new(name, account) }`).
    pub fn new(name: Name, account: impl Into<String>) -> ZoneConfig {
        ZoneConfig {
            name,
            account: account.into(),
            accounts: Vec::new(),
            view: None,
            policy: default_policy(),
            conflict: ConflictPolicy::default(),
            default_ttl: default_ttl(),
            external_dns: None,
            merge: Merge::None,
        }
    }
}

/// How external-dns named and marked its TXT registry in this zone: the flags it ran
/// with (`--txt-owner-id`, `--txt-prefix`, `--txt-suffix`,
/// `--txt-wildcard-replacement`), so that its records are recognised exactly.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExternalDnsConfig {
    /// The `--txt-owner-id` whose records dnsplane takes; other owners' stay theirs.
    pub owner_id: String,
    #[serde(default)]
    pub txt_prefix: String,
    #[serde(default)]
    pub txt_suffix: String,
    #[serde(default)]
    pub wildcard_replacement: String,
    /// `--txt-encrypt-aes-key`, kept in a file (read when the config is validated):
    /// marks are then read encrypted or plain, as external-dns reads them
    /// (`external_dns.rs`).
    #[serde(default)]
    pub aes_key_file: Option<AesKeyFile>,
}

impl ExternalDnsConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.owner_id.is_empty() {
            return Err("owner_id is empty".into());
        }
        if !self.txt_prefix.is_empty() && !self.txt_suffix.is_empty() {
            return Err("txt_prefix and txt_suffix are exclusive, as in external-dns".into());
        }
        if let Some(f) = &self.aes_key_file {
            f.key().map_err(|e| format!("aes_key_file: {e}"))?;
        }
        Ok(())
    }
}

/// `aes_key_file`: the file holding external-dns's `--txt-encrypt-aes-key`, and the key
/// read from it. The file is read once, when the config is validated (a config built
/// in code and never validated reads it when the key is first needed).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "PathBuf")]
pub struct AesKeyFile {
    /// Relative to the config file's directory once loaded by `PlannerConfig::load`.
    pub path: PathBuf,
    key: OnceLock<Result<AesKey, String>>,
}

impl From<PathBuf> for AesKeyFile {
    fn from(path: PathBuf) -> AesKeyFile {
        AesKeyFile::new(path)
    }
}

/// A key file larger than this is not a key (and a device is not read forever).
const KEY_FILE_MAX: u64 = 1024;

impl AesKeyFile {
    pub fn new(path: impl Into<PathBuf>) -> AesKeyFile {
        AesKeyFile {
            path: path.into(),
            key: OnceLock::new(),
        }
    }

    /// A key file already read, key `seed` (for tests, which need no file).
    #[cfg(test)]
    pub(crate) fn test_key(seed: u8) -> AesKeyFile {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(seed) ^ seed);
        AesKeyFile {
            path: "<test key>".into(),
            key: OnceLock::from(Ok(AesKey(bytes))),
        }
    }

    /// The key, read from the file on first use; the error names the file.
    pub fn key(&self) -> Result<&AesKey, &str> {
        self.key
            .get_or_init(|| {
                let shown = self.path.display();
                let mut content = Vec::new();
                std::fs::File::open(&self.path)
                    .and_then(|f| f.take(KEY_FILE_MAX + 1).read_to_end(&mut content))
                    .map_err(|e| format!("{shown}: cannot read: {e}"))?;
                AesKey::parse(&content).map_err(|e| format!("{shown}: {e}"))
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// An AES-256 key (external-dns's `--txt-encrypt-aes-key`). Never shown: its `Debug`
/// prints `<redacted>`, and no error repeats it.
#[derive(Clone, PartialEq, Eq)]
pub struct AesKey([u8; 32]);

impl std::fmt::Debug for AesKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl AesKey {
    /// The key as external-dns takes its flag: 32 bytes as they are, else standard
    /// base64 (padded) of 32 bytes; from a file, surrounding whitespace (the newline an
    /// editor or `echo` adds) is trimmed first, unless the file is exactly 32 bytes.
    pub fn parse(content: &[u8]) -> Result<AesKey, String> {
        use base64::Engine as _;
        if let Ok(key) = <[u8; 32]>::try_from(content) {
            return Ok(AesKey(key));
        }
        let trimmed = content.trim_ascii();
        if let Ok(key) = <[u8; 32]>::try_from(trimmed) {
            return Ok(AesKey(key));
        }
        let decoded = base64::engine::general_purpose::STANDARD.decode(trimmed);
        if let Some(key) = decoded
            .as_deref()
            .ok()
            .and_then(|d| <[u8; 32]>::try_from(d).ok())
        {
            return Ok(AesKey(key));
        }
        let got = if content.len() as u64 > KEY_FILE_MAX {
            format!("more than {KEY_FILE_MAX} bytes")
        } else {
            match decoded {
                Ok(d) => format!("{} bytes (base64 of {})", trimmed.len(), d.len()),
                Err(_) => format!("{} bytes", trimmed.len()),
            }
        };
        Err(format!(
            "key must be 32 bytes, or base64 of 32 bytes; got {got}"
        ))
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

fn default_policy() -> Policy {
    Policy::Sync
}
fn default_ttl() -> u32 {
    300
}
