//! Google's own Cloud DNS clients against `dnsplane emulate clouddns` (a process, as a
//! user runs it): `google-cloud-dns` and `google-api-python-client`, each creating a
//! zone, listing, changing, paging and deleting, and meeting every documented error as
//! the exception the real service raises. Every answer they got is then checked
//! against Cloud DNS's discovery document `dns.v1.json`, from google-api-python-client
//! (tests/sdk/clouddns_google.py, tests/sdk/discovery.py; docs/emulators.md).
use dnsplane_e2e::python_sdk::{self, Emulator};

#[test]
fn google_cloud_dns_and_the_discovery_client_drive_the_emulator_as_google() {
    let Some(python) = python_sdk::python() else {
        return;
    };
    // Two items a page, so every listing of the script pages; a second token, for
    // another project only (the 403 `forbidden` case).
    let emu = Emulator::start(
        "clouddns",
        Some(
            "page_size = 2\n\
             tokens = [\"emulator-token\", { token = \"other-project-token\", projects = [\"other-project\"] }]\n",
        ),
    );
    crate::sdk_cloudflare::run_against(
        &python,
        &emu,
        "clouddns_google.py",
        "the Cloud DNS SDK script",
    );
}
