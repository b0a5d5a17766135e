//! The config file of `dnsplane emulate route53 --config FILE`.
use crate::support::{Client, change};
use dnsplane_emulate::route53::{Route53Emulator, Route53Options};
use dnsplane_emulate::{EmulateError, run_route53};
use std::io::Write;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[tokio::test]
async fn a_bad_config_names_the_file_and_the_field() {
    let addr = "127.0.0.1:0".parse().unwrap();
    for (text, field) in [
        ("rat = 5\n", "rat"),
        ("rate = \"fast\"\n", "rate"),
        (
            "[[faults]]\naction = \"throttle\"\nop = \"chnage\"\n",
            "faults[0].op",
        ),
        ("[[faults]]\naction = \"explode\"\n", "explode"),
        ("[[zones]]\nname = \"a..b\"\n", "zones[0].name"),
        ("insync_after = \"soon\"\n", "insync_after"),
    ] {
        let f = file(text);
        let err = run_route53(addr, Some(f.path().to_path_buf()))
            .await
            .unwrap_err();
        assert!(err.is_config(), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&f.path().display().to_string()), "{msg}");
        assert!(msg.contains(field), "{field}: {msg}");
    }
    let err = run_route53(addr, Some("/nonexistent/r53.toml".into()))
        .await
        .unwrap_err();
    assert!(matches!(err, EmulateError::Config { .. }), "{err}");
}

/// The documented example config (docs/emulators.md) loads and works.
#[tokio::test]
async fn the_documented_config_works() {
    let f = file(
        r#"
rate = 5.0
burst = 5
insync_after = "2s"
page_default = 100
verify_signatures = true

[[credentials]]
access_key_id = "AKIAEMULATOR00000000"
secret_access_key = "emulator-secret-key"

[[credentials]]
access_key_id = "AKIACI0000000000TEST"
secret_access_key = "ci-secret"

[[zones]]
name = "example.com"
id = "Z0EXAMPLE00000000001"

[[zones]]
name = "example.com"
private = true

[[faults]]
action = "ambiguous_after_commit"
op = "change"
zone = "example.com"
times = 1

[[faults]]
action = "throttle"
op = "list_rrsets"
probability = 0.2
seed = 7
"#,
    );
    let opts = Route53Options::from_file(f.path()).unwrap();
    assert_eq!(opts.zones.len(), 2);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let emu = Route53Emulator::start(listener, opts).await.unwrap();
    let c = Client::new(&emu.endpoint(), "AKIACI0000000000TEST", "ci-secret");
    let r = c
        .change(
            "Z0EXAMPLE00000000001",
            &[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])],
        )
        .await;
    assert_eq!(r.status, 502, "{}", r.body);
    assert_eq!(emu.rrsets("Z0EXAMPLE00000000001").len(), 3);
    emu.stop().await;
}
