//! A private `redis-server` for the quota tests and the scaling benchmark: loopback,
//! a random port, no persistence (`--save "" --appendonly no`), its own temp dir,
//! killed on drop. It can be stopped and started again on the same port, to play a
//! Redis outage.
//!
//! A missing `redis-server` makes [`Redis::start`] return `None` with a printed
//! reason, or panic under `DNSPLANE_REQUIRE_SERVERS=1` (as `tests/run-all.sh` sets
//! it, after installing the Debian package `redis-server`).
use crate::servers::find_binary;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long the server may take to answer PING after start.
const START_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug)]
pub struct Redis {
    pub port: u16,
    bin: PathBuf,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// More `redis-server` arguments (e.g. `--user` ACL rules).
    args: Vec<String>,
}

impl Redis {
    /// Starts a private instance; `None` only when skipping is allowed.
    pub fn start() -> Option<Redis> {
        Redis::start_with(&[])
    }

    /// [`Redis::start`] with more `redis-server` arguments, e.g. ACL rules
    /// (`--user quota on >password ~* &* +@all`) for a user that must authenticate;
    /// the default user stays open, for PING.
    pub fn start_with(args: &[&str]) -> Option<Redis> {
        let Some(bin) = find_binary("redis-server") else {
            let why = "Redis test server unavailable: redis-server not found on PATH or in /usr/sbin (Debian package redis-server); run tests/run-all.sh, which installs it";
            assert!(
                !crate::require_servers(),
                "{why} (DNSPLANE_REQUIRE_SERVERS=1)"
            );
            eprintln!("skipping: {why}");
            return None;
        };
        let mut r = Redis {
            port: crate::free_port(),
            bin,
            dir: tempfile::tempdir().expect("temp dir"),
            child: None,
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        r.spawn();
        Some(r)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("redis log");
        let child = Command::new(&self.bin)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.bin.display()));
        self.child = Some(child);
        let up = crate::wait_for(START_TIMEOUT, || self.ping().then_some(()));
        assert!(
            up.is_some(),
            "redis-server on :{} did not answer PING; log:\n{}",
            self.port,
            std::fs::read_to_string(self.log()).unwrap_or_default()
        );
    }

    /// `PING` → `+PONG`?
    pub fn ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    /// Kills the server (SIGKILL, as a crash or a network cut would look); the port
    /// stays this instance's for [`Redis::restart`].
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
