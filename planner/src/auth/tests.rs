use super::tokens::digest_hex;
use super::*;

fn zones() -> Vec<Name> {
    vec![
        Name::parse("a.test.").unwrap(),
        Name::parse("b.test.").unwrap(),
    ]
}

fn file(entries: &[(&str, &str, &str, &str)]) -> String {
    dnsplane_testing::tokens::tokens_toml(entries, digest_hex)
}

/// Why `t.toml` holding `text` is refused.
fn refusal(text: &str) -> String {
    TokenSet::parse("t.toml", text, &zones())
        .unwrap_err()
        .to_string()
}

fn auth_with(dir: &tempfile::TempDir, text: &str, rate: u32, burst: u32) -> Authenticator {
    let path = dir.path().join("tokens.toml");
    std::fs::write(&path, text).unwrap();
    Authenticator::new(
        Some(&AuthConfig {
            tokens_file: path,
            metrics_open: true,
            rate_per_second: rate,
            burst,
        }),
        zones(),
    )
    .unwrap()
}

fn bearer_of(token: &str) -> Vec<u8> {
    format!("Bearer {token}").into_bytes()
}

#[test]
fn parse_errors_name_the_file_and_line() {
    let cases = [
        // A TOML syntax error, on line 3.
        ("[[token]]\nname = \"ci\"\nsha256 = \n", 3, "must be quoted"),
        // Not a hash: on the sha256 line.
        (
            "[[token]]\nname = \"ci\"\nrole = \"read\"\nsha256 = \"s3cret\"\n",
            4,
            "64 hex digits",
        ),
        // An unknown role.
        (
            "\n[[token]]\nname = \"ci\"\nsha256 = \"00\"\nrole = \"admin\"\n",
            5,
            "admin",
        ),
        // An unknown key.
        (
            "[[token]]\nname = \"ci\"\nsha256 = \"00\"\nrole = \"read\"\nzone = [\"a.test.\"]\n",
            5,
            "zone",
        ),
    ];
    for (text, line, says) in cases {
        let err = TokenSet::parse("/etc/dnsplane/tokens.toml", text, &zones())
            .expect_err(text)
            .to_string();
        assert!(
            err.starts_with(&format!("/etc/dnsplane/tokens.toml:{line}: ")),
            "{err} (want line {line})"
        );
        assert!(err.contains(says), "{err} (want {says:?})");
    }
}

#[test]
fn checks_names_hashes_and_zones() {
    let two = file(&[("ci", "t1", "read", ""), ("ci", "t2", "read", "")]);
    let err = refusal(&two);
    assert!(
        err.starts_with("t.toml:7: ") && err.contains("two tokens"),
        "{err}"
    );

    let same = file(&[("a", "t1", "read", ""), ("b", "t1", "read", "")]);
    let err = refusal(&same);
    assert!(err.contains("same sha256"), "{err}");

    let unknown_zone = file(&[("a", "t1", "write", "zones = [\"c.test.\"]")]);
    let err = refusal(&unknown_zone);
    assert!(
        err.starts_with("t.toml:5: ") && err.contains("\"c.test.\" is not a configured zone"),
        "{err}"
    );

    for bad in ["anonymous", "has space", ""] {
        let text = file(&[(bad, "t1", "read", "")]);
        let err = refusal(&text);
        assert!(err.starts_with("t.toml:2: "), "{err}");
    }

    let err = TokenSet::parse("t.toml", "# nobody\n", &zones())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("t.toml:1: ") && err.contains("no [[token]]"),
        "{err}"
    );

    let ok = file(&[
        (
            "ci",
            "t1",
            "write",
            "zones = [\"a.test\"]\nname_suffix = \"x.a.test\"",
        ),
        ("ops", "t2", "approve", ""),
    ]);
    let set = TokenSet::parse("t.toml", &ok, &zones()).unwrap();
    assert_eq!(set.names().collect::<Vec<_>>(), ["ci", "ops"]);
    let ci = set.find(b"t1").unwrap();
    assert_eq!(ci.role, Role::Write);
    assert_eq!(
        ci.scope.describe(),
        "zones [a.test.], names at or below x.a.test."
    );
}

/// The token is found by the digest of what is presented: its own bytes only, not a
/// prefix, not its hash, not the token with a byte changed.
#[test]
fn find_matches_only_the_whole_token() {
    let set = TokenSet::parse(
        "t.toml",
        &file(&[
            ("a", "alpha-token", "read", ""),
            ("b", "beta-token", "write", ""),
        ]),
        &zones(),
    )
    .unwrap();
    assert_eq!(&*set.find(b"alpha-token").unwrap().name, "a");
    assert_eq!(&*set.find(b"beta-token").unwrap().name, "b");
    for wrong in [
        &b"alpha-toke"[..],
        b"alpha-tokenX",
        b"Alpha-token",
        b"",
        digest_hex("alpha-token").as_bytes(),
    ] {
        assert!(set.find(wrong).is_none(), "{wrong:?}");
    }
}

#[test]
fn roles_are_cumulative_and_errors_say_what_is_needed() {
    let dir = tempfile::tempdir().unwrap();
    let auth = auth_with(
        &dir,
        &file(&[
            ("reader", "r", "read", ""),
            ("writer", "w", "write", ""),
            ("approver", "a", "approve", ""),
        ]),
        1000,
        1000,
    );
    let calls = [
        Call::GetStatus,
        Call::ListRecordStates,
        Call::Plan,
        Call::Sync,
        Call::PutDesired,
        Call::PutDesiredStream,
        Call::PatchDesired,
        Call::Approve,
        Call::Release,
        Call::Resume,
        Call::PlanProposed,
        Call::ReadZone,
        Call::Adopt,
    ];
    // A pull request's plan and an import need only a read token; adopting writes.
    assert_eq!(Call::PlanProposed.role(), Role::Read);
    assert_eq!(Call::ReadZone.role(), Role::Read);
    assert_eq!(Call::Adopt.role(), Role::Approve);
    for (token, role) in [("r", Role::Read), ("w", Role::Write), ("a", Role::Approve)] {
        for call in calls {
            let got = auth.admit(Some(&bearer_of(token)), call);
            assert_eq!(got.is_ok(), call.role() <= role, "{token} {call:?}");
        }
    }
    let err = auth
        .admit(Some(b"Bearer r"), Call::PutDesired)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "PutDesired needs the write role; caller \"reader\" has read"
    );
    // The scheme in any case; nothing else is a bearer token.
    assert!(auth.admit(Some(b"bearer   w "), Call::Sync).is_ok());
    assert!(matches!(
        auth.admit(None, Call::GetStatus),
        Err(AuthError::Missing)
    ));
    for bad in [&b"Basic dzp4"[..], b"Bearer", b"Bearer  ", b"w"] {
        assert!(
            matches!(
                auth.admit(Some(bad), Call::GetStatus),
                Err(AuthError::Malformed)
            ),
            "{bad:?}"
        );
    }
    let unknown = auth.admit(Some(b"Bearer s3cret-guess"), Call::GetStatus);
    let text = unknown.unwrap_err().to_string();
    assert!(
        !text.contains("s3cret-guess"),
        "never echoes the token: {text}"
    );
    // Without [auth]: everyone, everything.
    let open = Authenticator::open();
    let c = open.admit(None, Call::Release).unwrap();
    assert_eq!(&*c.name, "anonymous");
}

#[test]
fn each_caller_has_its_own_rate() {
    let dir = tempfile::tempdir().unwrap();
    let auth = auth_with(
        &dir,
        &file(&[("one", "t1", "read", ""), ("two", "t2", "read", "")]),
        1,
        2,
    );
    assert!(auth.admit(Some(b"Bearer t1"), Call::GetStatus).is_ok());
    assert!(auth.admit(Some(b"Bearer t1"), Call::GetStatus).is_ok());
    match auth.admit(Some(b"Bearer t1"), Call::GetStatus) {
        Err(AuthError::Limited {
            caller,
            retry_after,
            ..
        }) => {
            assert_eq!(&*caller, "one");
            assert!(
                retry_after > Duration::ZERO && retry_after <= Duration::from_secs(1),
                "{retry_after:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Another caller is not held by the first one's calls.
    assert!(auth.admit(Some(b"Bearer t2"), Call::GetStatus).is_ok());
}

#[test]
fn a_broken_reload_keeps_the_tokens_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let auth = auth_with(&dir, &file(&[("one", "t1", "read", "")]), 100, 100);
    let path = dir.path().join("tokens.toml");
    assert!(auth.reload_if_changed().unwrap().is_none(), "unchanged");

    std::fs::write(
        &path,
        "[[token]]\nname = \"one\"\nsha256 = \"zz\"\nrole = \"read\"\n",
    )
    .unwrap();
    let err = auth.reload_if_changed().unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:3: ", path.display())), "{err}");
    assert!(auth.admit(Some(b"Bearer t1"), Call::GetStatus).is_ok());
    // Said once per version of the file.
    assert!(auth.reload_if_changed().unwrap().is_none());

    std::fs::write(
        &path,
        file(&[("two", "t2", "write", ""), ("x", "t3", "read", "")]),
    )
    .unwrap();
    assert_eq!(auth.reload_if_changed().unwrap(), Some(2));
    assert!(matches!(
        auth.admit(Some(b"Bearer t1"), Call::GetStatus),
        Err(AuthError::Unknown)
    ));
    assert!(auth.admit(Some(b"Bearer t2"), Call::Sync).is_ok());
}

#[test]
fn the_admin_port_asks_for_a_read_token_for_status() {
    let dir = tempfile::tempdir().unwrap();
    let auth = auth_with(&dir, &file(&[("one", "t1", "read", "")]), 100, 100);
    assert!(!auth.admits_admin("/status", None));
    assert!(!auth.admits_admin("/status", Some(b"Bearer nope")));
    assert!(auth.admits_admin("/status", Some(b"Bearer t1")));
    assert!(
        auth.admits_admin("/metrics", None),
        "metrics_open by default"
    );
    assert!(auth.admits_admin("/healthz", None));
    assert!(auth.admits_admin("/readyz", None));
    assert!(Authenticator::open().admits_admin("/status", None));
}

/// A deleted tokens file revokes every token (fail closed) and says so, in the
/// refusal and in `problem`; a broken one keeps the tokens and says so; a good one
/// clears both.
#[test]
fn a_deleted_tokens_file_revokes_every_token() {
    let dir = tempfile::tempdir().unwrap();
    let auth = auth_with(&dir, &file(&[("one", "t1", "read", "")]), 100, 100);
    let path = dir.path().join("tokens.toml");
    assert_eq!(auth.problem(), None);

    std::fs::write(&path, "").unwrap();
    assert!(auth.reload_if_changed().is_err());
    assert!(auth.admit(Some(b"Bearer t1"), Call::GetStatus).is_ok());
    let p = auth.problem().unwrap();
    assert!(
        p.contains("no [[token]]") && p.contains("stay in force"),
        "{p}"
    );

    std::fs::remove_file(&path).unwrap();
    let err = auth.reload_if_changed().unwrap_err();
    assert!(matches!(err, TokensError::Deleted { .. }), "{err}");
    let refused = auth.admit(Some(b"Bearer t1"), Call::GetStatus).unwrap_err();
    assert!(matches!(refused, AuthError::Revoked { .. }), "{refused}");
    assert!(refused.to_string().contains("revoked"), "{refused}");
    assert!(!auth.admits_admin("/status", Some(b"Bearer t1")));
    let p = auth.problem().unwrap();
    assert!(
        p.contains("deleted") && p.contains("every token is revoked"),
        "{p}"
    );

    std::fs::write(&path, file(&[("one", "t1", "read", "")])).unwrap();
    assert_eq!(auth.reload_if_changed().unwrap(), Some(1));
    assert!(auth.admit(Some(b"Bearer t1"), Call::GetStatus).is_ok());
    assert_eq!(auth.problem(), None);
}
