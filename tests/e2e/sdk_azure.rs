//! Azure's official Python SDKs (azure-mgmt-dns 9.0.0, azure-mgmt-privatedns 2.0.0)
//! against `dnsplane emulate azure` (a process, as a user runs it): a token from the
//! emulator's token endpoint, record sets of a public and a private zone created,
//! updated under `If-Match`, listed page by page through `nextLink` and deleted; a
//! stale ETag met as the SDK's `HttpResponseError` with ARM's `PreconditionFailed`,
//! ARM's other errors as the exceptions the SDK maps them to, a 429 retried after its
//! `Retry-After`, and every raw answer walked for fields the SDK's models (generated
//! from the REST API descriptions) do not declare (tests/sdk/azure_sdk.py;
//! docs/emulators.md).
use dnsplane_e2e::python_sdk::{self, Emulator};
use dnsplane_e2e::require_servers;

#[test]
fn the_azure_sdks_drive_record_sets_under_etags_and_page_through_next_links() {
    let Some(python) = python_sdk::python() else {
        return;
    };
    // The venv may predate the Azure SDKs: missing packages fail under
    // DNSPLANE_REQUIRE_SERVERS=1, as a missing tool does, and skip otherwise.
    let probe = std::process::Command::new(&python)
        .args([
            "-c",
            "import azure.mgmt.dns, azure.mgmt.privatedns, azure.identity",
        ])
        .output()
        .expect("run the SDK python");
    if !probe.status.success() {
        let why = String::from_utf8_lossy(&probe.stderr);
        assert!(
            !require_servers(),
            "azure-mgmt-dns, azure-mgmt-privatedns and azure-identity are required (DNSPLANE_REQUIRE_SERVERS=1) in {}: run tests/run-all.sh ({why})",
            python.display()
        );
        eprintln!(
            "skipping: the Azure SDKs are not installed in {} ({why})",
            python.display()
        );
        return;
    }
    // Quota off: the script is about the API's shapes, not its pace (the quota has
    // its own tests in applier/emulate/tests/azure/).
    let emu = Emulator::start(
        "azure",
        Some(
            "[throttle]\nreads_per_second = 0.0\nwrites_per_second = 0.0\ndeletes_per_second = 0.0\n",
        ),
    );
    crate::sdk_cloudflare::run_against(&python, &emu, "azure_sdk.py", "the Azure SDK script");
}
