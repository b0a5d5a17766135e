//! Python scripts that drive an emulator with the provider's own SDK (`tests/sdk/`),
//! run by the venv's python that `tests/run-all.sh` builds (`$DNSPLANE_JSONSCHEMA_PYTHON`:
//! boto3, the AWS CLI, the Google and Cloudflare SDKs are installed beside jsonschema).
use std::path::{Path, PathBuf};

/// What a script printed, and whether it exited 0.
#[derive(Debug)]
pub struct ScriptRun {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// `tests/sdk/<name>`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk").join(name)
}

/// Runs `script` with `args` and `env` added (proxies and AWS profiles of the test's
/// own environment left out); `None` when the venv's python is missing (and skipping
/// is allowed).
pub fn run(script: &Path, env: &[(&str, &str)], args: &[&str]) -> Option<ScriptRun> {
    let python = crate::tool("DNSPLANE_JSONSCHEMA_PYTHON", "python3")?;
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .env_remove("AWS_PROFILE")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .envs(env.iter().copied())
        .output()
        .expect("run python");
    Some(ScriptRun {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
