//! The embedded DNS server as a stranger on the network sees it: `ANY` gets one RRset
//! (RFC 8482), and a flood from one client prefix is cut to its rate, with every
//! other limited answer slipped as TC=1, while another prefix is still answered; and
//! `dig AXFR` transfers the whole zone (or is refused, as configured).
use crate::stack::{Stack, Tools, seed};
use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

/// A 20/s, burst 20, slip 2 limit: small enough that a flood of 300 is cheap.
const LIMIT: &str = "[accounts.dns_rate_limit]\nresponses_per_second = 20\nburst = 20\nslip = 2\n";

/// `dig` with its source address set, one try: the answer lines, or why not.
fn dig(tools: &Tools, port: u16, source: &str, args: &[&str]) -> String {
    let out = Command::new(&tools.dig)
        .args(["@127.0.0.1", "-p", &port.to_string(), "-b", source])
        .args([
            "+norecurse",
            "+tries=1",
            "+time=2",
            "+noall",
            "+answer",
            "+comments",
        ])
        .args(args)
        .output()
        .expect("run dig");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A wire-format query for `www.example.com. A` with message id `id`.
fn query(id: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in ["www", "example", "com"] {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    q
}

#[test]
fn any_is_minimal_and_a_flood_is_limited_per_prefix() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::with_config(tools.clone(), &[], "report", LIMIT, "");
    seed(
        &s.state_dir(),
        &[
            ("www.example.com", "A", "192.0.2.10"),
            ("www.example.com", "AAAA", "2001:db8::10"),
            ("www.example.com", "TXT", "\"hello\""),
        ],
    );
    s.start_applier();
    let port = s.dns_port;

    // RFC 8482: one RRset (the A, lowest type code), not the AAAA nor the TXT. From
    // another /24 than the flood below, so it is not counted against it.
    let any = dig(&tools, port, "127.0.2.1", &["www.example.com", "ANY"]);
    let answers: Vec<&str> = any
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .collect();
    assert_eq!(answers.len(), 1, "dig ANY: {any}");
    assert!(answers[0].contains("\tA\t192.0.2.10"), "dig ANY: {any}");

    // A flood of 300 queries from 127.0.0.1 within well under a second (paced a
    // little, so that no socket buffer drops what the limiter should judge).
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let started = Instant::now();
    for id in 0..300u16 {
        sock.send_to(&query(id), ("127.0.0.1", port)).expect("send");
        std::thread::sleep(Duration::from_micros(300));
    }
    let (mut full, mut truncated) = (0u32, 0u32);
    let mut buf = [0u8; 1500];
    while let Ok((n, _)) = sock.recv_from(&mut buf) {
        assert!(n >= 12, "a short answer");
        let tc = buf[2] & 0x02 != 0;
        let answer_count = u16::from_be_bytes([buf[6], buf[7]]);
        if tc {
            assert_eq!(answer_count, 0, "a slipped answer carries no data");
            truncated += 1;
        } else {
            assert_eq!(answer_count, 1, "a full answer carries the A record");
            full += 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The burst, plus what the rate refilled while the flood ran (with slack).
    let allowed = 20.0 + 20.0 * elapsed + 2.0;
    assert!(
        full >= 20 && f64::from(full) <= allowed,
        "{full} full answers in {elapsed:.2}s (allowed {allowed:.0})"
    );
    let limited = 300 - full;
    assert!(
        truncated + 3 >= limited / 2 && truncated <= limited / 2 + 1,
        "slip 2: about half of the {limited} limited answers are TC=1, got {truncated}"
    );

    // While 127.0.0.0/24 is still limited: another /24 of the loopback is answered
    // in full, and the limited prefix itself is answered over TCP.
    let other = dig(&tools, port, "127.0.1.1", &["www.example.com", "A"]);
    assert!(other.contains("192.0.2.10"), "from 127.0.1.1: {other}");
    let tcp = dig(&tools, port, "127.0.0.1", &["+tcp", "www.example.com", "A"]);
    assert!(tcp.contains("192.0.2.10"), "TCP from 127.0.0.1: {tcp}");
}

/// `dig AXFR` of the embedded zone (RFC 5936): the SOA, every record, the SOA again,
/// over as many TCP messages as 5,000 records take; with `dns_transfer = "none"` the
/// transfer is refused and nothing of the zone is shown.
#[test]
fn axfr_transfers_the_whole_zone_and_can_be_refused() {
    let Some(tools) = Tools::find() else { return };
    let names: Vec<String> = (0..5000).map(|i| format!("h{i}.example.com")).collect();
    let values: Vec<String> = (0..5000)
        .map(|i| format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256))
        .collect();
    let records: Vec<(&str, &str, &str)> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (n.as_str(), "A", v.as_str()))
        .chain([("example.com", "TXT", "\"apex\"")])
        .collect();
    let axfr = |port: u16| {
        let out = Command::new(&tools.dig)
            .args(["@127.0.0.1", "-p", &port.to_string(), "+tries=1", "+time=5"])
            .args(["example.com", "AXFR"])
            .output()
            .expect("run dig");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let mut s = Stack::with_config(tools.clone(), &[], "report", "", "");
    seed(&s.state_dir(), &records);
    s.start_applier();
    let out = axfr(s.dns_port);
    let rrs: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rrs.len(),
        5000 + 1 + 2,
        "SOA, every record, SOA:\n{}",
        &out[..out.len().min(2000)]
    );
    assert_eq!(rrs[0][3], "SOA");
    assert_eq!(rrs[rrs.len() - 1][3], "SOA");
    assert_eq!(
        rrs[0],
        rrs[rrs.len() - 1],
        "the same SOA opens and closes it"
    );
    let got: std::collections::BTreeSet<(String, String)> = rrs[1..rrs.len() - 1]
        .iter()
        .filter(|r| r[3] == "A")
        .map(|r| (r[0].to_string(), r[4].to_string()))
        .collect();
    let want: std::collections::BTreeSet<(String, String)> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (format!("{n}."), v.clone()))
        .collect();
    assert_eq!(got, want);
    assert!(out.contains("\"apex\""), "the apex TXT");
    // More than one message: dig counts them.
    let messages: usize = out
        .lines()
        .find_map(|l| l.strip_prefix(";; XFR size: "))
        .and_then(|l| l.split("messages ").nth(1))
        .and_then(|n| n.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no XFR size line:\n{}", tail_of(&out)));
    assert!(messages >= 2, "{messages} messages:\n{}", tail_of(&out));
    drop(s);

    let mut s = Stack::with_config(tools.clone(), &[], "report", "dns_transfer = \"none\"", "");
    seed(&s.state_dir(), &records);
    s.start_applier();
    let out = axfr(s.dns_port);
    assert!(out.contains("Transfer failed"), "{out}");
    assert!(!out.contains("h1.example.com."), "{out}");
}

fn tail_of(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// A set as large as the planner's size check accepts (240 TXT values, the answer
/// right at 64 KiB with the OPT record) goes through a file source to the embedded
/// server, and real `dig +tcp` gets all 240 records, without TC. Before, the server
/// stopped compressing names after 120 of them: 239 of 240 came back, TC set.
#[test]
fn the_largest_txt_set_the_planner_accepts_is_served_whole_over_tcp() {
    let Some(tools) = Tools::find() else { return };
    let name = dnsplane_common::Name::parse("big.example.com").unwrap();
    let txt = dnsplane_common::RecordType::Txt;
    let canonical = |v: &str| dnsplane_common::rdata::canonicalize(txt, v).unwrap();
    let mut values: Vec<String> = (0..239)
        .map(|i| format!("{i:03}{}", "v".repeat(254)))
        .collect();
    let canonical_values: Vec<String> = values.iter().map(|v| canonical(v)).collect();
    let fits = |len: usize| {
        let mut all = canonical_values.clone();
        all.push(canonical(&"w".repeat(len)));
        dnsplane_common::wire::check_answer(&name, txt, &all).is_ok()
    };
    let last = (1..65_535).take_while(|&len| fits(len)).last().unwrap();
    values.push("w".repeat(last));
    let targets: Vec<&str> = values.iter().map(String::as_str).collect();
    let desired = crate::stack::endpoints("big", &[("big.example.com", "TXT", &targets)]);
    let mut s = Stack::new(tools.clone(), &[("big.yaml", &desired)], "report");
    s.start();
    let mut answers = Vec::new();
    let mut out = String::new();
    let done = dnsplane_e2e::wait_for(Duration::from_secs(30), || {
        out = dig(
            &tools,
            s.dns_port,
            "127.0.0.1",
            &["+tcp", "big.example.com", "TXT"],
        );
        answers = out
            .lines()
            .filter(|l| !l.starts_with(';') && l.contains("\tTXT\t"))
            .map(str::to_string)
            .collect();
        (answers.len() == 240).then_some(())
    });
    assert!(
        done.is_some()
            && !out
                .lines()
                .any(|l| l.contains("flags:") && l.contains(" tc")),
        "dig +tcp big.example.com TXT: {} records; {}\n{}",
        answers.len(),
        tail_of(&out),
        s.logs()
    );
}
