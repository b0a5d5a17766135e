//! Who may call the planner (issue 17): bearer tokens from `[auth] tokens_file`, roles,
//! scopes, the admin port's `/status`, the CLI's `--token-file`, reloading the tokens
//! file, per-caller rate limits, and a Sync naming one zone 500 times costing one read.
//! Planner and applier are real processes; calls go through the real `grpcurl`.
use crate::metrics::{parse_metrics, sum};
use crate::stack::{Stack, Tools, ZONE, dnsplane_cli, endpoints};
use dnsplane_e2e::{free_port, grpcurl, http_get, wait_for};
use dnsplane_planner::auth::tokens::digest_hex;
use std::time::Duration;

/// A second zone, on an account of its own, outside the scoped token's zones.
const OTHER: &str = "example.org.";

/// (name, token, role, extra lines).
type Entry<'a> = (&'a str, &'a str, &'a str, &'a str);

const TOKENS: &[Entry] = &[
    ("reader", "read-token-0123456789", "read", ""),
    ("writer", "write-token-0123456789", "write", ""),
    ("ops", "approve-token-0123456789", "approve", ""),
    (
        "team-a",
        "team-a-token-0123456789",
        "write",
        "zones = [\"example.com.\"]",
    ),
];

fn token(name: &str) -> &'static str {
    TOKENS.iter().find(|t| t.0 == name).expect("a token").1
}

fn tokens_file(entries: &[Entry]) -> String {
    dnsplane_e2e::tokens::tokens_toml(entries, digest_hex)
}

/// The applier's and planner's config for a second zone, [`OTHER`], in a memory
/// account of its own (its state in the returned directory), and `[auth]` over
/// `tokens.toml` plus `auth_extra` (keys, or further tables).
pub(crate) fn two_zones_with_auth(auth_extra: &str) -> (String, String, tempfile::TempDir) {
    let other_state = tempfile::tempdir().expect("tempdir");
    let applier_extra = format!(
        "\n[[accounts]]\nname = \"other\"\ndriver = \"memory\"\nzones = [\"{OTHER}\"]\nstate_dir = \"{}\"\n",
        other_state.path().join("other").display()
    );
    let planner_extra = format!(
        "[[zones]]\nname = \"{OTHER}\"\naccount = \"other\"\n\
         [auth]\ntokens_file = \"tokens.toml\"\n{auth_extra}\n"
    );
    (applier_extra, planner_extra, other_state)
}

/// Planner + applier with two zones (example.com. with its DNS port, example.org.)
/// and `[auth]` (plus `auth_extra` keys) over [`TOKENS`].
fn auth_stack(tools: Tools, auth_extra: &str) -> (Stack, tempfile::TempDir) {
    let (applier_extra, planner_extra, other_state) = two_zones_with_auth(auth_extra);
    let base = endpoints("base", &[("base.example.com", "A", &["192.0.2.100"])]);
    let s = Stack::with_config(
        tools,
        &[("base.yaml", &base)],
        "report",
        &applier_extra,
        &planner_extra,
    );
    std::fs::write(s.path("tokens.toml"), tokens_file(TOKENS)).expect("tokens.toml");
    (s, other_state)
}

/// The real grpcurl against the planner, with `authorization: Bearer <token>` when
/// one is given: (success, output).
fn call(s: &Stack, bearer: Option<&str>, method: &str, body: &str) -> (bool, String) {
    let addr = format!("127.0.0.1:{}", s.planner_port);
    let header = bearer.map(|t| format!("authorization: Bearer {t}"));
    let mut args: Vec<&str> = Vec::new();
    if let Some(h) = &header {
        args.extend(["-H", h.as_str()]);
    }
    let method = format!("dnsplane.v1.Planner/{method}");
    args.extend(["-d", body, &addr, &method]);
    grpcurl(&s.tools.grpcurl, &args)
}

/// A call that must succeed, as JSON.
fn ok(s: &Stack, bearer: &str, method: &str, body: &str) -> serde_json::Value {
    let (ok, out) = call(s, Some(bearer), method, body);
    assert!(ok, "{method} with a token failed: {out}\n{}", s.logs());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{method}: not JSON ({e}): {out}"))
}

/// A call that must be refused with `code` (grpcurl's spelling); its message.
fn refused(s: &Stack, bearer: Option<&str>, method: &str, body: &str, code: &str) -> String {
    let (ok, out) = call(s, bearer, method, body);
    assert!(!ok, "{method} should be refused with {code}: {out}");
    assert!(
        out.contains(&format!("Code: {code}")),
        "{method}: want {code}: {out}"
    );
    out
}

fn push(name: &str, value: &str, source: &str) -> String {
    format!(
        r#"{{"source":"{source}","records":[{{"name":"{name}","type":"A","values":["{value}"]}}]}}"#
    )
}

/// An HTTP GET on loopback with an `Authorization` header: (status, body).
fn http_get_bearer(port: u16, path: &str, bearer: &str) -> (u16, String) {
    let authorization = format!("Bearer {bearer}");
    dnsplane_e2e::http_get_with(port, path, &[("Authorization", &authorization)])
}

/// The `dnsplane` CLI against the stack: (exit code, output).
fn cli(s: &Stack, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    dnsplane_cli(s.planner_port, args, env)
}

#[test]
fn tokens_roles_and_scopes_guard_the_planner_api() {
    let Some(tools) = Tools::find() else { return };
    let (mut s, _other) = auth_stack(tools, "");
    let admin = free_port();
    s.start_applier();
    s.start_planner_with_admin(admin);

    // No token, a token it does not know: UNAUTHENTICATED, saying how to send one,
    // never repeating what was sent.
    let out = refused(&s, None, "GetStatus", "{}", "Unauthenticated");
    assert!(out.contains("authorization: Bearer"), "{out}");
    let out = refused(
        &s,
        Some("guessed-secret-42"),
        "GetStatus",
        "{}",
        "Unauthenticated",
    );
    assert!(
        !out.contains("guessed-secret-42"),
        "the token echoed: {out}"
    );

    // The grpcurl cookbook (docs/grpc.md) sends the header the way `call` does
    // (cookbook.rs runs each of its commands against a `dnsplane up`, which asks for it).
    let cookbook = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/grpc.md"),
    )
    .expect("docs/grpc.md");
    assert!(
        cookbook.contains(r#" -H "authorization: Bearer $DNSPLANE_TOKEN" 127.0.0.1:50051 "#),
        "the grpcurl cookbook (docs/grpc.md) shows the authorization header"
    );

    // read: status yes, writes no (naming the role needed and the caller).
    ok(&s, token("reader"), "GetStatus", "{}");
    ok(&s, token("reader"), "Plan", "{}");
    let out = refused(
        &s,
        Some(token("reader")),
        "PutDesired",
        &push("r.example.com", "192.0.2.9", "r"),
        "PermissionDenied",
    );
    assert!(
        out.contains("needs the write role") && out.contains("reader"),
        "{out}"
    );
    refused(&s, Some(token("reader")), "Sync", "{}", "PermissionDenied");

    // A token scoped to example.com.: its push is accepted and served...
    let accepted = ok(
        &s,
        token("team-a"),
        "PutDesired",
        &push("a.example.com", "192.0.2.1", "team-a"),
    );
    assert_eq!(accepted["accepted"], 1, "{accepted}");
    s.wait_dns("a.example.com", "A", &["192.0.2.1"]);
    // ... one that reaches into example.org. is refused whole, naming the record...
    let both = r#"{"source":"team-a","records":[
        {"name":"a.example.com","type":"A","values":["192.0.2.2"]},
        {"name":"b.example.org","type":"A","values":["192.0.2.3"]}]}"#;
    let out = refused(
        &s,
        Some(token("team-a")),
        "PutDesired",
        both,
        "PermissionDenied",
    );
    assert!(
        out.contains("records[1] (b.example.org. A)") && out.contains("team-a"),
        "{out}"
    );
    let patch = r#"{"source":"team-a","deletes":[{"name":"w.example.org","type":"A"}]}"#;
    refused(
        &s,
        Some(token("team-a")),
        "PatchDesired",
        patch,
        "PermissionDenied",
    );
    refused(
        &s,
        Some(token("team-a")),
        "Sync",
        &format!(r#"{{"zones":["{OTHER}"]}}"#),
        "PermissionDenied",
    );
    // The streamed push is checked whole once complete: a record out of scope in its
    // second chunk refuses it all.
    let chunks = r#"{"source":"team-a","records":[{"name":"c.example.com","type":"A","values":["192.0.2.6"]}]} {"records":[{"name":"c.example.org","type":"A","values":["192.0.2.6"]}],"last":true}"#;
    let out = refused(
        &s,
        Some(token("team-a")),
        "PutDesiredStream",
        chunks,
        "PermissionDenied",
    );
    assert!(out.contains("records[1] (c.example.org. A)"), "{out}");
    // A Plan naming no zone covers the zones of the scope.
    let all = ok(&s, token("team-a"), "Plan", "{}");
    let planned: Vec<&str> = all["zones"]
        .as_array()
        .expect("zones")
        .iter()
        .filter_map(|z| z["zone"].as_str())
        .collect();
    assert_eq!(planned, [ZONE], "{all}");
    // ... and what it had pushed before stays in force: nothing to change in its zone.
    let plan = ok(
        &s,
        token("team-a"),
        "Plan",
        &format!(r#"{{"zones":["{ZONE}"],"fresh":true}}"#),
    );
    assert!(plan["zones"][0]["changes"].is_null(), "{plan}");
    assert_eq!(s.dig("a.example.com", "A"), ["192.0.2.1"]);

    // write: any zone; a source holding records outside a scoped token's zones is
    // not that token's to replace.
    let w = ok(
        &s,
        token("writer"),
        "PutDesired",
        &push("w.example.org", "192.0.2.4", "shared"),
    );
    assert_eq!(w["accepted"], 1, "{w}");
    let out = refused(
        &s,
        Some(token("team-a")),
        "PutDesired",
        &push("x.example.com", "192.0.2.5", "shared"),
        "PermissionDenied",
    );
    assert!(out.contains("w.example.org."), "{out}");
    let (synced, out) = call(
        &s,
        Some(token("writer")),
        "Sync",
        &format!(r#"{{"zones":["{OTHER}"]}}"#),
    );
    assert!(synced && out.contains("\"phase\": \"done\""), "{out}");

    // approve: Approve, Release, Resume need it; with it, the calls' own answers.
    for (method, body) in [
        ("Approve", format!(r#"{{"zone":"{ZONE}","digest":"nope"}}"#)),
        (
            "Release",
            format!(r#"{{"zone":"{OTHER}","externalDnsOwner":"ext","dryRun":true}}"#),
        ),
        ("Resume", format!(r#"{{"zone":"{OTHER}"}}"#)),
    ] {
        let out = refused(&s, Some(token("writer")), method, &body, "PermissionDenied");
        assert!(out.contains("needs the approve role"), "{out}");
        let (_, out) = call(&s, Some(token("ops")), method, &body);
        assert!(
            !out.contains("PermissionDenied") && !out.contains("Unauthenticated"),
            "{method} with the approve token: {out}"
        );
    }
    let (_, out) = call(
        &s,
        Some(token("ops")),
        "Approve",
        &format!(r#"{{"zone":"{ZONE}","digest":"nope"}}"#),
    );
    assert!(out.contains("Code: FailedPrecondition"), "{out}");

    // The admin port: /status needs a read token; metrics and probes are open.
    assert_eq!(http_get(admin, "/status").0, 401);
    assert_eq!(
        http_get_bearer(admin, "/status", "guessed-secret-42").0,
        401
    );
    let (code, body) = http_get_bearer(admin, "/status", token("reader"));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(ZONE), "{body}");
    assert_eq!(http_get(admin, "/healthz").0, 200);
    let (code, metrics) = http_get(admin, "/metrics");
    assert_eq!(code, 200);
    let m = parse_metrics(&metrics);
    let calls = |caller: &str, call: &str, code: &str| {
        sum(
            &m,
            "dnsplane_planner_api_calls_total",
            &[("caller", caller), ("call", call), ("code", code)],
        )
    };
    assert_eq!(
        calls("reader", "PutDesired", "PERMISSION_DENIED"),
        1.0,
        "{metrics}"
    );
    assert_eq!(calls("team-a", "PutDesired", "OK"), 1.0, "{metrics}");
    assert_eq!(
        calls("anonymous", "GetStatus", "UNAUTHENTICATED"),
        2.0,
        "{metrics}"
    );
    // Writes are logged with the caller's name and the zones touched.
    let log = s.planner.as_ref().expect("planner").log_text();
    assert!(
        log.lines().any(|l| l.contains("API call.")
            && l.contains("team-a")
            && l.contains("PutDesired")
            && l.contains(ZONE)),
        "{log}"
    );
    assert!(!log.contains(token("writer")), "a token reached the log");

    // The CLI: --token-file or DNSPLANE_TOKEN; without, a clear refusal and exit 1.
    let file = s.path("reader.token");
    std::fs::write(&file, format!("{}\n", token("reader"))).expect("token file");
    let (code, out) = cli(&s, &["plan"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("--token-file") && out.contains("DNSPLANE_TOKEN"),
        "{out}"
    );
    let (code, out) = cli(
        &s,
        &["plan", "--token-file", file.to_str().expect("utf8")],
        &[],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(ZONE), "{out}");
    let (code, out) = cli(&s, &["plan"], &[("DNSPLANE_TOKEN", token("reader"))]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cli(
        &s,
        &["sync", "--token-file", file.to_str().expect("utf8")],
        &[],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("needs the write role"), "{out}");

    // The tokens file is re-read when it changes: a new token works, a removed one
    // no longer does; a broken version changes nothing and says where it is broken.
    let late = ("late", "late-token-0123456789", "read", "");
    let mut now: Vec<Entry> = TOKENS.iter().copied().filter(|t| t.0 != "reader").collect();
    now.push(late);
    std::fs::write(s.path("tokens.toml"), tokens_file(&now)).expect("rewrite");
    let reloaded = wait_for(Duration::from_secs(10), || {
        call(&s, Some(late.1), "GetStatus", "{}").0.then_some(())
    });
    assert!(
        reloaded.is_some(),
        "the new token never worked; {}",
        s.logs()
    );
    refused(
        &s,
        Some(token("reader")),
        "GetStatus",
        "{}",
        "Unauthenticated",
    );
    std::fs::write(
        s.path("tokens.toml"),
        "[[token]]\nname = \"x\"\nsha256 = 7\n",
    )
    .expect("break");
    let said = wait_for(Duration::from_secs(10), || {
        let log = s.planner.as_ref().expect("planner").log_text();
        log.contains("Tokens file not reloaded").then_some(log)
    })
    .unwrap_or_else(|| panic!("no error for the broken file; {}", s.logs()));
    assert!(said.contains("tokens.toml:3"), "{said}");
    ok(&s, late.1, "GetStatus", "{}");
}

/// A caller over its rate gets RESOURCE_EXHAUSTED with a retry hint, others do not;
/// a Sync naming a zone 500 times reads it once.
#[test]
fn rate_limits_and_duplicate_zones() {
    let Some(tools) = Tools::find() else { return };
    let (mut s, _other) = auth_stack(tools, "rate_per_second = 2\nburst = 5\n");
    let applier_admin = free_port();
    let planner_admin = free_port();
    s.start_applier_with(&["--admin-listen", &format!("127.0.0.1:{applier_admin}")]);
    s.start_planner_with_admin(planner_admin);
    let status = || -> Option<serde_json::Value> {
        let (code, body) = http_get_bearer(planner_admin, "/status", token("reader"));
        (code == 200)
            .then(|| serde_json::from_str(&body).ok())
            .flatten()
    };
    // Quiet first: both zones' first syncs done.
    wait_for(Duration::from_secs(30), || {
        let st = status()?;
        st["zones"]
            .as_array()?
            .iter()
            .all(|z| z["initialSyncDone"] == true && z["syncing"] == false)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the first syncs never finished; {}", s.logs()));
    let lists = || {
        let m = parse_metrics(&http_get(applier_admin, "/metrics").1);
        sum(
            &m,
            "dnsplane_applier_provider_requests_total",
            &[("account", "embedded"), ("operation", "list")],
        )
    };
    let before = lists();
    let zones = vec![format!("\"{ZONE}\""); 500].join(",");
    let (ok_, out) = call(
        &s,
        Some(token("writer")),
        "Sync",
        &format!(r#"{{"zones":[{zones}],"fresh":true}}"#),
    );
    assert!(ok_, "{out}");
    assert_eq!(
        out.matches("\"phase\": \"done\"").count(),
        1,
        "one zone synced once: {out}"
    );
    assert_eq!(lists() - before, 1.0, "500 mentions, one read");

    // The flood: a burst of 5, then 2 a second; grpcurl cannot go that slowly.
    let mut exhausted = Vec::new();
    let mut served = 0;
    for _ in 0..20 {
        let (ok_, out) = call(&s, Some(token("ops")), "GetStatus", "{}");
        if ok_ {
            served += 1;
        } else {
            exhausted.push(out);
        }
    }
    assert!(!exhausted.is_empty(), "never limited ({served} served)");
    assert!((5..20).contains(&served), "{served} served");
    for out in &exhausted {
        assert!(out.contains("Code: ResourceExhausted"), "{out}");
        assert!(
            out.contains("rate limit") && out.contains("retry in"),
            "{out}"
        );
    }
    // Another caller is not held by it.
    ok(&s, token("team-a"), "GetStatus", "{}");
    let m = parse_metrics(&http_get(planner_admin, "/metrics").1);
    assert_eq!(
        sum(
            &m,
            "dnsplane_planner_api_calls_total",
            &[("caller", "ops"), ("code", "RESOURCE_EXHAUSTED")]
        ),
        exhausted.len() as f64
    );
}

/// The planner's GetStatus reason of rule `tokens_file`, asked with `bearer`.
fn tokens_reason(s: &Stack, bearer: &str) -> Option<serde_json::Value> {
    let (ok, out) = call(s, Some(bearer), "GetStatus", "{}");
    let st: serde_json::Value = serde_json::from_str(&out).ok().filter(|_| ok)?;
    st["reasons"]
        .as_array()?
        .iter()
        .find(|r| r["rule"] == "tokens_file")
        .cloned()
}

/// A tokens file that is garbage or empty keeps the tokens read before and makes
/// status degraded with the reason; a deleted one revokes every token (fail closed)
/// and says so in the refusal, the log and the health gauge; restoring it restores
/// access and clears the reason. Before, status said `healthy` throughout and a
/// deleted file silently kept every old token valid.
#[test]
fn a_broken_or_deleted_tokens_file_is_in_status_and_deletion_revokes() {
    let Some(tools) = Tools::find() else { return };
    let (mut s, _other) = auth_stack(tools, "metrics_open = true\n");
    let admin = free_port();
    s.start_applier();
    s.start_planner_with_admin(admin);
    let reader = token("reader");
    assert!(tokens_reason(&s, reader).is_none(), "{}", s.logs());

    for (text, says) in [
        ("this is [[ not toml", "tokens.toml:1"),
        ("", "no [[token]]"),
    ] {
        std::fs::write(s.path("tokens.toml"), text).expect("break");
        let r = wait_for(Duration::from_secs(10), || tokens_reason(&s, reader))
            .unwrap_or_else(|| panic!("no tokens_file reason for {text:?}; {}", s.logs()));
        assert_eq!(r["level"], "degraded", "{r}");
        let message = r["message"].as_str().unwrap();
        assert!(message.contains(says), "{text:?}: {message}");
        assert!(
            message.contains("tokens read before stay in force"),
            "{message}"
        );
        std::fs::write(s.path("tokens.toml"), tokens_file(TOKENS)).expect("restore");
        wait_for(Duration::from_secs(10), || {
            tokens_reason(&s, reader).is_none().then_some(())
        })
        .unwrap_or_else(|| panic!("the reason stayed after the fix; {}", s.logs()));
    }

    std::fs::remove_file(s.path("tokens.toml")).expect("delete");
    let refusal = wait_for(Duration::from_secs(10), || {
        let (ok, out) = call(&s, Some(reader), "GetStatus", "{}");
        (!ok).then_some(out)
    })
    .unwrap_or_else(|| panic!("the old token still works; {}", s.logs()));
    assert!(refusal.contains("Code: Unauthenticated"), "{refusal}");
    assert!(refusal.contains("revoked"), "{refusal}");
    let metrics = http_get(admin, "/metrics").1;
    assert!(
        metrics.contains("dnsplane_planner_health{level=\"degraded\"} 1"),
        "{metrics}"
    );
    let log = s.planner.as_ref().expect("planner").log_text();
    assert!(log.contains("revoked"), "{log}");

    std::fs::write(s.path("tokens.toml"), tokens_file(TOKENS)).expect("restore");
    wait_for(Duration::from_secs(10), || {
        call(&s, Some(reader), "GetStatus", "{}").0.then_some(())
    })
    .unwrap_or_else(|| panic!("the restored file's tokens do not work; {}", s.logs()));
    assert!(tokens_reason(&s, reader).is_none());
}
