//! external-dns's encrypted TXT registry (`--txt-encrypt-enabled`): a mark's text is
//! gzipped (best compression), sealed with AES-256-GCM under a 12-byte nonce and no
//! associated data, and written as the standard base64 (padded) of
//! `nonce ‖ ciphertext ‖ tag` (external-dns's `endpoint/crypto.go`).
use crate::config::AesKey;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::io::{Read, Write};

/// AES-GCM's tag, after the ciphertext.
const TAG_LEN: usize = 16;
/// A mark is a few hundred bytes; a plaintext that inflates past this is not one (and
/// is not inflated further).
const PLAIN_MAX: u64 = 64 * 1024;

/// A zone's key, ready to seal and open marks. Never shown.
pub struct Cipher(LessSafeKey);

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cipher(<redacted>)")
    }
}

impl Cipher {
    pub fn new(key: &AesKey) -> Cipher {
        let key = UnboundKey::new(&AES_256_GCM, key.bytes()).expect("AES-256 takes 32 bytes");
        Cipher(LessSafeKey::new(key))
    }

    /// `text` sealed under a fresh random nonce, as external-dns writes a mark.
    pub fn seal(&self, text: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).expect("the system's random source");
        self.seal_with_nonce(text, nonce)
    }

    /// `text` sealed under `nonce`: never reuse one with the same key (for tests and
    /// for keeping a value unchanged, as external-dns keeps a mark's nonce).
    pub fn seal_with_nonce(&self, text: &str, nonce: [u8; NONCE_LEN]) -> String {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(text.as_bytes()).expect("writing to memory");
        let mut data = gz.finish().expect("writing to memory");
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
            .expect("a mark is far below AES-GCM's limit");
        let mut out = nonce.to_vec();
        out.extend(data);
        STANDARD.encode(out)
    }

    /// The text sealed in `value` (the TXT's text, without quotes); `None` when it is
    /// not base64, too short, or not sealed with this key: then it may be a plain mark.
    /// A plaintext that is not gzip is taken as it is, as external-dns before v0.15 did.
    pub fn open(&self, value: &str) -> Option<String> {
        // Cheap refusals first: most TXT values are not base64 of anything sealed.
        if value.len() < (NONCE_LEN + TAG_LEN + 1).div_ceil(3) * 4 {
            return None;
        }
        let mut data = STANDARD.decode(value).ok()?;
        if data.len() <= NONCE_LEN + TAG_LEN {
            return None;
        }
        let (nonce, sealed) = data.split_at_mut(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self.0.open_in_place(nonce, Aad::empty(), sealed).ok()?;
        let mut text = Vec::new();
        let gunzipped = flate2::read::MultiGzDecoder::new(&plain[..])
            .take(PLAIN_MAX)
            .read_to_end(&mut text);
        if gunzipped.is_err() {
            text = plain.to_vec();
        }
        String::from_utf8(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> AesKey {
        let bytes: Vec<u8> = (0..32u8).map(|i| i.wrapping_add(seed)).collect();
        AesKey::parse(&bytes).unwrap()
    }

    /// Made by an independent implementation (Python's `cryptography` and `gzip`), so
    /// that dnsplane's reading is checked against more than itself:
    ///
    /// ```python
    /// import base64, gzip
    /// from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    /// key = bytes(range(32))
    /// nonce = bytes.fromhex("000102030405060708090a0b")
    /// plain = b"heritage=external-dns,external-dns/owner=my-cluster,external-dns/resource=ingress/default/web"
    /// sealed = AESGCM(key).encrypt(nonce, gzip.compress(plain, compresslevel=9, mtime=0), None)
    /// print(base64.b64encode(nonce + sealed).decode())
    /// ```
    const VECTOR_NONCE: [u8; NONCE_LEN] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    const VECTOR_PLAIN: &str = "heritage=external-dns,external-dns/owner=my-cluster,external-dns/resource=ingress/default/web";
    const VECTOR: &str = "AAECAwQFBgcICQoLWIneG8XlwhuPQsICauT4TY+TkKaE+VEv2e3B3Y9/gtwuj1SLsea+7L3Eo/Au1WtqMeci4HBaDP37rVbs59aN9eb9g4mxdqIiWrme31AtthU718lidkh3BcLqNbRt4dhsRW9H1s0=";

    #[test]
    fn opens_a_value_sealed_elsewhere_and_seals_one_that_opens_alike() {
        let c = Cipher::new(&key(0));
        assert_eq!(c.open(VECTOR).as_deref(), Some(VECTOR_PLAIN));
        // gzip's bytes may differ between implementations: the nonce is the same, and
        // the value opens to the same text.
        let ours = c.seal_with_nonce(VECTOR_PLAIN, VECTOR_NONCE);
        assert_eq!(ours[..16], VECTOR[..16], "the nonce leads");
        assert_eq!(c.open(&ours).as_deref(), Some(VECTOR_PLAIN));
        // One changed character of the value, or another key: not opened.
        let mut bad = VECTOR.to_string().into_bytes();
        bad[40] = if bad[40] == b'A' { b'B' } else { b'A' };
        assert_eq!(c.open(std::str::from_utf8(&bad).unwrap()), None);
        assert_eq!(Cipher::new(&key(1)).open(VECTOR), None);
    }

    #[test]
    fn seals_with_fresh_nonces_and_refuses_what_is_not_sealed() {
        let c = Cipher::new(&key(7));
        let (a, b) = (c.seal("hello"), c.seal("hello"));
        assert_ne!(a, b, "a fresh nonce each time");
        assert_eq!(c.open(&a).as_deref(), Some("hello"));
        assert_eq!(c.open(&b).as_deref(), Some("hello"));
        for not in [
            "",
            "v=spf1 -all",
            "heritage=external-dns,external-dns/owner=k8s,external-dns/resource=x",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            &a[..a.len() - 4],
        ] {
            assert_eq!(c.open(not), None, "{not:?}");
        }
        // A plaintext that is not gzip (old external-dns could write one) is taken as is.
        let mut raw = b"plain".to_vec();
        let nonce = [9u8; NONCE_LEN];
        c.0.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut raw)
            .unwrap();
        let value = STANDARD.encode([&nonce[..], &raw].concat());
        assert_eq!(c.open(&value).as_deref(), Some("plain"));
    }
}
