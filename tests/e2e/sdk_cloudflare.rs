//! Cloudflare's official Python SDK, with strict response validation, against
//! `dnsplane emulate cloudflare` (a process, as a user runs it): zones and records
//! created, listed page by page, updated, batched and deleted, every documented error
//! met as the exception the real API raises, and every parsed answer walked for fields
//! the SDK's models (generated from Cloudflare's OpenAPI schema) do not declare
//! (tests/sdk/cloudflare_sdk.py; docs/emulators.md).
use dnsplane_e2e::python_sdk::{self, Emulator};
use std::path::Path;
use std::time::Duration;

#[test]
fn the_cloudflare_sdk_parses_every_answer_strictly_and_types_every_error() {
    let Some(python) = python_sdk::python() else {
        return;
    };
    let emu = Emulator::start("cloudflare", None);
    run_against(
        &python,
        &emu,
        "cloudflare_sdk.py",
        "the Cloudflare SDK script",
    );
}

/// Runs the SDK script `script` (in tests/sdk/) with `python` against `emu`, its
/// endpoint in `EMULATOR_ENDPOINT`, within 180 s; it must pass (`what` names it, and
/// the failure shows the emulator's log).
pub(crate) fn run_against(python: &Path, emu: &Emulator, script: &str, what: &str) {
    let run = python_sdk::run(
        python,
        &python_sdk::script(script),
        &[("EMULATOR_ENDPOINT", emu.endpoint())],
        &[],
        Duration::from_secs(180),
    );
    run.assert_passed(&format!("{what} (emulator log:\n{})", emu.proc.log_text()));
}
