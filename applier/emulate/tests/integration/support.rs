//! A Route 53 client for the tests: real HTTP on 127.0.0.1, requests signed by AWS's
//! own signer (`aws-sigv4`), so the emulator's verification is checked against it.
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use dnsplane_emulate::route53::{
    DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY, Route53Emulator, Route53Options,
};
use quick_xml::events::Event;
use std::time::{Duration, SystemTime};

pub const NS: &str = "https://route53.amazonaws.com/doc/2013-04-01/";

/// Options for most tests: no quota (pages and loops would trip it), changes INSYNC
/// after 400 ms.
pub fn opts() -> Route53Options {
    Route53Options {
        rate: 0.0,
        insync_after: Duration::from_millis(400),
        ..Route53Options::default()
    }
}

/// Starts an emulator on 127.0.0.1:0 and a client with the default credentials.
pub async fn start(opts: Route53Options) -> (Route53Emulator, Client) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let emu = Route53Emulator::start(listener, opts).await.unwrap();
    let client = Client::new(
        &emu.endpoint(),
        DEFAULT_ACCESS_KEY_ID,
        DEFAULT_SECRET_ACCESS_KEY,
    );
    (emu, client)
}

/// How a request is signed.
#[derive(Clone, Debug)]
pub struct Signing {
    pub key: String,
    pub secret: String,
    pub region: String,
    pub session_token: Option<String>,
}

/// An answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Resp {
    /// Status, headers and body of `resp`.
    pub async fn read(resp: reqwest::Response) -> Result<Resp, reqwest::Error> {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.text().await?;
        Ok(Resp {
            status,
            headers,
            body,
        })
    }

    /// The text of every element named `tag`, in document order.
    pub fn all(&self, tag: &str) -> Vec<String> {
        let mut reader = quick_xml::Reader::from_str(&self.body);
        let mut out = Vec::new();
        let mut inside = 0usize;
        let mut text = String::new();
        loop {
            match reader.read_event().expect("the answer is XML") {
                Event::Start(e) if e.local_name().as_ref() == tag.as_bytes() => {
                    inside += 1;
                    text.clear();
                }
                Event::Text(t) if inside > 0 => {
                    text.push_str(&t.decode().unwrap());
                }
                Event::GeneralRef(r) if inside > 0 => {
                    let name = r.decode().unwrap();
                    text.push_str(match name.as_ref() {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        other => panic!("unexpected entity {other}"),
                    });
                }
                Event::End(e) if e.local_name().as_ref() == tag.as_bytes() => {
                    inside -= 1;
                    out.push(std::mem::take(&mut text));
                }
                Event::Empty(e) if e.local_name().as_ref() == tag.as_bytes() => {
                    out.push(String::new());
                }
                Event::Eof => break,
                _ => {}
            }
        }
        out
    }

    /// The text of the first element named `tag`.
    pub fn text(&self, tag: &str) -> Option<String> {
        self.all(tag).into_iter().next()
    }

    pub fn code(&self) -> String {
        self.text("Code").unwrap_or_default()
    }

    pub fn message(&self) -> String {
        self.text("Message").unwrap_or_default()
    }

    /// Asserts an AWS error answer: status, code, message, and the body's shape.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str, message: &str) {
        assert_eq!(
            (self.status, self.code().as_str(), self.message().as_str()),
            (status, code, message),
            "body: {}",
            self.body
        );
        assert!(
            self.body
                .contains(&format!("<ErrorResponse xmlns=\"{NS}\"><Error><Type>")),
            "{}",
            self.body
        );
        assert!(self.text("RequestId").is_some_and(|r| !r.is_empty()));
        assert_eq!(
            self.headers
                .get("x-amzn-requestid")
                .unwrap()
                .to_str()
                .unwrap(),
            self.text("RequestId").unwrap()
        );
    }
}

/// A signed Route 53 client.
#[derive(Clone, Debug)]
pub struct Client {
    pub http: reqwest::Client,
    pub endpoint: String,
    pub signing: Signing,
}

impl Client {
    pub fn new(endpoint: &str, key: &str, secret: &str) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            endpoint: endpoint.to_string(),
            signing: Signing {
                key: key.to_string(),
                secret: secret.to_string(),
                region: "us-east-1".to_string(),
                session_token: None,
            },
        }
    }

    /// The same client with other credentials.
    pub fn with_key(&self, key: &str, secret: &str) -> Client {
        let mut c = self.clone();
        c.signing.key = key.to_string();
        c.signing.secret = secret.to_string();
        c
    }

    /// Builds a request signed by `aws-sigv4` (signing time: now, unless `at` is set).
    pub fn signed(
        &self,
        method: &str,
        path_and_query: &str,
        body: &str,
        at: Option<SystemTime>,
    ) -> http::Request<Vec<u8>> {
        let url = format!("{}{}", self.endpoint, path_and_query);
        let mut req = http::Request::builder()
            .method(method)
            .uri(&url)
            .header("content-type", "text/xml")
            .body(body.as_bytes().to_vec())
            .unwrap();
        let creds = Credentials::new(
            &self.signing.key,
            &self.signing.secret,
            self.signing.session_token.clone(),
            None,
            "tests",
        );
        let identity: Identity = creds.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.signing.region)
            .name("route53")
            .time(at.unwrap_or_else(SystemTime::now))
            .settings(SigningSettings::default())
            .build()
            .unwrap()
            .into();
        let headers: Vec<(String, String)> = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let signable = SignableRequest::new(
            method,
            &url,
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::Bytes(body.as_bytes()),
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        instructions.apply_to_request_http1x(&mut req);
        req
    }

    /// Sends a prepared request.
    pub async fn execute(&self, req: http::Request<Vec<u8>>) -> Result<Resp, reqwest::Error> {
        let req = reqwest::Request::try_from(req).unwrap();
        Resp::read(self.http.execute(req).await?).await
    }

    /// `GET path_and_query` without a signature.
    pub async fn get_unsigned(&self, path_and_query: &str) -> Resp {
        let url = format!("{}{path_and_query}", self.endpoint);
        Resp::read(self.http.get(url).send().await.unwrap())
            .await
            .unwrap()
    }

    pub async fn send(&self, method: &str, path_and_query: &str, body: &str) -> Resp {
        self.execute(self.signed(method, path_and_query, body, None))
            .await
            .unwrap()
    }

    pub async fn get(&self, path_and_query: &str) -> Resp {
        self.send("GET", path_and_query, "").await
    }

    /// CreateHostedZone through the API.
    pub async fn create_zone(&self, name: &str, caller_reference: &str, vpc: bool) -> Resp {
        let vpc = if vpc {
            "<HostedZoneConfig><Comment>private</Comment><PrivateZone>true</PrivateZone></HostedZoneConfig>\
             <VPC><VPCRegion>eu-west-1</VPCRegion><VPCId>vpc-1a2b3c4d</VPCId></VPC>"
        } else {
            "<HostedZoneConfig><Comment>public</Comment></HostedZoneConfig>"
        };
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CreateHostedZoneRequest xmlns=\"{NS}\"><Name>{name}</Name>\
             <CallerReference>{caller_reference}</CallerReference>{vpc}</CreateHostedZoneRequest>"
        );
        self.send("POST", "/2013-04-01/hostedzone", &body).await
    }

    /// ChangeResourceRecordSets with `changes` (see [`change`]).
    pub async fn change(&self, zone: &str, changes: &[String]) -> Resp {
        self.send(
            "POST",
            &format!("/2013-04-01/hostedzone/{zone}/rrset/"),
            &batch(changes),
        )
        .await
    }

    /// Every record set of a zone through ListResourceRecordSets, `maxitems` per page:
    /// (name, type, set identifier) in the order returned, and the pages fetched.
    pub async fn list_all(
        &self,
        zone: &str,
        maxitems: usize,
    ) -> (Vec<(String, String, Option<String>)>, usize) {
        let mut out = Vec::new();
        let mut query = format!("maxitems={maxitems}");
        let mut pages = 0;
        loop {
            let r = self
                .get(&format!("/2013-04-01/hostedzone/{zone}/rrset?{query}"))
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            pages += 1;
            let sets = r.all("ResourceRecordSet");
            assert!(sets.len() <= maxitems);
            for set in split_sets(&r.body) {
                out.push(set);
            }
            if r.text("IsTruncated").as_deref() != Some("true") {
                break;
            }
            let name = r.text("NextRecordName").unwrap();
            let rtype = r.text("NextRecordType").unwrap();
            query = format!("maxitems={maxitems}&name={}&type={rtype}", enc(&name));
            if let Some(id) = r.text("NextRecordIdentifier") {
                query.push_str(&format!("&identifier={}", enc(&id)));
            }
            assert!(pages < 10_000, "paging does not end");
        }
        (out, pages)
    }
}

/// (name, type, set identifier) of each `<ResourceRecordSet>` in a list answer.
pub fn split_sets(body: &str) -> Vec<(String, String, Option<String>)> {
    body.split("<ResourceRecordSet>")
        .skip(1)
        .map(|chunk| {
            let chunk = chunk.split("</ResourceRecordSet>").next().unwrap();
            let r = Resp {
                status: 200,
                headers: http::HeaderMap::new(),
                body: format!("<R>{chunk}</R>"),
            };
            (
                r.text("Name").unwrap(),
                r.text("Type").unwrap(),
                r.text("SetIdentifier"),
            )
        })
        .collect()
}

/// Percent-encodes a query value.
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A `ChangeResourceRecordSetsRequest` body.
pub fn batch(changes: &[String]) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ChangeResourceRecordSetsRequest xmlns=\"{NS}\"><ChangeBatch><Comment>test</Comment><Changes>{}</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>",
        changes.concat()
    )
}

/// One `<Change>` of a simple record set.
pub fn change(action: &str, name: &str, rtype: &str, ttl: u64, values: &[&str]) -> String {
    change_with(action, name, rtype, "", ttl, values)
}

/// One `<Change>` with extra routing elements (`extra` goes after `Type`).
pub fn change_with(
    action: &str,
    name: &str,
    rtype: &str,
    extra: &str,
    ttl: u64,
    values: &[&str],
) -> String {
    let records: String = values
        .iter()
        .map(|v| format!("<ResourceRecord><Value>{}</Value></ResourceRecord>", esc(v)))
        .collect();
    format!(
        "<Change><Action>{action}</Action><ResourceRecordSet><Name>{}</Name><Type>{rtype}</Type>{extra}<TTL>{ttl}</TTL><ResourceRecords>{records}</ResourceRecords></ResourceRecordSet></Change>",
        esc(name)
    )
}

/// The zone's record sets as "name type ttl values".
pub fn summary(emu: &Route53Emulator, zone: &str) -> Vec<String> {
    emu.rrsets(zone)
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.name,
                r.rtype,
                r.ttl.map(|t| t.to_string()).unwrap_or_default(),
                r.values.join(",")
            )
        })
        .collect()
}
