//! Issue 29: Route 53's own SDKs (boto3, the AWS CLI) against `dnsplane emulate
//! route53`, the process users run, and every answer walked against botocore's
//! description of the API (`tests/sdk/route53_boto3.py` says what it checks).
use dnsplane_e2e::python_sdk::{self, Emulator};
use dnsplane_e2e::tool;
use dnsplane_emulate::{DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY};
use std::time::Duration;

/// The longest a script may run (it makes a few hundred calls on loopback).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

#[test]
fn boto3_and_the_aws_cli_drive_the_route53_emulator_as_aws_describes_it() {
    let (Some(python), Some(aws)) = (python_sdk::python(), tool("DNSPLANE_AWS_CLI", "aws")) else {
        return;
    };
    // No quota for the story itself; a second emulator with one request a second for
    // `Throttling`.
    let main = Emulator::start("route53", Some("rate = 0.0\n"));
    let slow = Emulator::start("route53", Some("rate = 1.0\nburst = 1\n"));
    let run = python_sdk::run(
        &python,
        &python_sdk::script("route53_boto3.py"),
        &[
            ("DNSPLANE_R53_ENDPOINT", main.endpoint()),
            ("DNSPLANE_R53_THROTTLED_ENDPOINT", slow.endpoint()),
            ("DNSPLANE_AWS_CLI", aws.display().to_string()),
            ("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY_ID.to_string()),
            (
                "AWS_SECRET_ACCESS_KEY",
                DEFAULT_SECRET_ACCESS_KEY.to_string(),
            ),
        ],
        &[],
        SCRIPT_TIMEOUT,
    );
    run.assert_passed("route53_boto3.py");
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
    let (Some(python), Some(moto)) = (python_sdk::python(), dnsplane_e2e::moto::Moto::start())
    else {
        return;
    };
    let emulator = Emulator::start("route53", None);
    let moto_endpoint = format!("http://127.0.0.1:{}", moto.port);
    for (server, endpoint) in [
        ("aws", emulator.endpoint()),
        ("moto", moto_endpoint.clone()),
    ] {
        let run = python_sdk::run(
            &python,
            &python_sdk::script("route53_moto_rows.py"),
            &[
                ("DNSPLANE_R53_ENDPOINT", endpoint),
                ("AWS_ACCESS_KEY_ID", DEFAULT_ACCESS_KEY_ID.to_string()),
                (
                    "AWS_SECRET_ACCESS_KEY",
                    DEFAULT_SECRET_ACCESS_KEY.to_string(),
                ),
            ],
            &[server],
            SCRIPT_TIMEOUT,
        );
        assert!(
            run.success,
            "route53_moto_rows.py {server}:\n{}\n{}\nmoto's log:\n{}",
            run.stdout,
            run.stderr,
            moto.log_tail()
        );
    }
}
