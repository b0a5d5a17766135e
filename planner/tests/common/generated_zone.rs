//! The generated zone the zone-file reference test and the parse benchmark share
//! (`planner/benches/zonefile_parse.rs` includes this file by path).
use std::fmt::Write as _;

/// A deterministic zone of `n` records of every common shape, as a zone file.
pub fn generated_zone(n: usize) -> String {
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
        // Case 0 and 4 write two records.
        i += if i % 10 == 0 || i % 10 == 4 { 2 } else { 1 };
    }
    s
}
