//! AWS Signature Version 4 verification, for real: the canonical request is rebuilt
//! from what arrived (method; the raw path, normalized and percent-encoded again as
//! AWS does for every service but S3; the query, decoded, re-encoded and sorted; the
//! signed headers, trimmed; the SHA-256 of the body) and signed with the secret of the
//! access key the `Authorization` header names, for scope `<date>/us-east-1/route53`.
//!
//! Answers (all HTTP 403): no `Authorization` → `MissingAuthenticationToken` "Missing
//! Authentication Token"; an unknown key id → `InvalidClientTokenId` "The security
//! token included in the request is invalid."; a wrong signature →
//! `SignatureDoesNotMatch` with AWS's text; a malformed header → `IncompleteSignature`;
//! a date more than 5 minutes off → `SignatureDoesNotMatch` "Signature expired: …".
//! `x-amz-security-token` is accepted and not checked (no STS here).
use super::Credential;
use super::errors::ApiError;
use crate::timefmt::{amz_date, parse_amz_date};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime};

pub(crate) const REGION: &str = "us-east-1";
pub(crate) const SERVICE: &str = "route53";
const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// How far the request's date may be from the server's.
const MAX_SKEW: Duration = Duration::from_secs(5 * 60);

/// What arrived, as the signature covers it.
pub(crate) struct Signed<'a> {
    pub method: &'a str,
    /// The path as sent (still percent-encoded).
    pub raw_path: &'a str,
    pub raw_query: Option<&'a str>,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

fn forbidden(code: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(403, code, message)
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The access key id the `Authorization` header names, without checking anything
/// (used when verification is off, to pick the quota bucket).
pub(crate) fn claimed_key(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let cred = auth.split_once("Credential=")?.1;
    Some(cred.split('/').next()?.trim().to_string())
}

/// Checks the request's signature; the access key id on success.
pub(crate) fn verify(
    req: &Signed<'_>,
    credentials: &[Credential],
    now: SystemTime,
) -> Result<String, ApiError> {
    let Some(auth) = req.headers.get(http::header::AUTHORIZATION) else {
        return Err(forbidden(
            "MissingAuthenticationToken",
            "Missing Authentication Token",
        ));
    };
    let auth = auth
        .to_str()
        .map_err(|_| {
            forbidden(
                "IncompleteSignature",
                "The Authorization header is not ASCII.",
            )
        })?
        .trim();
    let (algorithm, rest) = auth.split_once(' ').unwrap_or((auth, ""));
    if algorithm != ALGORITHM {
        return Err(forbidden(
            "IncompleteSignature",
            format!("Unsupported AWS 'algorithm': '{algorithm}'. Expected {ALGORITHM}."),
        ));
    }
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=').unwrap_or((part.trim(), ""));
        match k {
            "Credential" => credential = Some(v.trim()),
            "SignedHeaders" => signed_headers = Some(v.trim()),
            "Signature" => signature = Some(v.trim()),
            _ => {}
        }
    }
    let missing: Vec<&str> = [
        ("Credential", credential.is_none()),
        ("Signature", signature.is_none()),
        ("SignedHeaders", signed_headers.is_none()),
    ]
    .iter()
    .filter(|(_, m)| *m)
    .map(|(n, _)| *n)
    .collect();
    if !missing.is_empty() {
        return Err(forbidden(
            "IncompleteSignature",
            missing
                .iter()
                .map(|n| format!("Authorization header requires '{n}' parameter."))
                .collect::<Vec<_>>()
                .join(" "),
        ));
    }
    let (credential, signed_headers, signature) = (
        credential.unwrap_or_default(),
        signed_headers.unwrap_or_default(),
        signature.unwrap_or_default(),
    );
    let scope: Vec<&str> = credential.split('/').collect();
    if scope.len() != 5 || scope[4] != "aws4_request" {
        return Err(forbidden(
            "IncompleteSignature",
            format!(
                "Credential should be scoped to a valid region, service and 'aws4_request' terminator: '{credential}'."
            ),
        ));
    }
    let (key_id, scope_date, region, service) = (scope[0], scope[1], scope[2], scope[3]);
    let Some(secret) = credentials
        .iter()
        .find(|c| c.access_key_id == key_id)
        .map(|c| c.secret_access_key.as_str())
    else {
        return Err(forbidden(
            "InvalidClientTokenId",
            "The security token included in the request is invalid.",
        ));
    };

    // The request's time: x-amz-date, else Date.
    let (amz, when) = match req.headers.get("x-amz-date").and_then(|v| v.to_str().ok()) {
        Some(d) => (
            d.to_string(),
            parse_amz_date(d).ok_or_else(|| {
                forbidden(
                    "IncompleteSignature",
                    format!("Date must be in ISO-8601 'basic format'. Got '{d}'."),
                )
            })?,
        ),
        None => match req
            .headers
            .get(http::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|d| httpdate::parse_http_date(d).ok())
        {
            Some(t) => (amz_date(t), t),
            None => {
                return Err(forbidden(
                    "IncompleteSignature",
                    "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
                ));
            }
        },
    };
    if scope_date != &amz[..8] {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            format!(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{scope_date}' != '{}', from '{amz}'.",
                &amz[..8]
            ),
        ));
    }
    if region != REGION {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            format!("Credential should be scoped to a valid region, not '{region}'. "),
        ));
    }
    if service != SERVICE {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            format!("Credential should be scoped to correct service: '{SERVICE}'. "),
        ));
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    if !names.contains(&"host") {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }
    if let Ok(ahead) = when.duration_since(now)
        && ahead > MAX_SKEW
    {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            format!(
                "Signature not yet current: {amz} is still later than {} ({} + 5 min.)",
                amz_date(now + MAX_SKEW),
                amz_date(now)
            ),
        ));
    }
    if let Ok(behind) = now.duration_since(when)
        && behind > MAX_SKEW
    {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            format!(
                "Signature expired: {amz} is now earlier than {} ({} - 5 min.)",
                amz_date(now - MAX_SKEW),
                amz_date(now)
            ),
        ));
    }

    let creq = canonical_request(req, &names);
    let scope_str = format!("{scope_date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz}\n{scope_str}\n{}",
        sha256_hex(creq.as_bytes())
    );
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), scope_date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let expected = hex::encode(hmac(&k_signing, string_to_sign.as_bytes()));
    if !constant_time_eq(expected.as_bytes(), signature.as_bytes()) {
        return Err(forbidden(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
        ));
    }
    Ok(key_id.to_string())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The canonical request, per AWS's "Create a canonical request".
pub(crate) fn canonical_request(req: &Signed<'_>, signed: &[&str]) -> String {
    let mut out = String::new();
    out.push_str(req.method);
    out.push('\n');
    out.push_str(&encode(&normalize_path(req.raw_path), true));
    out.push('\n');
    out.push_str(&canonical_query(req.raw_query.unwrap_or("")));
    out.push('\n');
    for name in signed {
        let values: Vec<String> = req
            .headers
            .get_all(*name)
            .iter()
            .map(|v| trim_all(&String::from_utf8_lossy(v.as_bytes())))
            .collect();
        out.push_str(name);
        out.push(':');
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&signed.join(";"));
    out.push('\n');
    out.push_str(&sha256_hex(req.body));
    out
}

/// Collapses runs of spaces and trims them, as SigV4 does for header values.
fn trim_all(v: &str) -> String {
    v.split(' ')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Removes `.` and `..` segments and empty segments (RFC 3986 5.2.4, as AWS's
/// signer normalizes), keeping a trailing slash.
fn normalize_path(path: &str) -> String {
    if path.is_empty() {
        return "/".into();
    }
    if !path.contains('.') && !path.contains("//") {
        return path.to_string();
    }
    let mut segs: Vec<&str> = Vec::new();
    for s in path.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut out = format!("/{}", segs.join("/"));
    let trailing = ["/", "/.", "/..", "/./", "/../"]
        .iter()
        .any(|t| path.ends_with(t));
    if trailing && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// AWS's URI encoding: everything but `A-Z a-z 0-9 - . _ ~` (and `/` in paths) as %XX.
fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` (and `+` as a space, as the signers parse queries).
pub(crate) fn decode_component(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                    }
                    _ => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Query parameters, decoded.
pub(crate) fn parse_query(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_component(k, true), decode_component(v, true))
        })
        .collect()
}

fn canonical_query(raw: &str) -> String {
    let mut pairs: Vec<(String, String)> = parse_query(raw)
        .into_iter()
        .map(|(k, v)| (encode(&k, false), encode(&v, false)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries() {
        assert_eq!(normalize_path("/a/./b/../c//d/"), "/a/c/d/");
        assert_eq!(
            normalize_path("/2013-04-01/hostedzone/Z1/rrset/"),
            "/2013-04-01/hostedzone/Z1/rrset/"
        );
        assert_eq!(encode("/a b/%2F", true), "/a%20b/%252F");
        assert_eq!(
            canonical_query("type=A&name=%2A.example.com&maxitems=1"),
            "maxitems=1&name=%2A.example.com&type=A"
        );
        assert_eq!(canonical_query("b=2&a=x+y&a=1"), "a=1&a=x%20y&b=2");
        assert_eq!(decode_component("%5C052.x%", false), "\\052.x%");
    }

    /// The documented example of AWS's "Signature Version 4 test suite"
    /// (get-vanilla), checked through `verify`.
    #[test]
    fn aws_test_suite_get_vanilla() {
        let mut headers = HeaderMap::new();
        headers.insert("host", "example.amazonaws.com".parse().unwrap());
        headers.insert("x-amz-date", "20150830T123600Z".parse().unwrap());
        let names = ["host", "x-amz-date"];
        let req = Signed {
            method: "GET",
            raw_path: "/",
            raw_query: None,
            headers: &headers,
            body: b"",
        };
        let creq = canonical_request(&req, &names);
        assert_eq!(
            creq,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(creq.as_bytes()),
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
        );
    }
}
