//! The DNS names (subjectAltName dNSName entries) of an X.509 certificate: a few lines
//! of DER walking, for a certificate rustls has already verified (so a parse failure
//! only ever means "no names").
use rustls_pki_types::CertificateDer;

/// One DER element: tag, content, what follows.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The elements of a constructed value.
fn children(mut content: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    std::iter::from_fn(move || {
        let (tag, value, rest) = tlv(content)?;
        content = rest;
        Some((tag, value))
    })
}

const SEQUENCE: u8 = 0x30;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const EXTENSIONS: u8 = 0xa3;
const DNS_NAME: u8 = 0x82;
/// 2.5.29.17, subjectAltName.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// The certificate's DNS names, in order (lowercased); empty when it has none.
pub fn dns_names(cert: &CertificateDer<'_>) -> Vec<String> {
    (|| {
        let (tag, cert, _) = tlv(cert.as_ref())?;
        (tag == SEQUENCE).then_some(())?;
        let (tag, tbs) = children(cert).next()?;
        (tag == SEQUENCE).then_some(())?;
        let (_, extensions) = children(tbs).find(|(t, _)| *t == EXTENSIONS)?;
        let (_, extensions) = children(extensions).next()?;
        for (_, ext) in children(extensions) {
            let mut parts = children(ext);
            let (tag, oid) = parts.next()?;
            if tag != OID || oid != SUBJECT_ALT_NAME {
                continue;
            }
            let (_, value) = parts.find(|(t, _)| *t == OCTET_STRING)?;
            let (tag, names, _) = tlv(value)?;
            (tag == SEQUENCE).then_some(())?;
            return Some(
                children(names)
                    .filter(|(t, _)| *t == DNS_NAME)
                    .filter_map(|(_, n)| std::str::from_utf8(n).ok())
                    .map(str::to_ascii_lowercase)
                    .collect(),
            );
        }
        None
    })()
    .unwrap_or_default()
}
