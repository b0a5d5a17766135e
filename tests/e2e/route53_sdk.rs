//! Issue 29: Route 53's own SDKs (boto3, the AWS CLI) against `dnsplane emulate
//! route53`, the process users run, and every answer walked against botocore's
//! description of the API (`tests/sdk/route53_boto3.py` says what it checks).
use dnsplane_e2e::{Proc, binary, free_port, sdk, tool, wait_for};
use dnsplane_emulate::{DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

/// `dnsplane emulate route53` with `config`, serving on a free port; its endpoint.
fn emulator(dir: &Path, name: &str, config: &str) -> (Proc, String) {
    let port = free_port();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, config).expect("emulator config");
    let p = Proc::spawn(
        name,
        &binary("dnsplane"),
        &[
            "emulate",
            "route53",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
            file.to_str().expect("utf-8"),
        ],
        dir.join(format!("{name}.log")),
    );
    let up = wait_for(Duration::from_secs(30), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "{name} never listened:\n{}", p.log_text());
    (p, format!("http://127.0.0.1:{port}"))
}

#[test]
fn boto3_and_the_aws_cli_drive_the_route53_emulator_as_aws_describes_it() {
    let Some(aws) = tool("DNSPLANE_AWS_CLI", "aws") else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    // No quota for the story itself; a second emulator with one request a second for
    // `Throttling`.
    let (_main, endpoint) = emulator(dir.path(), "emulator", "rate = 0.0\n");
    let (_slow, throttled) = emulator(dir.path(), "throttled", "rate = 1.0\nburst = 1\n");
    let Some(run) = sdk::run(
        &sdk::script("route53_boto3.py"),
        &[
            ("DNSPLANE_R53_ENDPOINT", &endpoint),
            ("DNSPLANE_R53_THROTTLED_ENDPOINT", &throttled),
            ("DNSPLANE_AWS_CLI", aws.to_str().expect("utf-8")),
            ("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", DEFAULT_SECRET_ACCESS_KEY),
        ],
        &[],
    ) else {
        return;
    };
    assert!(
        run.ok,
        "route53_boto3.py failed:\n{}\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stdout.contains("valid by service-2.json"),
        "{}",
        run.stdout
    );
}

/// docs/emulators.md's table of where moto differs from AWS, row by row: the emulator
/// answers each as AWS documents, moto as the table says (a moto release that changes
/// a row fails here).
#[test]
fn moto_differs_from_aws_exactly_where_docs_emulators_md_says() {
    let Some(moto) = dnsplane_e2e::moto::Moto::start() else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let (_emulator, endpoint) = emulator(dir.path(), "emulator", "");
    let moto_endpoint = format!("http://127.0.0.1:{}", moto.port);
    for (server, endpoint) in [("aws", endpoint.as_str()), ("moto", moto_endpoint.as_str())] {
        let Some(run) = sdk::run(
            &sdk::script("route53_moto_rows.py"),
            &[
                ("DNSPLANE_R53_ENDPOINT", endpoint),
                ("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY_ID),
                ("AWS_SECRET_ACCESS_KEY", DEFAULT_SECRET_ACCESS_KEY),
            ],
            &[server],
        ) else {
            return;
        };
        assert!(
            run.ok,
            "route53_moto_rows.py {server}:\n{}\n{}\nmoto's log:\n{}",
            run.stdout,
            run.stderr,
            moto.log_tail()
        );
    }
}
