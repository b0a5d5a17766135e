//! Parsing, validation, canonical text and wire form of PTR, SVCB, HTTPS, TLSA, SSHFP,
//! NAPTR and DS.
use super::*;

const SHA256: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn c(t: RecordType, v: &str) -> String {
    canonicalize(t, v).unwrap_or_else(|e| panic!("{t} {v:?}: {e}"))
}

fn bad(t: RecordType, v: &str) -> String {
    match canonicalize(t, v) {
        Ok(ok) => panic!("{t} {v:?} was accepted as {ok:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn canonical_forms_of_the_new_types() {
    use RecordType::*;
    for (t, input, canon) in [
        (Ptr, "Host.Example.com", "host.example.com."),
        (
            Https,
            "1 . alpn=\"h3,h2\" port=8443",
            "1 . alpn=h3,h2 port=8443",
        ),
        (
            Https,
            "1 .  ipv6hint=2001:DB8::1 ipv4hint=192.0.2.1,192.0.2.2 alpn=h2",
            "1 . alpn=h2 ipv4hint=192.0.2.1,192.0.2.2 ipv6hint=2001:db8::1",
        ),
        (Https, "0 CDN.example.net", "0 cdn.example.net."),
        (
            Svcb,
            "16 svc.example.com mandatory=port,alpn alpn=dot port=853 no-default-alpn",
            "16 svc.example.com. mandatory=alpn,port alpn=dot no-default-alpn port=853",
        ),
        (Svcb, "1 . key667=\"hello\"", "1 . key667=\"hello\""),
        (Svcb, "1 . ech=AEX+DQBB", "1 . ech=AEX+DQBB"),
        (
            Tlsa,
            &format!("3 1 1 {}", SHA256.to_uppercase()),
            &format!("3 1 1 {SHA256}"),
        ),
        (Tlsa, "3 0 0 30 82 01 0a", "3 0 0 3082010a"),
        (
            Sshfp,
            "4 2 0123456789ABCDEF0123456789abcdef 0123456789abcdef0123456789abcdef",
            &format!("4 2 {SHA256}"),
        ),
        (
            Naptr,
            "100 10 \"s\" \"SIP+D2U\" \"\" _sip._udp.Example.com",
            "100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.com.",
        ),
        (
            Naptr,
            r#"100 100 "U" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
            r#"100 100 "U" "E2U+sip" "!^.*$!sip:info@example.com!" ."#,
        ),
        (
            Ds,
            &format!("12345 13 2 {}", SHA256.to_uppercase()),
            &format!("12345 13 2 {SHA256}"),
        ),
    ] {
        assert_eq!(c(t, input), canon, "{t} {input:?}");
        // The canonical form is a fixed point.
        assert_eq!(c(t, canon), canon, "{t} {canon:?}");
    }
}

#[test]
fn bad_values_name_the_field() {
    use RecordType::*;
    for (t, v, want) in [
        (Ptr, "bad name", "invalid name"),
        (
            Tlsa,
            &format!("3 1 7 {SHA256}"),
            "matching type 7 is not 0, 1 or 2",
        ),
        (
            Tlsa,
            &format!("4 1 1 {SHA256}"),
            "usage 4 is not 0, 1, 2 or 3",
        ),
        (Tlsa, &format!("3 2 1 {SHA256}"), "selector 2 is not 0 or 1"),
        (
            Tlsa,
            "3 1 1 abcd",
            "certificate association data is 2 octets, but matching type 1 (SHA-256) takes 32",
        ),
        (
            Tlsa,
            "3 1 0 xyz",
            "certificate association data \"xyz\" is not hexadecimal",
        ),
        (Tlsa, "3 1", "matching type is missing"),
        (
            Sshfp,
            &format!("9 2 {SHA256}"),
            "algorithm 9 is not 1 (RSA)",
        ),
        (
            Sshfp,
            &format!("4 3 {SHA256}"),
            "fingerprint type 3 is not 1 (SHA-1) or 2 (SHA-256)",
        ),
        (
            Sshfp,
            "4 1 abcd",
            "fingerprint is 2 octets, but fingerprint type 1 (SHA-1) takes 20",
        ),
        (
            Ds,
            &format!("70000 13 2 {SHA256}"),
            "key tag \"70000\" is not 0..65535",
        ),
        (
            Ds,
            &format!("1 13 3 {SHA256}"),
            "digest type 3 is not 1 (SHA-1)",
        ),
        (
            Ds,
            "1 13 2 ab",
            "digest is 1 octets, but digest type 2 (SHA-256) takes 32",
        ),
        (Ds, &format!("1 0 2 {SHA256}"), "algorithm 0 is reserved"),
        (Naptr, "100 10 \"S\" \"SIP+D2U\" \"\"", "expected 6 fields"),
        (
            Naptr,
            "100 10 \"S-1\" \"SIP\" \"\" .",
            "flags \"S-1\" must be letters or digits",
        ),
        (
            Naptr,
            "100 10 \"U\" \"E2U\" \"!a!b!\" x.example.",
            "regexp and replacement are exclusive",
        ),
        (
            Naptr,
            "x 10 \"U\" \"E2U\" \"\" x.example.",
            "order \"x\" is not 0..65535",
        ),
        (
            Https,
            "0 . alpn=h2",
            "alias mode, which takes no parameters",
        ),
        (Https, "1 . port=99999", "port \"99999\" is not 0..65535"),
        (
            Https,
            "1 . ipv4hint=2001:db8::1",
            "ipv4hint \"2001:db8::1\" is not an IPv4 address",
        ),
        (Https, "1 . no-default-alpn", "no-default-alpn needs alpn"),
        (
            Https,
            "1 . mandatory=port alpn=h2",
            "mandatory lists port, which is not given",
        ),
        (Https, "1 . port=1 port=2", "parameter port is given twice"),
        (Https, "1 . colour=blue", "unknown parameter key \"colour\""),
        (Svcb, "1", "expected \"<priority> <target>"),
    ] {
        let e = bad(t, v);
        assert!(e.contains(want), "{t} {v:?}: {e:?} should say {want:?}");
        assert!(
            e.starts_with(t.as_str()) || e.starts_with("invalid") || e.contains(t.as_str()),
            "{e}"
        );
    }
}

#[test]
fn wire_form_round_trips_and_sizes_agree() {
    use RecordType::*;
    for t in RecordType::ALL {
        let v = match t {
            A => "192.0.2.1".to_string(),
            Aaaa => "2001:db8::1".into(),
            Cname | Ns | Ptr => "host.example.com.".into(),
            Txt => "\"a\" \"b c\"".into(),
            Mx => "10 mail.example.com.".into(),
            Srv => "0 5 5060 sip.example.com.".into(),
            Caa => "0 issue \"ca.example\"".into(),
            Svcb | Https => "1 . alpn=h2,h3 port=443 ipv4hint=192.0.2.1".into(),
            Tlsa => format!("3 1 1 {SHA256}"),
            Sshfp => format!("4 2 {SHA256}"),
            Naptr => "100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.com.".into(),
            Ds => format!("12345 13 2 {SHA256}"),
        };
        let data = RData::parse(t, &v).unwrap();
        let bytes = data.to_wire();
        assert_eq!(bytes.len(), data.wire_len(), "{t}");
        assert_eq!(bytes.len(), wire_len(t, &data.to_string()), "{t}");
        assert_eq!(RData::from_wire(t, &bytes).unwrap(), data, "{t}");
        assert!(
            RData::from_wire(t, &bytes[..bytes.len() - 1]).is_err() || t == Txt || t == Caa,
            "{t}"
        );
    }
    // HTTPS on the wire, byte for byte (RFC 9460 Appendix D.2, "1 . alpn=h2,h3" less one key).
    let h = RData::parse(Https, "1 . port=53").unwrap().to_wire();
    assert_eq!(h, [0, 1, 0, 0, 3, 0, 2, 0, 53]);
}

#[test]
fn new_types_parse_by_name() {
    for name in ["ptr", "SVCB", "https", "TLSA", "sshfp", "NAPTR", "ds"] {
        assert_eq!(
            RecordType::parse(name).unwrap().as_str(),
            name.to_uppercase()
        );
    }
}
