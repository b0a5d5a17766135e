//! The digest-carrying types: TLSA (RFC 6698), SSHFP (RFC 4255, 6594, 7479, 8709) and
//! DS (RFC 4034, 4509, 6605). Their fields are numbers from IANA registries and a digest
//! whose length the digest type fixes; a value with a number outside its registry or a
//! digest of the wrong length is refused here, where it enters, naming the field.
use super::RData;
use super::tokens::hex;

fn num<T: std::str::FromStr>(field: &str, s: Option<&str>, range: &str) -> Result<T, String> {
    let s = s.ok_or_else(|| format!("{field} is missing"))?;
    s.parse()
        .map_err(|_| format!("{field} {:?} is not {range}", crate::error::excerpt(s)))
}

fn check_len(field: &str, what: &str, data: &[u8], want: usize) -> Result<(), String> {
    if data.len() == want {
        Ok(())
    } else {
        Err(format!(
            "{field} is {} octets, but {what} takes {want}",
            data.len()
        ))
    }
}

/// `<usage> <selector> <matching type> <certificate association data (hex)>`.
pub(super) fn tlsa(v: &str) -> Result<RData, String> {
    let mut it = v.split_whitespace();
    let usage: u8 = num("usage", it.next(), "0..255")?;
    let selector: u8 = num("selector", it.next(), "0..255")?;
    let matching: u8 = num("matching type", it.next(), "0..255")?;
    let rest: Vec<&str> = it.collect();
    if usage > 3 {
        return Err(format!("usage {usage} is not 0, 1, 2 or 3"));
    }
    if selector > 1 {
        return Err(format!("selector {selector} is not 0 or 1"));
    }
    if matching > 2 {
        return Err(format!("matching type {matching} is not 0, 1 or 2"));
    }
    let data = hex("certificate association data", &rest.concat())?;
    match matching {
        1 => check_len(
            "certificate association data",
            "matching type 1 (SHA-256)",
            &data,
            32,
        )?,
        2 => check_len(
            "certificate association data",
            "matching type 2 (SHA-512)",
            &data,
            64,
        )?,
        _ => {}
    }
    Ok(RData::Tlsa {
        usage,
        selector,
        matching,
        data,
    })
}

/// `<algorithm> <fingerprint type> <fingerprint (hex)>`.
pub(super) fn sshfp(v: &str) -> Result<RData, String> {
    let mut it = v.split_whitespace();
    let algorithm: u8 = num("algorithm", it.next(), "0..255")?;
    let fp_type: u8 = num("fingerprint type", it.next(), "0..255")?;
    let rest: Vec<&str> = it.collect();
    if !matches!(algorithm, 1..=4 | 6) {
        return Err(format!(
            "algorithm {algorithm} is not 1 (RSA), 2 (DSA), 3 (ECDSA), 4 (Ed25519) or 6 (Ed448)"
        ));
    }
    let fingerprint = hex("fingerprint", &rest.concat())?;
    match fp_type {
        1 => check_len(
            "fingerprint",
            "fingerprint type 1 (SHA-1)",
            &fingerprint,
            20,
        )?,
        2 => check_len(
            "fingerprint",
            "fingerprint type 2 (SHA-256)",
            &fingerprint,
            32,
        )?,
        _ => {
            return Err(format!(
                "fingerprint type {fp_type} is not 1 (SHA-1) or 2 (SHA-256)"
            ));
        }
    }
    Ok(RData::Sshfp {
        algorithm,
        fp_type,
        fingerprint,
    })
}

/// `<key tag> <algorithm> <digest type> <digest (hex)>`.
pub(super) fn ds(v: &str) -> Result<RData, String> {
    let mut it = v.split_whitespace();
    let key_tag: u16 = num("key tag", it.next(), "0..65535")?;
    let algorithm: u8 = num("algorithm", it.next(), "0..255")?;
    let digest_type: u8 = num("digest type", it.next(), "0..255")?;
    let rest: Vec<&str> = it.collect();
    if algorithm == 0 {
        return Err("algorithm 0 is reserved".into());
    }
    let digest = hex("digest", &rest.concat())?;
    match digest_type {
        1 => check_len("digest", "digest type 1 (SHA-1)", &digest, 20)?,
        2 => check_len("digest", "digest type 2 (SHA-256)", &digest, 32)?,
        4 => check_len("digest", "digest type 4 (SHA-384)", &digest, 48)?,
        _ => {
            return Err(format!(
                "digest type {digest_type} is not 1 (SHA-1), 2 (SHA-256) or 4 (SHA-384)"
            ));
        }
    }
    Ok(RData::Ds {
        key_tag,
        algorithm,
        digest_type,
        digest,
    })
}
