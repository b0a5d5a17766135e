//! A full disk under the planner's state directory (issue 28): a real tmpfs of a few
//! hundred KiB as `state_dir`, filled to the last byte while a desired file is edited.
//! The edit is not accepted while it cannot be persisted (status says why, nothing is
//! deleted, no temporary file is left behind), and is applied once space is back,
//! without the file being touched again. Needs root (to mount the tmpfs).
use crate::stack::{Stack, Tools, endpoints};
use dnsplane_e2e::{require_servers, wait_for};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// A tmpfs mounted at a path until dropped (then unmounted).
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount's syntax) at `dir`; `None` (with the reason
    /// printed) when this process may not mount, unless servers are required.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                    Err(e) => e.to_string(),
                };
                assert!(
                    !require_servers(),
                    "cannot mount a tmpfs (this test needs root): {why}"
                );
                eprintln!("skipped: cannot mount a tmpfs (this test needs root): {why}");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the filesystem of `dir` to its last byte with `dir/filler`.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).expect("filler");
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    // The last partial block.
    while f.write_all(&[0]).is_ok() {}
    let _ = f.sync_all();
}

/// Files in `dir` (recursively) whose name says they are temporary.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(temporaries(&p));
        } else if e.file_name().to_string_lossy().ends_with(".tmp") {
            out.push(p);
        }
    }
    out
}

#[test]
fn an_edit_made_while_the_disk_is_full_is_applied_once_space_is_back() {
    let Some(tools) = Tools::find() else { return };
    let web = |v: &str| {
        endpoints(
            "web",
            &[
                ("www.example.com", "A", &[v]),
                ("api.example.com", "A", &["192.0.2.20"]),
            ],
        )
    };
    let mut s = Stack::new(tools, &[("web.yaml", &web("192.0.2.10"))], "report");
    let state = s.path("planner-state");
    // Unmounted lazily when dropped (on a failed assertion, while the planner still
    // runs); at the end, after the planner is stopped.
    let Some(mount) = Tmpfs::mount(&state, "512k") else {
        return;
    };
    let config = std::fs::read_to_string(s.path("planner.toml")).expect("planner.toml");
    std::fs::write(
        s.path("planner.toml"),
        format!("state_dir = \"{}\"\n{config}", state.display()),
    )
    .expect("planner.toml");
    s.start_until_www();

    fill(&state);
    s.write_desired("web.yaml", &web("192.0.2.11"));
    // Not persisted, so not accepted: status fails under state_write, the old value
    // stays, nothing is deleted.
    let failing = wait_for(WAIT, || {
        let st = s.planner_call("GetStatus", "{}");
        st["reasons"]
            .as_array()?
            .iter()
            .any(|r| r["rule"] == "state_write")
            .then_some(st)
    });
    assert!(
        failing.is_some(),
        "no state_write reason; logs:\n{}",
        s.logs()
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(s.dig("www.example.com", "A"), ["192.0.2.10"]);
    assert_eq!(s.dig("api.example.com", "A"), ["192.0.2.20"]);
    let left = temporaries(&state);
    assert!(
        left.is_empty(),
        "temporary files outlive failed writes: {left:?}"
    );

    // Space comes back; the file is not touched again.
    std::fs::remove_file(state.join("filler")).expect("free");
    s.wait_dns("www.example.com", "A", &["192.0.2.11"]);
    s.wait_dns("api.example.com", "A", &["192.0.2.20"]);
    let cleared = wait_for(WAIT, || {
        let st = s.planner_call("GetStatus", "{}");
        (!st["reasons"]
            .as_array()?
            .iter()
            .any(|r| r["rule"] == "state_write"))
        .then_some(())
    });
    assert!(cleared.is_some(), "state_write stayed; logs:\n{}", s.logs());
    assert!(temporaries(&state).is_empty());

    if let Some(p) = s.planner.as_mut() {
        p.kill();
    }
    drop(mount);
}
