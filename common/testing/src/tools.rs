//! Tools, binaries, processes, ports and the real clients tests drive services with.
//!
//! Tools come from the environment that `tests/run-all.sh` sets up. Without
//! `DNSPLANE_REQUIRE_SERVERS=1` a test whose tool is missing prints why and skips;
//! with it, the test fails.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when missing tools must fail tests instead of skipping them.
pub fn require_servers() -> bool {
    std::env::var("DNSPLANE_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// Finds an external tool: `$env_var`, else `name` on PATH. `None` means skip (and
/// panics under `DNSPLANE_REQUIRE_SERVERS=1`).
pub fn tool(env_var: &str, name: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env_var)
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        assert!(
            !require_servers(),
            "{name} is required (DNSPLANE_REQUIRE_SERVERS=1) but neither ${env_var} nor PATH has it; run tests/run-all.sh"
        );
        eprintln!("skipping: {name} not found (set ${env_var} or run tests/run-all.sh)");
    }
    found
}

/// The directory holding the workspace's binaries (`target/debug`).
pub fn bin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DNSPLANE_BIN_DIR") {
        return PathBuf::from(d);
    }
    // The test binary lives in target/debug/deps.
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

/// The repository's root, whose docs, examples and sources tests read.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("common/testing sits two levels below the repository root")
        .to_path_buf()
}

/// A binary of the workspace; panics with the command to build it when missing.
pub fn binary(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (tests/run-all.sh does)",
        p.display()
    );
    p
}

/// A listener on a port of 127.0.0.1 the kernel picks, for a server a test starts
/// in-process (it reads its address from the listener).
pub async fn loopback() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0")
}

/// A free loopback port for a server a test starts, free for both TCP and UDP.
///
/// Picked below Linux's ephemeral range (32768–60999), from which every outgoing
/// connection of every test takes its source port: a port asked of the kernel with
/// `bind(0)` comes from that same range, and a client connecting in the window before
/// the server binds it made tests fail with "Address already in use". Ports handed
/// out are remembered, so two stacks in one test binary never get the same one.
pub fn free_port() -> u16 {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        ^ (u64::from(std::process::id()) << 32);
    let _ = STATE.compare_exchange(0, seed | 1, Ordering::Relaxed, Ordering::Relaxed);
    for _ in 0..10_000 {
        // xorshift64: good enough to spread ports, no dependency.
        let mut x = STATE.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        STATE.store(x, Ordering::Relaxed);
        let port = 20_000 + (x % 12_000) as u16;
        let mut handed = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
        if handed.contains(&port) {
            continue;
        }
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        if tcp.is_ok() && udp.is_ok() {
            handed.push(port);
            return port;
        }
    }
    panic!("no free loopback port in 20000-31999")
}

/// A child process that is killed when dropped; its stderr goes to a log file.
#[derive(Debug)]
pub struct Proc {
    pub name: String,
    pub child: Child,
    pub log: PathBuf,
}

impl Proc {
    /// Starts `bin ARGS…` logging `info,dnsplane=debug` into `log`.
    pub fn spawn(name: &str, bin: &Path, args: &[&str], log: PathBuf) -> Proc {
        Proc::spawn_with_env(name, bin, args, &[], log)
    }

    /// [`Proc::spawn`] with environment variables (`DNSPLANE_LOG` among them, or the
    /// default filter).
    pub fn spawn_with_env(
        name: &str,
        bin: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        log: PathBuf,
    ) -> Proc {
        let file = std::fs::File::create(&log).expect("log file");
        let child = Command::new(bin)
            .args(args)
            .env("DNSPLANE_LOG", "info,dnsplane=debug")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        Proc {
            name: name.to_string(),
            child,
            log,
        }
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (bounded) for a clean exit.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        None
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `f` every 100 ms until it returns `Some` or `timeout` passes. The timeouts are
/// generous safety nets against hangs, not performance claims.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs the real `dig` and returns the answer lines (`+short`).
pub fn dig(dig: &Path, port: u16, name: &str, rtype: &str, tcp: bool) -> Vec<String> {
    let mut cmd = Command::new(dig);
    cmd.args([
        "@127.0.0.1",
        "-p",
        &port.to_string(),
        name,
        rtype,
        "+short",
        "+time=2",
        "+tries=1",
    ]);
    if tcp {
        cmd.arg("+tcp");
    }
    let out = cmd.output().expect("run dig");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(str::to_string)
        .collect()
}

/// Runs the real `grpcurl -plaintext ARGS...` and returns (success, stdout+stderr).
pub fn grpcurl(grpcurl: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(grpcurl)
        .arg("-plaintext")
        .args(args)
        .output()
        .expect("run grpcurl");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// A protobuf JSON integer as grpcurl prints it: 64-bit ones come as strings.
pub fn num(v: &serde_json::Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_u64())
        .unwrap_or(0)
}

/// A plain HTTP/1.1 GET on loopback (the admin ports): (status, body).
pub fn http_get(port: u16, path: &str) -> (u16, String) {
    http_get_with(port, path, &[])
}

/// [`http_get`] with `headers` (name, value) sent after `Host`.
pub fn http_get_with(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect admin port");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let headers: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n"
    )
    .expect("write");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    (code, body.to_string())
}

/// `VmRSS` and `VmHWM` (peak) of a process, in bytes.
pub fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
            * 1024
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}
