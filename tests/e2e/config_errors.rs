//! A config mistake, as the services say it at start (issue 35): exit 64, the file and
//! the line of the key at fault, the key's path, each cause said once, and no value
//! that could be a secret echoed back.
use dnsplane_e2e::binary;
use std::path::Path;
use std::process::Command;

/// Runs `bin --config config` with nothing else to start, and returns (exit code,
/// stderr).
fn start(bin: &str, config: &Path) -> (Option<i32>, String) {
    let out = Command::new(binary(bin))
        .args(["--config", config.to_str().expect("utf-8 path")])
        .args(["--listen", "127.0.0.1:0"])
        .env("DNSPLANE_PLANNER_ADMIN_LISTEN", "off")
        .env("DNSPLANE_APPLIER_ADMIN_LISTEN", "off")
        .output()
        .expect("run the service");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A mistake inside `[[accounts]]` is shown at its own line with its path; the
/// value on that line is not shown (it could be a key).
#[test]
fn an_applier_account_mistake_points_at_its_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("applier.toml");
    let account = "[[accounts]]\nname = \"embedded\"\ndriver = \"memory\"\n\
                   zones = [\"example.com\"]\nstate_dir = \"state\"\n";
    for (extra, line, words) in [
        (
            "dns_rate_limit = { burst = \"x\" }\n",
            "line 8, column 1",
            "dns_rate_limit.burst: invalid type: string \"x\", expected u32",
        ),
        (
            "api_key = \"s3cret-value\"\n",
            "line 8, column 1",
            "unknown field `api_key`",
        ),
    ] {
        std::fs::write(
            &config,
            format!("listen = \"127.0.0.1:0\"\n\n{account}{extra}"),
        )
        .expect("config");
        let (code, err) = start("dnsplane-applier", &config);
        assert_eq!(code, Some(64), "{err}");
        assert!(
            err.contains("applier.toml") && err.contains(line) && err.contains(words),
            "{line:?} and {words:?} not in:\n{err}"
        );
        assert!(!err.contains("s3cret-value"), "{err}");
    }
}

/// A planner with `extra` after one zone refuses to start (exit 64); its stderr.
fn refused_planner(dir: &Path, extra: &str) -> String {
    let config = dir.join("planner.toml");
    let zone = "state_dir = \"state\"\n[[zones]]\nname = \"example.com\"\naccount = \"a\"\n";
    std::fs::write(&config, format!("{zone}{extra}")).expect("config");
    let (code, err) = start("dnsplane-planner", &config);
    assert_eq!(code, Some(64), "{err}");
    err
}

/// A planner source's unknown key is shown at its line, not at `[[sources]]`.
#[test]
fn a_planner_source_mistake_points_at_its_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = refused_planner(
        dir.path(),
        "\n[[sources]]\ntype = \"file\"\npaths = [\"desired\"]\npoll = \"5s\"\n",
    );
    assert!(
        err.contains("line 9, column 1") && err.contains("unknown field `poll`"),
        "{err}"
    );
}

/// A broken tokens file is said once: its file, line and problem, not twice over.
#[test]
fn a_tokens_file_mistake_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("tokens.toml"),
        "[[token]]\nname = \"ci\"\nsha256 = \"00\"\nrole = \"admin\"\n",
    )
    .expect("tokens");
    let err = refused_planner(dir.path(), "[auth]\ntokens_file = \"tokens.toml\"\n");
    let problem = "tokens.toml:4: unknown variant `admin`";
    assert_eq!(err.matches(problem).count(), 1, "{err}");
}
