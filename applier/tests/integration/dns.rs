use crate::support::*;
use dnsplane_common::{RecordType, pb};
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

fn query(name: &str, t: rr::RecordType) -> Message {
    let mut m = Message::query();
    m.add_query(Query::query(rr::Name::from_ascii(name).unwrap(), t));
    m
}

async fn udp(server: SocketAddr, q: &Message) -> Message {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&q.to_vec().unwrap(), server).await.unwrap();
    let mut buf = vec![0; 4096];
    let n = sock.recv(&mut buf).await.unwrap();
    Message::from_vec(&buf[..n]).unwrap()
}

async fn tcp(server: SocketAddr, queries: &[Message]) -> Vec<Message> {
    let mut s = TcpStream::connect(server).await.unwrap();
    let mut out = Vec::new();
    // Several queries on one connection.
    for q in queries {
        let bytes = q.to_vec().unwrap();
        s.write_u16(bytes.len() as u16).await.unwrap();
        s.write_all(&bytes).await.unwrap();
        let len = s.read_u16().await.unwrap();
        let mut buf = vec![0; usize::from(len)];
        s.read_exact(&mut buf).await.unwrap();
        out.push(Message::from_vec(&buf).unwrap());
    }
    out
}

fn values(m: &Message) -> Vec<String> {
    let mut v: Vec<String> = m.answers.iter().map(|r| r.data.to_string()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn applied_records_are_served_over_udp_and_tcp() {
    let (_dir, app) = Running::fresh().await;
    let mut client = app.client().await;
    let big: Vec<String> = (0..60)
        .map(|i| format!("a fairly long text value number {i:03}"))
        .collect();
    let big: Vec<&str> = big.iter().map(String::as_str).collect();
    let changes = vec![
        create(&a("www", "192.0.2.1")),
        create(&rrset(
            &zone(),
            "alias",
            RecordType::Cname,
            &["www.example.com."],
        )),
        create(&rrset(&zone(), "big", RecordType::Txt, &big)),
    ];
    let (tx, mut responses) = apply_stream(&mut client, 1).await;
    tx.send(batch("b", &zone(), &changes)).await.unwrap();
    let resp = responses.message().await.unwrap().unwrap();
    assert!(
        resp.results
            .iter()
            .all(|r| r.outcome() == pb::Outcome::Applied)
    );

    let m = udp(app.dns, &query("www.example.com.", rr::RecordType::A)).await;
    assert!(m.metadata.authoritative);
    assert_eq!(values(&m), vec!["192.0.2.1"]);
    let m = udp(app.dns, &query("alias.example.com.", rr::RecordType::A)).await;
    assert_eq!(values(&m), vec!["192.0.2.1", "www.example.com."]);
    let m = udp(app.dns, &query("nothing.example.com.", rr::RecordType::A)).await;
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    let m = udp(app.dns, &query("example.net.", rr::RecordType::A)).await;
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    // Too big for plain UDP: truncated; TCP carries it whole.
    let m = udp(app.dns, &query("big.example.com.", rr::RecordType::TXT)).await;
    assert!(m.metadata.truncation);
    let ms = tcp(
        app.dns,
        &[
            query("big.example.com.", rr::RecordType::TXT),
            query("www.example.com.", rr::RecordType::A),
        ],
    )
    .await;
    assert!(!ms[0].metadata.truncation);
    assert_eq!(ms[0].answers.len(), 60);
    assert_eq!(values(&ms[1]), vec!["192.0.2.1"]);

    dig(app.dns).await;
    drop(tx);
    app.stop().await;
}

/// `dig` as a user would run it, when installed. Runs on the blocking pool: the DNS
/// server shares this test's runtime.
async fn dig(server: SocketAddr) {
    let run = move |transport: &'static str| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("dig")
                .arg(format!("@{}", server.ip()))
                .args([
                    "-p",
                    &server.port().to_string(),
                    "www.example.com",
                    "A",
                    "+short",
                    transport,
                ])
                .output()
        })
    };
    let out = match run("+notcp").await.unwrap() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var("DNSPLANE_REQUIRE_SERVERS").is_err(),
                "dig is required (DNSPLANE_REQUIRE_SERVERS is set) but not installed"
            );
            eprintln!("dig is not installed; skipping the dig check (install bind9-dnsutils)");
            return;
        }
        Err(e) => panic!("dig: {e}"),
    };
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "192.0.2.1");
    let out = run("+tcp").await.unwrap().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "192.0.2.1");
}
