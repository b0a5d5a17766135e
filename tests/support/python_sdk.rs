//! Official provider SDKs (Python) driving dnsplane's emulators: a script of
//! `tests/sdk/` run in the venv `tests/run-all.sh` builds (`$DNSPLANE_SDK_PYTHON`),
//! against `dnsplane emulate …` started as its own process, as a user would run both.
//!
//! The scripts report every check on stdout and exit 1 when one failed; the test
//! asserts the exit status and shows the report.
use crate::{Proc, binary, free_port, tool, wait_for};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The venv's python, holding the SDKs; `None` means skip (panics under
/// `DNSPLANE_REQUIRE_SERVERS=1`).
pub fn python() -> Option<PathBuf> {
    tool("DNSPLANE_SDK_PYTHON", "dnsplane-sdk-python")
}

/// `tests/sdk/NAME`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk").join(name)
}

/// What a script did.
#[derive(Debug)]
pub struct ScriptRun {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl ScriptRun {
    /// Panics with the script's report unless it passed.
    pub fn assert_passed(&self, what: &str) {
        assert!(
            self.success,
            "{what} failed:\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        );
    }
}

/// Runs `python script ARGS…` with `env` added, bounded by `timeout` (killed after it).
pub fn run(
    python: &Path,
    script: &Path,
    env: &[(&str, String)],
    args: &[&str],
    timeout: Duration,
) -> ScriptRun {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        // The test's own environment must not steer the SDKs elsewhere.
        .env_remove("AWS_PROFILE")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
    let status = wait_for(timeout, || child.try_wait().ok().flatten());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let mut stderr = read(&err);
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {timeout:?})"));
    }
    ScriptRun {
        success: status.is_some_and(|s| s.success()),
        stdout: read(&out),
        stderr,
    }
}

/// `dnsplane emulate KIND --listen 127.0.0.1:PORT [--config FILE]`, running.
#[derive(Debug)]
pub struct Emulator {
    pub proc: Proc,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Emulator {
    /// Starts the emulator (`config`: the TOML file's text, if any) and waits until it
    /// listens.
    pub fn start(kind: &str, config: Option<&str>) -> Emulator {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec!["emulate", kind, "--listen", listen.as_str()];
        let config_path = dir.path().join(format!("{kind}.toml"));
        let config_arg = config_path.display().to_string();
        if let Some(text) = config {
            std::fs::write(&config_path, text).expect("write config");
            args.extend(["--config", config_arg.as_str()]);
        }
        let proc = Proc::spawn(
            &format!("dnsplane emulate {kind}"),
            &binary("dnsplane"),
            &args,
            dir.path().join("emulator.log"),
        );
        let up = wait_for(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(
            up.is_some(),
            "dnsplane emulate {kind} did not listen: {}",
            proc.log_text()
        );
        Emulator {
            proc,
            port,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}
