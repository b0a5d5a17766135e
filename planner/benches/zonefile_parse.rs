//! What parsing a zone file costs: a generated zone of N records (A with two values,
//! AAAA, CNAME, TXT with quotes and escapes, MX, SRV in parentheses, CAA, PTR, HTTPS)
//! built in memory, then parsed once. Printed: the seconds, the entries, and the
//! resident memory per record (`/proc/self/status`) at the parse's peak (`VmHWM`, reset
//! before it) and held after it by the entries (`VmRSS`), above what the process held
//! with the text in memory before the parse.
//!
//! `cargo bench -p dnsplane-planner --bench zonefile_parse -- 100000 1000000`
use dnsplane_common::Name;
use dnsplane_planner::source::zonefile;
use std::fmt::Write as _;
use std::time::Instant;

/// `VmRSS` and `VmHWM` (the peak since the last reset) of this process, in bytes.
fn memory() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            .map_or(0, |k| k * 1024)
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}

/// Starts a new peak: Linux resets `VmHWM` to the current RSS on writing 5 to
/// `clear_refs`.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A deterministic zone of about `n` records (the shapes of the reference test's).
fn zone(n: usize) -> String {
    let mut s = String::with_capacity(n * 60);
    s.push_str("$ORIGIN gen.test.\n$TTL 3600\n@ IN SOA ns1.example.net. hostmaster.example.net. ( 1 3600 600 604800 300 )\n  IN NS ns1.example.net.\n");
    let mut i = 0;
    while i < n {
        let (a, b, c) = ((i >> 16) & 255, (i >> 8) & 255, i & 255);
        let _ = match i % 10 {
            0 => writeln!(
                s,
                "h{i} 300 IN A 10.{a}.{b}.{c}\n   IN A 10.{a}.{b}.{}",
                (c + 1) & 255
            ),
            1 => writeln!(s, "h{} AAAA 2001:db8::{i:x}", i - 1),
            2 => writeln!(s, "c{i} CNAME h{}", i - 2),
            3 => writeln!(
                s,
                "t{i} 60 TXT \"v=spf1 include:_spf{i}.example.net ~all\" \"say \\\"hi\\\" {i}\""
            ),
            4 => writeln!(
                s,
                "h{} MX 10 h{}\nh{} MX 20 mx.example.net.",
                i - 4,
                i - 4,
                i - 4
            ),
            5 => writeln!(
                s,
                "_sip._tcp.h{} 1d SRV ( 10 20 5060\n        h{}.gen.test. )",
                i - 5,
                i - 5
            ),
            6 => writeln!(s, "h{} CAA 0 issue \"ca{i}.example.net\"", i - 6),
            7 => writeln!(s, "t{} TXT unquoted\\ {i} \\065", i - 4),
            8 => writeln!(s, "p{i} PTR h{}.gen.test.", i - 8),
            _ => writeln!(s, "s{i} HTTPS 1 . alpn=h2,h3 port={}", 1 + i % 60_000),
        };
        i += if i % 10 == 0 || i % 10 == 4 { 2 } else { 1 };
    }
    s
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        sizes
    };
    let origin = Name::parse("gen.test.").expect("origin");
    println!(
        "| records | text | entries | parse | records/s | peak RSS during the parse, per record | RSS held by the entries, per record |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let text = zone(n);
        reset_peak();
        let (before, _) = memory();
        let t = Instant::now();
        let parsed = zonefile::parse("gen.test.zone", &text, Some(&origin));
        let secs = t.elapsed().as_secs_f64();
        let (now, peak) = memory();
        let (peak, held) = (peak.saturating_sub(before), now.saturating_sub(before));
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors.first());
        println!(
            "| {n} | {:.1} MiB | {} | {secs:.2} s | {:.0} | {} B | {} B |",
            text.len() as f64 / (1 << 20) as f64,
            parsed.entries.len(),
            n as f64 / secs,
            peak / n,
            held / n,
        );
        drop(parsed);
        drop(text);
    }
}
