//! The planner's status page (issue 18) in a real headless Chromium, driven through a
//! real chromedriver, against planner + applier processes (embedded provider) under
//! `[auth]`: the page shows the zone, a conflict with its occupant and observed value
//! (a `<script>` TXT value, shown as text), and a held plan; a read-only token's
//! Approve fails visibly; the approve token's Approve applies the plan (checked in
//! the provider with dig). Without `[auth]`, the page needs no token and Approve works.
use crate::stack::{Stack, Tools, ZONE, seed};
use dnsplane_e2e::webdriver::{self, Browser};
use dnsplane_e2e::{free_port, http_get, wait_for};
use dnsplane_planner::auth::tokens::digest_hex;
use std::time::Duration;

const READ: &str = "page-read-token-0123456789";
const OPS: &str = "page-approve-token-0123456789";
const EVIL: &str = "<script>window.pwned=1</script>";

/// `n` A records `w000…` in a DNSEndpoint, plus the TXT at `taken`.
fn desired(n: usize) -> String {
    let mut s = String::from(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: web, namespace: default}\nspec:\n  endpoints:\n    - dnsName: taken.example.com\n      recordType: TXT\n      targets: [\"ours\"]\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "    - dnsName: w{i:03}.example.com\n      recordType: A\n      recordTTL: 300\n      targets: [192.0.2.{}]\n",
            i + 1
        ));
    }
    s
}

#[test]
fn the_status_page_shows_conflicts_and_held_plans_and_approves_in_a_browser() {
    let Some(tools) = Tools::find() else { return };
    let Some((chromium, driver)) = webdriver::find() else {
        return;
    };
    let mut s = Stack::with_config(
        tools,
        &[("web.yaml", &desired(20))],
        "report",
        "",
        "[auth]\ntokens_file = \"tokens.toml\"\n",
    );
    std::fs::write(
        s.path("tokens.toml"),
        format!(
            "[[token]]\nname = \"viewer\"\nsha256 = \"{}\"\nrole = \"read\"\n\n[[token]]\nname = \"ops\"\nsha256 = \"{}\"\nrole = \"approve\"\n",
            digest_hex(READ),
            digest_hex(OPS)
        ),
    )
    .expect("tokens.toml");
    // Another writer holds `taken`: a TXT with markup in it, marked as team-b's.
    let quoted = format!("\"{EVIL}\"");
    seed(
        &s.state_dir(),
        &[
            ("taken.example.com", "TXT", &quoted),
            (
                "_dnsplane-txt.taken.example.com",
                "TXT",
                "\"heritage=dnsplane,dnsplane/owner=team-b,dnsplane/resource=DNSEndpoint default/other\"",
            ),
        ],
    );
    s.start_applier();
    let admin = free_port();
    s.start_planner_with_admin(admin);
    s.wait_dns("w019.example.com", "A", &["192.0.2.20"]);
    // Half the zone goes: the mass-change guard holds the deletes.
    s.write_desired("web.yaml", &desired(10));

    // The shell carries no data; the fragment needs a token.
    let (code, shell) = http_get(admin, "/");
    assert_eq!(code, 200);
    assert!(
        shell.contains("data-auth=\"token\"") && !shell.contains(ZONE),
        "{shell}"
    );
    let (code, body) = http_get(admin, "/ui/live");
    assert_eq!(code, 401, "{body}");

    let browser = Browser::start(&chromium, &driver, s.path("chromedriver.log"));
    let page = format!("http://127.0.0.1:{admin}/");
    browser.goto(&page);
    // Under [auth] the shell asks for a token and shows no data before it has one.
    assert!(
        browser.exec(
            "return !document.getElementById('login').hidden;",
            serde_json::json!([])
        ) == true,
        "the token form is shown first"
    );
    assert!(!browser.text("#live").contains(ZONE));

    // A read-only token: everything is shown, Approve does not work.
    browser.type_into("#token", READ);
    browser.click("#save");
    let zones = browser.wait_text("#zones", "the zone", |t| t.contains(ZONE));
    assert!(zones.contains("converged"), "{zones}");
    let held = browser.wait_text("#held", "the held plan", |t| t.contains("Approve"));
    let digest = browser.text("#held td.digest");
    assert!(
        digest.len() >= 16 && digest.chars().all(|c| c.is_ascii_hexdigit()),
        "a digest: {held}"
    );
    assert!(held.contains("needs the approve role"), "{held}");
    let conflicts = browser.wait_text("#conflicts", "the conflict", |t| t.contains("taken"));
    assert_eq!(
        browser.text("#conflicts td.occupant"),
        "team-b",
        "{conflicts}"
    );
    let observed = browser.text("#conflicts td.observed");
    assert!(
        observed.contains(EVIL),
        "the TXT value is shown as text: {observed:?}"
    );
    let injected = browser.exec(
        "return [document.querySelectorAll('#live script').length, window.pwned === undefined];",
        serde_json::json!([]),
    );
    assert_eq!(
        injected,
        serde_json::json!([0, true]),
        "markup in a value ran"
    );
    assert_eq!(
        browser.exec(
            "return document.querySelector('#held button.approve').disabled;",
            serde_json::json!([])
        ),
        true
    );
    // Posting anyway (the page's own approve call): refused, and the page says so.
    let code = browser.exec_async(
        "var done = arguments[arguments.length - 1]; window.dnsplaneApprove(arguments[0], arguments[1]).then(done);",
        serde_json::json!([ZONE, digest]),
    );
    assert_eq!(code, 403);
    let msg = browser.text("#message");
    assert!(
        msg.contains("Approve refused (403)") && msg.contains("approve role"),
        "{msg}"
    );
    assert_eq!(
        s.dig("w015.example.com", "A"),
        vec!["192.0.2.16"],
        "a refused approval deleted"
    );

    // The approve token: a stale digest is refused with the current one named.
    browser.exec(
        "sessionStorage.clear(); location.reload();",
        serde_json::json!([]),
    );
    browser.wait_text("#login", "the token form", |t| t.contains("Bearer token"));
    browser.type_into("#token", OPS);
    browser.click("#save");
    browser.wait_text("#held", "an enabled Approve", |t| {
        !t.contains("needs the approve role") && t.contains("Approve")
    });
    // What the README shows (DNSPLANE_SCREENSHOT=docs/images/status-page.png).
    let png = browser.screenshot();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot"
    );
    if let Some(path) = std::env::var_os("DNSPLANE_SCREENSHOT") {
        std::fs::write(&path, &png).expect("write the screenshot");
    }

    let code = browser.exec_async(
        "var done = arguments[arguments.length - 1]; window.dnsplaneApprove(arguments[0], 'stale').then(done);",
        serde_json::json!([ZONE]),
    );
    assert_eq!(code, 409);
    let msg = browser.text("#message");
    assert!(msg.contains("changed") && msg.contains(&digest), "{msg}");

    // Clicking Approve applies the held plan: the deletes reach the provider.
    browser.click("#held button.approve");
    let msg = browser.wait_text("#message", "the approval", |t| t.contains("Approved"));
    assert!(msg.contains(&digest), "{msg}");
    let gone = wait_for(Duration::from_secs(60), || {
        s.dig("w015.example.com", "A").is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "the approved deletes did not reach the provider; {}",
        s.logs()
    );
    assert_eq!(s.dig("w009.example.com", "A"), vec!["192.0.2.10"]);
    browser.wait_text("#held", "no held plan", |t| t.contains("No plan is held"));
    // The approved deletes are among the recent changes, from the audit trail.
    browser.wait_text("#recent", "the delete of w015 in the recent changes", |t| {
        t.contains("w015.example.com") && t.contains("delete") && t.contains("APPLIED")
    });
}

/// Without `[auth]` (a planner on loopback for one operator), the page shows its data
/// at once, with no token form, and its Approve button works: the held deletes reach
/// the provider.
#[test]
fn without_auth_the_page_shows_everything_and_approves_without_a_token() {
    let Some(tools) = Tools::find() else { return };
    let Some((chromium, driver)) = webdriver::find() else {
        return;
    };
    let mut s = Stack::new(tools, &[("web.yaml", &desired(20))], "report");
    s.start_applier();
    let admin = free_port();
    s.start_planner_with_admin(admin);
    s.wait_dns("w019.example.com", "A", &["192.0.2.20"]);
    s.write_desired("web.yaml", &desired(10));
    let (code, body) = http_get(admin, "/ui/live");
    assert_eq!(code, 200, "{body}");

    let browser = Browser::start(&chromium, &driver, s.path("chromedriver.log"));
    browser.goto(&format!("http://127.0.0.1:{admin}/"));
    let zones = browser.wait_text("#zones", "the zone", |t| t.contains(ZONE));
    assert!(zones.contains("converged"), "{zones}");
    assert_eq!(
        browser.exec(
            "return document.getElementById('login').hidden;",
            serde_json::json!([])
        ),
        true,
        "no token form without [auth]"
    );
    browser.wait_text("#held", "an enabled Approve", |t| {
        !t.contains("needs the approve role") && t.contains("Approve")
    });
    browser.click("#held button.approve");
    browser.wait_text("#message", "the approval", |t| t.contains("Approved"));
    let gone = wait_for(Duration::from_secs(60), || {
        s.dig("w015.example.com", "A").is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "the approved deletes did not land; {}",
        s.logs()
    );
    assert_eq!(s.dig("w009.example.com", "A"), vec!["192.0.2.10"]);
}
