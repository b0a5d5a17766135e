//! The config file: the documented format, defaults, and every problem named.
use super::*;
use crate::provider::memory::dns::rrl::DnsRateLimit;
use crate::provider::pdns::SecretSource;
use crate::provider::rfc2136::TsigAlgorithm;

fn parse(text: &str) -> Result<ApplierConfig, ConfigError> {
    ApplierConfig::from_toml(Path::new("applier.toml"), text)
}

const EXAMPLE: &str = r#"
cache_ttl = "45s"
max_concurrent_batches = 4
[retry]
max_attempts = 3
base_delay = "50ms"
[[accounts]]
name = "embedded"
driver = "memory"
zones = ["Example.COM", "example.org."]
state_dir = ".dnsplane-state/embedded"
dns_listen = "127.0.0.1:10053"
"#;

/// A bad `dns_listen` inside `[[accounts]]` names the key and the value (it said only
/// "invalid socket address syntax", at the table's first line; issue 35).
#[test]
fn a_bad_dns_listen_names_the_key_and_the_value() {
    let e = parse(&EXAMPLE.replace("\"127.0.0.1:10053\"", "\"garbage\"")).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("dns_listen = \"garbage\"") && e.contains("127.0.0.1:10053"),
        "{e}"
    );
}

/// An error inside `[[accounts]]` is shown at the key's own line and names its path:
/// the account is read whole, so it was shown at the `[[accounts]]` header, naming no
/// key when the driver's value had the wrong type (issue 35).
#[test]
fn an_account_error_is_shown_at_its_key_line_with_its_path() {
    for (extra, line, want) in [
        (
            "dns_rate_limit = { burst = \"x\" }\n",
            "line 13, column 1\n   |\n13 | dns_rate_limit",
            "dns_rate_limit.burst: invalid type: string \"x\", expected u32",
        ),
        (
            "[accounts.dns_rate_limit]\nslip = 1\nburst = -1\n",
            "line 15, column 1\n   |\n15 | burst",
            "dns_rate_limit.burst: invalid value: integer `-1`",
        ),
        (
            "bogus = 1\n",
            "line 13, column 1\n   |\n13 | bogus",
            "unknown field `bogus`",
        ),
        (
            "circuit = { jitter = \"many\" }\n",
            "line 13, column 1\n   |\n13 | circuit",
            "circuit.jitter: invalid type",
        ),
    ] {
        let e = parse(&format!("{EXAMPLE}{extra}")).unwrap_err().to_string();
        assert!(
            e.contains(line) && e.contains(want),
            "{line:?} / {want:?} not in:\n{e}"
        );
    }
    // An unknown driver is named with those there are.
    let e = parse(&EXAMPLE.replace("\"memory\"", "\"azrue\""))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 9")
            && e.contains("unknown variant `azrue`, expected one of `memory`, `pdns`"),
        "{e}"
    );
}

/// Every name in [`DRIVERS`] is read as its own driver (the hand-written dispatch and
/// the list cannot drift apart): its table's own keys are asked for, never an
/// unknown variant.
#[test]
fn every_driver_name_is_read_by_its_driver() {
    for name in DRIVERS {
        match DriverConfig::from_table(name, toml::Table::new()) {
            Ok(d) => assert_eq!(d.name(), name),
            Err(e) => assert!(!e.contains("unknown variant"), "{name}: {e}"),
        }
    }
}

#[test]
fn parses_the_documented_format() {
    let c = parse(EXAMPLE).unwrap();
    assert_eq!(c.cache_ttl, Duration::from_secs(45));
    assert_eq!(c.max_concurrent_batches, 4);
    assert_eq!(c.shutdown_grace, Duration::from_secs(10));
    assert_eq!(c.retry.max_attempts, 3);
    assert_eq!(c.retry.base_delay, Duration::from_millis(50));
    assert_eq!(c.retry.max_delay, RetryPolicy::default().max_delay);
    let DriverConfig::Memory(m) = &c.accounts[0].driver else {
        panic!("a memory account: {:?}", c.accounts[0]);
    };
    assert_eq!(c.accounts[0].zones[0].as_str(), "example.com.");
    assert_eq!(m.dns_listen, Some("127.0.0.1:10053".parse().unwrap()));
    assert_eq!(m.dns_rate_limit, DnsRateLimit::default());
    let embedded = ApplierConfig::embedded(".dnsplane-state/embedded", None, vec![]);
    assert_eq!(embedded.accounts[0].name, EMBEDDED_ACCOUNT);
}

#[test]
fn the_dns_rate_limit_is_a_table_of_the_memory_account() {
    let c = parse(&format!(
        "{EXAMPLE}[accounts.dns_rate_limit]\nresponses_per_second = 5\nslip = 0\n"
    ))
    .unwrap();
    let DriverConfig::Memory(m) = &c.accounts[0].driver else {
        panic!("a memory account");
    };
    assert_eq!(
        m.dns_rate_limit,
        DnsRateLimit {
            responses_per_second: 5,
            burst: 200,
            slip: 0
        }
    );
    let err = parse(&format!(
        "{EXAMPLE}[accounts.dns_rate_limit]\nresponses_per_second = 5\nburst = 0\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("accounts[0].dns_rate_limit.burst"), "{err}");
    let err = parse(&format!("{EXAMPLE}[accounts.dns_rate_limit]\nrate = 5\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `rate`"), "{err}");
}

#[test]
fn errors_name_the_file_and_the_problem() {
    for (text, want) in [
        (
            EXAMPLE.replace("cache_ttl", "cache_tll"),
            "unknown field `cache_tll`",
        ),
        (
            EXAMPLE.replace("dns_listen", "dns_lisen"),
            "unknown field `dns_lisen`",
        ),
        (
            EXAMPLE.replace("\"memory\"", "\"route66\""),
            "unknown variant `route66`",
        ),
        (EXAMPLE.replace("Example.COM", "bad..name"), "bad..name"),
        (EXAMPLE.replace("\"45s\"", "\"soon\""), "cache_ttl"),
        (
            EXAMPLE.replace("max_concurrent_batches = 4", "max_concurrent_batches = 0"),
            "max_concurrent_batches",
        ),
        (
            format!(
                "{EXAMPLE}{}",
                &EXAMPLE[EXAMPLE.find("[[accounts]]").unwrap()..]
            ),
            "is used by another account",
        ),
        ("cache_ttl = \"1s\"".to_string(), "no [[accounts]]"),
        (
            EXAMPLE.replace("zones = [\"Example.COM\", \"example.org.\"]", "zones = []"),
            "hosts nothing",
        ),
    ] {
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.starts_with("config applier.toml: "), "{e}");
        assert!(e.contains(want), "{want:?} not in: {e}");
    }
    let e = load_config(Path::new("/nonexistent/applier.toml")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/applier.toml"), "{e}");
}

/// The reliability tables: retry knobs, an account's circuit and fault rules.
const RELIABILITY: &str = r#"
[retry]
max_attempts = 5
max_retry_after = "8s"
batch_deadline = "30s"
[[accounts]]
name = "embedded"
driver = "memory"
zones = ["example.com."]
state_dir = "state"
[accounts.circuit]
cool_down = "2s"
max_cool_down = "20s"
jitter = 0.0
[[accounts.faults]]
op = "apply"
action = "ambiguous_after_commit"
times = 1
[[accounts.faults]]
action = "other_writer"
records = [{ name = "taken.example.com.", type = "A", values = ["198.51.100.7"] }]
"#;

#[test]
fn parses_retry_circuit_and_fault_tables() {
    let c = parse(RELIABILITY).unwrap();
    assert_eq!(c.retry.max_attempts, 5);
    assert_eq!(c.retry.max_retry_after, Duration::from_secs(8));
    assert_eq!(c.retry.batch_deadline, Duration::from_secs(30));
    assert_eq!(c.retry.base_delay, RetryPolicy::default().base_delay);
    let account = &c.accounts[0];
    assert_eq!(account.circuit.cool_down, Duration::from_secs(2));
    assert_eq!(account.circuit.jitter, 0.0);
    assert_eq!(account.faults.len(), 2);
    assert_eq!(
        compile_rules(&account.faults, &account.zones)
            .unwrap()
            .len(),
        2
    );
    // Defaults when the tables are absent.
    let plain = parse(EXAMPLE).unwrap();
    assert_eq!(plain.accounts[0].circuit, CircuitConfig::default());
    assert!(plain.accounts[0].faults.is_empty());
}

/// The example in docs/reliability.md is a valid config.
#[test]
fn the_documented_fault_example_is_valid() {
    let doc = include_str!("../../../docs/reliability.md");
    let block = dnsplane_testing::docs::code_block_with(doc, "toml\n", "[[accounts.faults]]");
    let c = parse(block).unwrap_or_else(|e| panic!("{e}\n{block}"));
    assert_eq!(c.accounts[0].faults.len(), 4);
    assert_eq!(c.accounts[0].circuit.cool_down, Duration::from_secs(5));
}

#[test]
fn reliability_problems_name_the_table() {
    for (from, to, want) in [
        (
            "cool_down = \"2s\"",
            "cool_down = \"0s\"",
            "accounts[0].circuit.cool_down",
        ),
        ("jitter = 0.0", "jitter = 2.0", "accounts[0].circuit.jitter"),
        ("jitter = 0.0", "jiter = 0.0", "unknown field `jiter`"),
        ("max_attempts = 5", "max_attempts = 0", "retry.max_attempts"),
        (
            "times = 1",
            "times = 1\ndelay = \"1s\"",
            "accounts[0].faults[0]: action ambiguous_after_commit does not use delay",
        ),
        (
            "taken.example.com.",
            "taken.example.net.",
            "accounts[0].faults[1]: records[0]",
        ),
        (
            "action = \"other_writer\"",
            "action = \"meteor\"",
            "unknown variant `meteor`",
        ),
    ] {
        assert!(RELIABILITY.contains(from), "{from}");
        let e = parse(&RELIABILITY.replace(from, to))
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{want:?} not in: {e}");
    }
}

// --- the drivers that talk to an existing server ------------------------------

const PDNS: &str = r#"
[[accounts]]
name = "powerdns"
driver = "pdns"
zones = ["Example.COM"]
api_url = "http://127.0.0.1:8081/api/v1"
api_key_file = "/etc/dnsplane/pdns-api-key"
"#;

const ROUTE53: &str = r#"
[[accounts]]
name = "aws"
driver = "route53"
zones = ["example.com."]
"#;

const CLOUDDNS: &str = r#"
[[accounts]]
name = "gcp"
driver = "clouddns"
zones = ["example.com."]
project = "my-project"
"#;

const CLOUDFLARE: &str = r#"
[[accounts]]
name = "cf"
driver = "cloudflare"
zones = ["example.com."]
"#;

const BIND: &str = r#"
[[accounts]]
name = "bind"
driver = "rfc2136"
zones = ["example.org.", "example.net."]
server = "127.0.0.1:5353"
tsig_key_name = "dnsplane-key"
tsig_algorithm = "hmac-sha512"
tsig_secret_file = "/etc/bind/dnsplane.key"
timeout = "3s"
axfr = false
"#;

fn parse_text(text: &str) -> Result<ApplierConfig, String> {
    parse(text).map_err(|e| e.to_string())
}

#[test]
fn parses_both_drivers_with_their_defaults() {
    let c = parse_text(&format!("{PDNS}{BIND}")).unwrap();
    let DriverConfig::Pdns(d) = &c.accounts[0].driver else {
        panic!("{:?}", c.accounts[0]);
    };
    assert_eq!(c.accounts[0].driver.name(), "pdns");
    assert_eq!(c.accounts[0].zones[0].as_str(), "example.com.");
    assert_eq!(d.server_id, "localhost");
    assert_eq!(d.timeout, Duration::from_secs(10));
    assert_eq!(
        d.api_key(),
        SecretSource::File("/etc/dnsplane/pdns-api-key".into())
    );
    let env = parse_text(&PDNS.replace(
        "api_key_file = \"/etc/dnsplane/pdns-api-key\"",
        "api_key_env = \"PDNS_API_KEY\"",
    ))
    .unwrap();
    let DriverConfig::Pdns(p) = &env.accounts[0].driver else {
        panic!()
    };
    assert_eq!(p.api_key(), SecretSource::Env("PDNS_API_KEY".into()));

    let DriverConfig::Rfc2136(d) = &c.accounts[1].driver else {
        panic!("{:?}", c.accounts[1]);
    };
    assert_eq!(c.accounts[1].name, "bind");
    assert_eq!(c.accounts[1].zones.len(), 2);
    assert_eq!(d.tsig_algorithm, Some(TsigAlgorithm::HmacSha512));
    assert_eq!(d.timeout, Duration::from_secs(3));
    assert!(!d.axfr);
    let minimal = parse_text(
        "[[accounts]]\nname = \"b\"\ndriver = \"rfc2136\"\nzones = [\"a.test\"]\nserver = \"ns1.example:53\"\n",
    )
    .unwrap();
    let DriverConfig::Rfc2136(r) = &minimal.accounts[0].driver else {
        panic!()
    };
    assert!(r.axfr && r.tsig_secret_file.is_none() && r.tsig_algorithm.is_none());
}

#[test]
fn fault_rules_and_the_circuit_apply_to_both_drivers() {
    for base in [PDNS, BIND] {
        let c = parse_text(&format!(
            "{base}[accounts.circuit]\ncool_down = \"2s\"\n\
             [[accounts.faults]]\nop = \"apply\"\naction = \"ambiguous_after_commit\"\ntimes = 1\n"
        ))
        .unwrap();
        let a = &c.accounts[0];
        assert_eq!(a.faults.len(), 1);
        assert_eq!(a.circuit.cool_down, Duration::from_secs(2));
        assert_eq!(compile_rules(&a.faults, &a.zones).unwrap().len(), 1);
        let plain = parse_text(base).unwrap();
        assert!(plain.accounts[0].faults.is_empty());
    }
}

/// The minimal configs docs/providers.md gives users parse and validate as is.
#[test]
fn the_documented_configs_load() {
    let doc = include_str!("../../../docs/providers.md");
    let blocks: Vec<String> = dnsplane_testing::docs::code_blocks(doc, "toml")
        .into_iter()
        .map(|body| {
            // Indented inside a list item: strip the common indent.
            body.lines()
                .map(|l| l.strip_prefix("   ").unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert_eq!(blocks.len(), 7, "one block per driver");
    let drivers: Vec<&str> = blocks
        .iter()
        .map(|b| {
            let c = parse_text(b).unwrap_or_else(|e| panic!("{e}\n{b}"));
            c.accounts[0].driver.name()
        })
        .collect();
    assert_eq!(
        drivers,
        [
            "pdns",
            "rfc2136",
            "route53",
            "clouddns",
            "cloudflare",
            "azure",
            "webhook"
        ]
    );
}

/// The README's short applier.toml parses and validates as written.
#[test]
fn the_readmes_applier_config_loads() {
    let readme = include_str!("../../../README.md");
    let block = dnsplane_testing::docs::code_block_with(readme, "toml", "[[accounts]]");
    let c = parse_text(block).unwrap_or_else(|e| panic!("{e}\n{block}"));
    assert_eq!(c.accounts[0].driver.name(), "memory");
}

#[test]
fn driver_problems_are_named() {
    for (text, want) in [
        (
            PDNS.replace("api_url = \"http://127.0.0.1:8081/api/v1\"\n", ""),
            "missing field `api_url`",
        ),
        (
            PDNS.replace("http://127.0.0.1:8081/api/v1", "ftp://x"),
            "accounts[0].api_url \"ftp://x\" must be an http:// or https:// URL",
        ),
        (
            PDNS.replace("api_key_file = \"/etc/dnsplane/pdns-api-key\"\n", ""),
            "accounts[0]: the API key is missing",
        ),
        (
            format!("{PDNS}api_key_env = \"K\"\n"),
            "set only one of api_key_file and api_key_env",
        ),
        (
            format!("{PDNS}api_key = \"s3cret\"\n"),
            "unknown field `api_key`",
        ),
        (
            PDNS.replace("[\"Example.COM\"]", "[]"),
            "accounts[0].zones is empty",
        ),
        (
            PDNS.replace("[\"Example.COM\"]", "[\"a.test\", \"A.test.\"]"),
            "lists a.test. twice",
        ),
        (format!("{PDNS}timeout = \"0s\"\n"), "accounts[0].timeout"),
        (
            BIND.replace("127.0.0.1:5353", "127.0.0.1"),
            "accounts[0].server \"127.0.0.1\" must be address:port",
        ),
        (
            BIND.replace("tsig_secret_file = \"/etc/bind/dnsplane.key\"\n", ""),
            "tsig_key_name is set but tsig_secret_file is not",
        ),
        (
            BIND.replace("hmac-sha512", "hmac-md5"),
            "unknown variant `hmac-md5`",
        ),
        (
            format!("{BIND}state_dir = \"x\"\n"),
            "unknown field `state_dir`",
        ),
        (
            format!("{PDNS}{}", PDNS.replace("Example.COM", "other.test")),
            "accounts[1].name \"powerdns\" is used by another account",
        ),
        (
            format!("{ROUTE53}zone_ids = {{ \"other.test.\" = \"Z1\" }}\n"),
            "accounts[0].zone_ids names other.test., which is not among the account's zones",
        ),
        (
            format!("{ROUTE53}zone_ids = {{ \"example.com.\" = \"/hostedzone/../x\" }}\n"),
            "is not a hosted zone id",
        ),
        (
            format!("{ROUTE53}zone_visibility = \"secret\"\n"),
            "unknown variant `secret`",
        ),
        (
            format!("{ROUTE53}endpoint = \"route53.amazonaws.com\"\n"),
            "accounts[0].endpoint \"route53.amazonaws.com\"",
        ),
        (
            format!("{ROUTE53}aws_secret_access_key = \"s3cret\"\n"),
            "unknown field `aws_secret_access_key`",
        ),
        (
            CLOUDDNS.replace("project = \"my-project\"\n", ""),
            "missing field `project`",
        ),
        (
            CLOUDDNS.replace("my-project", "My Project"),
            "accounts[0].project \"My Project\" is not a project id",
        ),
        (
            format!("{CLOUDDNS}zone_names = {{ \"other.test.\" = \"other\" }}\n"),
            "accounts[0].zone_names names other.test., which is not among the account's zones",
        ),
        (
            format!("{CLOUDDNS}zone_names = {{ \"example.com.\" = \"Example_Com\" }}\n"),
            "is not a managed zone name",
        ),
        (
            format!("{CLOUDDNS}endpoint = \"dns.googleapis.com\"\n"),
            "accounts[0].endpoint \"dns.googleapis.com\"",
        ),
        (
            format!("{CLOUDDNS}wait_done = true\ndone_timeout = \"0s\"\n"),
            "accounts[0].done_timeout must be more than 0s",
        ),
        (
            format!("{CLOUDDNS}access_token = \"s3cret\"\n"),
            "unknown field `access_token`",
        ),
        (
            format!("{CLOUDFLARE}api_token = \"s3cret\"\n"),
            "unknown field `api_token`",
        ),
        (
            format!("{CLOUDFLARE}api_token_env = \"T\"\napi_token_file = \"/t\"\n"),
            "accounts[0]: set only one of api_token_env and api_token_file",
        ),
        (
            format!(
                "{CLOUDFLARE}zone_ids = {{ \"other.test.\" = \"023e105f4ecef8ad9ca31a8372d0c353\" }}\n"
            ),
            "accounts[0].zone_ids names other.test., which is not among the account's zones",
        ),
        (
            format!("{CLOUDFLARE}endpoint = \"api.cloudflare.com\"\n"),
            "accounts[0].endpoint \"api.cloudflare.com\"",
        ),
        (
            format!("{CLOUDFLARE}plan = \"gold\"\n"),
            "unknown variant `gold`",
        ),
    ] {
        let e = parse_text(&text).unwrap_err();
        assert!(e.starts_with("config applier.toml: "), "{e}");
        assert!(e.contains(want), "{want:?} not in: {e}");
        assert!(!e.contains("s3cret"), "{e}");
    }
}

#[test]
fn a_clouddns_account_has_googles_defaults() {
    let c = parse_text(CLOUDDNS).unwrap();
    let DriverConfig::CloudDns(d) = &c.accounts[0].driver else {
        panic!("{:?}", c.accounts[0]);
    };
    assert_eq!(c.accounts[0].driver.name(), "clouddns");
    assert_eq!(d.project, "my-project");
    assert_eq!(d.endpoint, "https://dns.googleapis.com");
    assert_eq!(d.timeout, Duration::from_secs(30));
    assert!(!d.wait_done && d.zone_names.is_empty() && d.credentials_file.is_none());
}

#[test]
fn the_record_cache_drift_check_defaults_to_15m_and_0s_turns_the_cache_off() {
    let c = parse(EXAMPLE).unwrap();
    assert_eq!(c.record_cache_drift_check, Duration::from_secs(15 * 60));
    let c = parse(&format!("record_cache_drift_check = \"0s\"\n{EXAMPLE}")).unwrap();
    assert!(c.record_cache_drift_check.is_zero());
    let e = parse(&format!("record_cache_drift_check = \"10ms\"\n{EXAMPLE}")).unwrap_err();
    assert!(e.to_string().contains("record_cache_drift_check"), "{e}");
}

#[test]
fn a_webhook_account_has_external_dns_defaults() {
    let c = parse_text(
        "[[accounts]]\nname = \"hetzner\"\ndriver = \"webhook\"\nzones = [\"example.com.\"]\n",
    )
    .unwrap();
    let DriverConfig::Webhook(w) = &c.accounts[0].driver else {
        panic!("{:?}", c.accounts[0]);
    };
    assert_eq!(c.accounts[0].driver.name(), "webhook");
    assert_eq!(w.url, "http://localhost:8888");
    assert_eq!(w.timeout, Duration::from_secs(15));
    assert_eq!(w.default_ttl, 300);
    let base = "[[accounts]]\nname = \"w\"\ndriver = \"webhook\"\nzones = [\"example.com.\"]\n";
    for (text, want) in [
        (
            format!("{base}url = \"localhost:8888\"\n"),
            "accounts[0].url \"localhost:8888\"",
        ),
        (
            format!("{base}timeout = \"0s\"\n"),
            "accounts[0].timeout must be more than 0s",
        ),
        (
            format!("{base}default_ttl = 0\n"),
            "accounts[0].default_ttl must be between 1",
        ),
        (
            format!("{base}endpoint = \"x\"\n"),
            "unknown field `endpoint`",
        ),
    ] {
        let e = parse_text(&text).unwrap_err();
        assert!(e.contains(want), "{want:?} not in: {e}");
    }
}

#[test]
fn tls_paths_are_relative_to_the_config_and_allowed_names_need_a_client_ca() {
    let accounts = "[[accounts]]\nname = \"a\"\ndriver = \"memory\"\nzones = [\"example.com\"]\nstate_dir = \"s\"\n";
    let c = ApplierConfig::from_toml(
        Path::new("/etc/dnsplane/applier.toml"),
        &format!("{accounts}[tls]\ncert = \"tls/applier.crt\"\nkey = \"/abs/applier.key\"\nclient_ca = \"ca.pem\"\nallowed_names = [\"planner\"]\n"),
    )
    .unwrap();
    let tls = c.tls.unwrap();
    assert_eq!(tls.cert, Path::new("/etc/dnsplane/tls/applier.crt"));
    assert_eq!(tls.key, Path::new("/abs/applier.key"));
    assert_eq!(
        tls.client_ca.as_deref(),
        Some(Path::new("/etc/dnsplane/ca.pem"))
    );
    assert_eq!(tls.allowed_names, vec!["planner".to_string()]);

    let e = parse(&format!(
        "{accounts}[tls]\ncert = \"c\"\nkey = \"k\"\nallowed_names = [\"planner\"]\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("tls.allowed_names needs tls.client_ca"), "{e}");
    let e = parse(&format!(
        "{accounts}[tls]\ncert = \"c\"\nkey = \"k\"\nca = \"x\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown field") && e.contains("ca"), "{e}");
}
