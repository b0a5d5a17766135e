//! Issue 17: secrets never reach logs, spans, `/status` or error messages.
//!
//! One applier holds an account of every driver that has a secret, each against the
//! real server or the in-repo emulator the suite already runs — PowerDNS (API key),
//! BIND (TSIG), Route 53, Cloud DNS and Cloudflare (emulated, credentials checked),
//! a webhook server reached through a URL with `user:password@`, and memory accounts
//! whose quota lives in a Redis that requires a password — once with the right
//! secret and once with a wrong, unique one (`SECRET-…`). The planner holds its
//! lease in the same Redis, with a password of its own. Both run at `debug` with
//! traces exported over OTLP to a receiver in the test.
//!
//! Then the flows that touch every secret: syncs that succeed; reads through every
//! wrong account (401/403, BADSIG, refused tokens, WRONGPASS, a closed port); batches
//! that the provider refuses (403) or fails (500); both `/status` endpoints,
//! both `GetStatus`, the records' states; and three configs that are refused, with
//! the secret in the bad value. Nothing any process printed, no exported span, no
//! status body and no gRPC answer may hold any secret, nor its base64.
use crate::stack::Tools;
use base64::Engine as _;
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_e2e::webhook_reference::WebhookReference;
use dnsplane_e2e::{Proc, binary, free_port, grpcurl, http_get, num, wait_for};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const PDNS_WRONG: &str = "SECRET-pdns-wrong-3f9a1c7e";
const TSIG_WRONG: &str = "SECRET-tsig-wrong-8b2d5f10";
const R53_WRONG: &str = "SECRET-r53-wrong-5e7b20c9";
const GCP_REFRESH_WRONG: &str = "SECRET-gcp-refresh-a41c88e2";
const GCP_CLIENT_WRONG: &str = "SECRET-gcp-client-90d3b7f1";
const CF_WRONG: &str = "SECRET-cf-wrong-c3e8f1a0";
const REDIS_QUOTA: &str = "SECRET-redis-quota-77aa01be";
const REDIS_WRONG: &str = "SECRET-redis-wrong-19fe52c4";
const REDIS_LEASE: &str = "SECRET-redis-lease-4d0c6e93";
const WEBHOOK: &str = "SECRET-webhook-b5a9d2e7";
const WEBHOOK_DOWN: &str = "SECRET-webhook-down-0e61f4b3";
const BADCFG_REDIS: &str = "SECRET-badcfg-redis-2c8e5a19";
const BADCFG_LEASE: &str = "SECRET-badcfg-lease-6f13c0d8";
const BADCFG_TSIG: &str = "SECRET-badcfg-tsig-d047e2b6";

const ENV_DEBUG: [(&str, &str); 2] = [("DNSPLANE_LOG", "debug"), ("RUST_LOG", "debug")];

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The `secret "…"` of a BIND key file.
fn tsig_secret(key_file: &Path) -> String {
    let text = std::fs::read_to_string(key_file).expect("key file");
    let start = text.find("secret \"").expect("a secret") + "secret \"".len();
    text[start..].split('"').next().expect("quoted").to_string()
}

/// Every place a secret is not allowed, by name: the needles of each secret (itself,
/// its base64) in every haystack.
fn leaks(secrets: &[(String, String)], haystacks: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (what, secret) in secrets {
        let mut needles = vec![secret.clone(), b64(secret)];
        needles.push(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret));
        for (place, text) in haystacks {
            for n in &needles {
                if let Some(at) = text.find(n.as_str()) {
                    let from = text[..at]
                        .char_indices()
                        .rev()
                        .nth(120)
                        .map_or(0, |(i, _)| i);
                    let to = (at + n.len() + 80).min(text.len());
                    let to = (to..=text.len())
                        .find(|i| text.is_char_boundary(*i))
                        .unwrap_or(text.len());
                    found.push(format!("{what} ({n}) in {place}: …{}…", &text[from..to]));
                }
            }
        }
    }
    found
}

#[test]
fn no_secret_reaches_logs_spans_status_or_errors() {
    let Some(tools) = Tools::find() else { return };
    let Some(pdns) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let Some(bind) = RealServer::start(Kind::Bind) else {
        return;
    };
    let Some(redis) = Redis::start_with(&[
        "--user",
        "quota",
        "on",
        &format!(">{REDIS_QUOTA}"),
        "~*",
        "&*",
        "+@all",
        "--user",
        "lease",
        "on",
        &format!(">{REDIS_LEASE}"),
        "~*",
        "&*",
        "+@all",
    ]) else {
        return;
    };
    let r53 = RealServer::start(Kind::Route53).expect("in-process emulator");
    let gcp = RealServer::start(Kind::CloudDns).expect("in-process emulator");
    let cf = RealServer::start(Kind::Cloudflare).expect("in-process emulator");
    let (
        RealServer::Pdns(p),
        RealServer::Bind(b),
        RealServer::Route53(r),
        RealServer::CloudDns(g),
        RealServer::Cloudflare(c),
    ) = (&pdns, &bind, &r53, &gcp, &cf)
    else {
        unreachable!("started each kind")
    };

    let rt = crate::stack::threaded_runtime(2);
    let receiver = dnsplane_testing::otlp::OtlpReceiver::default();
    let collector = format!("http://{}", rt.block_on(receiver.start()));
    let hook = rt.block_on(WebhookReference::start(json!({"include": ["hook.test"]})));

    let dir = tempfile::tempdir().expect("tempdir");
    let path = |f: &str| dir.path().join(f);
    let write = |f: &str, text: &str| {
        std::fs::write(path(f), text).expect("write");
        path(f).display().to_string()
    };
    let pdns_key = std::fs::read_to_string(&p.api_key_file)
        .expect("pdns key")
        .trim()
        .to_string();
    let tsig = tsig_secret(&b.key_file);
    let tsig_wrong = b64(TSIG_WRONG);

    // The secrets: the harness's own (right) ones and the wrong ones written here.
    let secrets: Vec<(String, String)> = [
        ("the PowerDNS API key", pdns_key.as_str()),
        ("a wrong PowerDNS key", PDNS_WRONG),
        ("the TSIG secret", tsig.as_str()),
        ("a wrong TSIG secret", TSIG_WRONG),
        ("a wrong TSIG secret (base64)", tsig_wrong.as_str()),
        (
            "the AWS secret key",
            dnsplane_emulate::DEFAULT_SECRET_ACCESS_KEY,
        ),
        ("a wrong AWS secret key", R53_WRONG),
        (
            "the Cloud DNS / Cloudflare token",
            dnsplane_emulate::clouddns::DEFAULT_TOKEN,
        ),
        ("the Google client secret", "emulator-client-secret"),
        ("the Google refresh token", "emulator-refresh-token"),
        ("a wrong Google refresh token", GCP_REFRESH_WRONG),
        ("a wrong Google client secret", GCP_CLIENT_WRONG),
        ("a wrong Cloudflare token", CF_WRONG),
        ("the quota's Redis password", REDIS_QUOTA),
        ("a wrong Redis password", REDIS_WRONG),
        ("the lease's Redis password", REDIS_LEASE),
        ("the webhook URL's password", WEBHOOK),
        ("an unreachable webhook URL's password", WEBHOOK_DOWN),
        ("a bad quota.redis", BADCFG_REDIS),
        ("a bad lease.redis", BADCFG_LEASE),
        ("a bad TSIG secret", BADCFG_TSIG),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();

    // --- the applier: every driver, right and wrong --------------------------------
    let pdns_wrong_file = write("pdns-wrong.key", &format!("{PDNS_WRONG}\n"));
    let tsig_wrong_file = write(
        "tsig-wrong.key",
        &format!(
            "key \"{}\" {{\n\talgorithm hmac-sha256;\n\tsecret \"{tsig_wrong}\";\n}};\n",
            b.key_name
        ),
    );
    let aws_wrong_file = write(
        "aws-wrong",
        &format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {R53_WRONG}\n",
            dnsplane_emulate::DEFAULT_ACCESS_KEY_ID
        ),
    );
    let gcp_wrong_file = write(
        "gcp-wrong.json",
        &json!({
            "type": "authorized_user",
            "client_id": "dnsplane-e2e.apps.googleusercontent.com",
            "client_secret": GCP_CLIENT_WRONG,
            "refresh_token": GCP_REFRESH_WRONG,
            "token_uri": g.token_uri,
        })
        .to_string(),
    );
    let cf_wrong_file = write("cf-wrong", &format!("{CF_WRONG}\n"));
    let retarget = |toml: String, from: &Path, to: &str| {
        let from = from.display().to_string();
        assert!(toml.contains(&from), "{toml}");
        toml.replace(&from, to)
    };
    let redis_url = |user: &str, pw: &str| format!("redis://{user}:{pw}@127.0.0.1:{}", redis.port);
    let hook_url = |pw: &str| {
        hook.url()
            .replace("http://", &format!("http://dnsplane:{pw}@"))
    };
    let memory = |name: &str, zone: &str, url: &str| {
        format!(
            "[[accounts]]\nname = \"{name}\"\ndriver = \"memory\"\nzones = [\"{zone}\"]\n\
             state_dir = \"{}\"\n[accounts.quota]\nrate = 1000.0\nburst = 100\nredis = \"{url}\"\n\
             redis_timeout = \"500ms\"\n",
            path(name).display()
        )
    };
    let applier_toml = [
        pdns.account_toml("pdns"),
        retarget(pdns.account_toml("pdns-bad"), &p.api_key_file, &pdns_wrong_file),
        bind.account_toml("bind"),
        retarget(bind.account_toml("bind-bad"), &b.key_file, &tsig_wrong_file),
        r53.account_toml("route53"),
        retarget(r53.account_toml("route53-bad"), &r.credentials_file, &aws_wrong_file),
        gcp.account_toml("clouddns"),
        retarget(gcp.account_toml("clouddns-bad"), &g.credentials_file, &gcp_wrong_file),
        cf.account_toml("cloudflare"),
        retarget(cf.account_toml("cloudflare-bad"), &c.token_file, &cf_wrong_file),
        format!(
            "[[accounts]]\nname = \"webhook\"\ndriver = \"webhook\"\nzones = [\"hook.test.\"]\nurl = \"{}\"\n",
            hook_url(WEBHOOK)
        ),
        format!(
            "[[accounts]]\nname = \"webhook-bad\"\ndriver = \"webhook\"\nzones = [\"hook.test.\"]\n\
             url = \"http://dnsplane:{WEBHOOK_DOWN}@127.0.0.1:{}\"\ntimeout = \"2s\"\n",
            free_port()
        ),
        memory("embedded", "mem.test.", &redis_url("quota", REDIS_QUOTA)),
        memory("embedded-bad", "membad.test.", &redis_url("quota", REDIS_WRONG)),
    ]
    .join("\n");
    write("applier.toml", &applier_toml);

    // --- the planner: its lease in Redis, the good accounts' zones -------------------
    let good = [
        ("pdns", pdns.zone().to_string()),
        ("bind", bind.zone().to_string()),
        ("route53", r53.zone().to_string()),
        ("clouddns", gcp.zone().to_string()),
        ("cloudflare", cf.zone().to_string()),
        ("webhook", "hook.test.".to_string()),
        ("embedded", "mem.test.".to_string()),
        ("embedded-bad", "membad.test.".to_string()),
    ];
    let (applier_port, planner_port) = (free_port(), free_port());
    let (applier_admin, planner_admin) = (free_port(), free_port());
    let zones: String = good
        .iter()
        .map(|(account, zone)| {
            format!(
                "[[zones]]\nname = \"{zone}\"\naccount = \"{account}\"\nconflict = \"report\"\n"
            )
        })
        .collect();
    write(
        "planner.toml",
        &format!(
            "owner_id = \"e2e\"\napplier = \"http://127.0.0.1:{applier_port}\"\nstate_dir = \"{}\"\n\
             [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n\
             [lease]\nredis = \"{}\"\n{zones}",
            path("planner-state").display(),
            redis_url("lease", REDIS_LEASE)
        ),
    );

    let mut env: Vec<(&str, &str)> = ENV_DEBUG.to_vec();
    env.push(("OTEL_EXPORTER_OTLP_ENDPOINT", &collector));
    let p_str = |f: &str| path(f).display().to_string();
    let mut applier = Proc::spawn_with_env(
        "applier",
        &binary("dnsplane-applier"),
        &[
            "--config",
            &p_str("applier.toml"),
            "--listen",
            &format!("127.0.0.1:{applier_port}"),
            "--admin-listen",
            &format!("127.0.0.1:{applier_admin}"),
        ],
        &env,
        path("applier.log"),
    );
    let serving = |port: u16| {
        wait_for(Duration::from_secs(30), || {
            let (ok, out) = grpcurl(&tools.grpcurl, &[&format!("127.0.0.1:{port}"), "list"]);
            (ok && out.contains("dnsplane.v1")).then_some(())
        })
    };
    assert!(
        serving(applier_port).is_some(),
        "applier did not start:\n{}",
        applier.log_text()
    );
    let mut planner = Proc::spawn_with_env(
        "planner",
        &binary("dnsplane-planner"),
        &[
            "--config",
            &p_str("planner.toml"),
            "--listen",
            &format!("127.0.0.1:{planner_port}"),
            "--admin-listen",
            &format!("127.0.0.1:{planner_admin}"),
        ],
        &env,
        path("planner.log"),
    );
    let logs = |procs: &[&Proc]| {
        procs
            .iter()
            .map(|p| format!("--- {} ---\n{}\n", p.name, p.log_text()))
            .collect::<String>()
    };
    assert!(
        serving(planner_port).is_some(),
        "planner did not start:\n{}",
        logs(&[&applier, &planner])
    );
    let planner_addr = format!("127.0.0.1:{planner_port}");
    let applier_addr = format!("127.0.0.1:{applier_port}");
    let mut answers: Vec<(String, String)> = Vec::new();

    // Success: one record in every good zone, converged.
    let records: Vec<serde_json::Value> = good
        .iter()
        .map(
            |(_, zone)| json!({"name": format!("t1.{zone}"), "type": "A", "values": ["192.0.2.1"]}),
        )
        .collect();
    let push = |records: &[serde_json::Value]| {
        let body = json!({"source": "scan", "records": records}).to_string();
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &["-d", &body, &planner_addr, "dnsplane.v1.Planner/PutDesired"],
        );
        assert!(ok, "PutDesired: {out}");
    };
    push(&records);
    let converged = |zone: &str| {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[&planner_addr, "dnsplane.v1.Planner/GetStatus"],
        );
        if !ok {
            return None;
        }
        let st: serde_json::Value = serde_json::from_str(&out).ok()?;
        st["zones"]
            .as_array()?
            .iter()
            .find(|z| z["zone"] == zone)
            .map(|z| num(&z["recordsByState"]["converged"]))
    };
    for (account, zone) in &good {
        let done = wait_for(Duration::from_secs(90), || {
            (converged(zone)? >= 1).then_some(())
        });
        assert!(
            done.is_some(),
            "zone {zone} ({account}) did not converge:\n{}",
            logs(&[&applier, &planner])
        );
    }

    // Error paths: a fresh read through every wrong account.
    for (account, zone) in [
        ("pdns-bad", pdns.zone().to_string()),
        ("bind-bad", bind.zone().to_string()),
        ("route53-bad", r53.zone().to_string()),
        ("clouddns-bad", gcp.zone().to_string()),
        ("cloudflare-bad", cf.zone().to_string()),
        ("webhook-bad", "hook.test.".to_string()),
    ] {
        let body = json!({"account": account, "zone": zone, "fresh": true}).to_string();
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[
                "-d",
                &body,
                &applier_addr,
                "dnsplane.v1.Applier/ListRecords",
            ],
        );
        assert!(!ok, "a read through {account} must fail: {out}");
        answers.push((format!("ListRecords through {account}"), out));
    }

    // Failing batches: Cloudflare refuses the next write (403) and Route 53 fails
    // its next change (500), each answering a real request that carried the secret.
    c.add_fault(
        dnsplane_emulate::FaultRule::new(dnsplane_emulate::FaultAction::Error)
            .op("batch")
            .status(403)
            .times(1),
    );
    r.add_fault(
        dnsplane_emulate::FaultRule::new(dnsplane_emulate::FaultAction::Error)
            .op("change")
            .status(500)
            .times(1),
    );
    let mut more = records.clone();
    for zone in [cf.zone(), r53.zone()] {
        more.push(json!({"name": format!("t2.{zone}"), "type": "A", "values": ["192.0.2.2"]}));
    }
    push(&more);
    let refused = wait_for(Duration::from_secs(60), || {
        let body = json!({"zone": cf.zone().to_string()}).to_string();
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[
                "-d",
                &body,
                &planner_addr,
                "dnsplane.v1.Planner/ListRecordStates",
            ],
        );
        (ok && out.contains("t2.") && out.contains("REJECTED")).then_some(out)
    });
    let refused = refused.unwrap_or_else(|| {
        panic!(
            "the refused write does not show:\n{}",
            logs(&[&applier, &planner])
        )
    });
    answers.push(("ListRecordStates after the refused batch".into(), refused));
    let r53_zone = r53.zone().to_string();
    let retried = wait_for(Duration::from_secs(60), || {
        (converged(&r53_zone)? >= 2).then_some(())
    });
    assert!(
        retried.is_some(),
        "the failed Route 53 change was not retried:\n{}",
        logs(&[&applier, &planner])
    );

    // Every status there is.
    for (what, port) in [("applier", applier_admin), ("planner", planner_admin)] {
        for page in ["/status", "/metrics"] {
            let (code, body) = http_get(port, page);
            assert_eq!(code, 200, "{what} {page}: {body}");
            answers.push((format!("{what} {page}"), body));
        }
    }
    for (addr, method) in [
        (&planner_addr, "dnsplane.v1.Planner/GetStatus"),
        (&applier_addr, "dnsplane.v1.Applier/GetStatus"),
        (&planner_addr, "dnsplane.v1.Planner/ListRecordStates"),
    ] {
        let (ok, out) = grpcurl(&tools.grpcurl, &[addr.as_str(), method]);
        assert!(ok, "{method}: {out}");
        answers.push((method.to_string(), out));
    }
    let status = answers
        .iter()
        .find(|(w, _)| w == "applier /status")
        .map(|(_, b)| b.clone())
        .unwrap_or_default();
    assert!(
        status.contains("127.0.0.1"),
        "the applier's /status shows the quota's Redis by address: {status}"
    );

    // Configs that are refused, with the secret in the bad value.
    let refused_config = |bin: &str, file: &str, text: &str, why: &str| {
        let f = write(file, text);
        let out = Command::new(binary(bin))
            .args([
                "--config",
                &f,
                "--listen",
                &format!("127.0.0.1:{}", free_port()),
                "--admin-listen",
                "off",
            ])
            .envs(ENV_DEBUG)
            .output()
            .expect("run");
        let text = crate::stack::combined(&out);
        assert!(
            !out.status.success() && text.contains(why),
            "{bin} must refuse {file} for its {why}: {text}"
        );
        (format!("{bin} refusing {file}"), text)
    };
    answers.push(refused_config(
        "dnsplane-applier",
        "bad-redis.toml",
        &memory(
            "m",
            "m.test.",
            &format!("redis://quota:{BADCFG_REDIS}@127.0.0.1:notaport"),
        ),
        "quota.redis",
    ));
    answers.push(refused_config(
        "dnsplane-planner",
        "bad-lease.toml",
        &format!(
            "applier = \"http://127.0.0.1:1\"\n[lease]\nredis = \"redis://lease:{BADCFG_LEASE}@127.0.0.1:notaport\"\n\
             [[zones]]\nname = \"m.test.\"\naccount = \"m\"\n"
        ),
        "lease.redis",
    ));
    let bad_tsig = write(
        "bad-tsig.key",
        &format!("key \"k\" {{ algorithm hmac-sha256; secret \"{BADCFG_TSIG}!\"; }};\n"),
    );
    answers.push(refused_config(
        "dnsplane-applier",
        "bad-tsig.toml",
        &format!(
            "[[accounts]]\nname = \"b\"\ndriver = \"rfc2136\"\nzones = [\"{}\"]\n\
             server = \"127.0.0.1:{}\"\ntsig_secret_file = \"{bad_tsig}\"\n",
            bind.zone(),
            b.port
        ),
        "TSIG key file",
    ));

    // SIGTERM: both flush their spans.
    planner.terminate();
    applier.terminate();
    let spans = receiver.spans();
    drop(hook);
    drop(rt);
    for service in ["dnsplane-planner", "dnsplane-applier"] {
        assert!(
            spans.iter().any(|s| s.service == service),
            "no span from {service}"
        );
    }
    assert!(
        spans
            .iter()
            .any(|s| s.raw.contains("401") || s.raw.contains("403")),
        "the refused calls are in the spans"
    );

    let mut haystacks = vec![
        ("the applier's output".to_string(), applier.log_text()),
        ("the planner's output".to_string(), planner.log_text()),
        (
            "the exported spans".to_string(),
            spans
                .iter()
                .map(|s| s.raw.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    ];
    haystacks.extend(answers);
    for (place, text) in &haystacks {
        assert!(
            !text.trim().is_empty(),
            "{place} is empty: nothing was scanned"
        );
    }
    let found = leaks(&secrets, &haystacks);
    assert!(found.is_empty(), "secrets leaked:\n{}", found.join("\n"));
}
