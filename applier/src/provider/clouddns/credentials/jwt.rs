//! A service account's signed JWT (RS256 over its PEM private key), kept apart from
//! the token chain that uses it.
use super::SCOPE;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use std::time::{SystemTime, UNIX_EPOCH};

/// The DER inside a PEM block (`-----BEGIN PRIVATE KEY-----`).
fn pem_der(pem: &str) -> Result<(String, Vec<u8>), String> {
    let begin = pem
        .find("-----BEGIN ")
        .ok_or("the private_key is not PEM")?;
    let rest = &pem[begin + 11..];
    let label_end = rest.find("-----").ok_or("the private_key is not PEM")?;
    let label = rest[..label_end].to_string();
    let body = &rest[label_end + 5..];
    let end = body
        .find("-----END")
        .ok_or("the private_key PEM has no END line")?;
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD
        .decode(b64)
        .map_err(|e| format!("the private_key PEM is not base64: {e}"))?;
    Ok((label, der))
}

/// A service account's JWT for `aud`, signed RS256 with its PEM private key, valid
/// for an hour from `now`.
pub fn sign_jwt(
    email: &str,
    key_id: Option<&str>,
    aud: &str,
    pem: &str,
    now: SystemTime,
) -> Result<String, String> {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
    let (label, der) = pem_der(pem)?;
    let key = match label.as_str() {
        "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
        _ => RsaKeyPair::from_pkcs8(&der),
    }
    .map_err(|e| format!("the private_key is not an RSA key: {e}"))?;
    let iat = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key_id {
        header["kid"] = serde_json::json!(kid);
    }
    let claims = serde_json::json!({
        "iss": email,
        "scope": SCOPE,
        "aud": aud,
        "iat": iat,
        "exp": iat + 3600,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut sig = vec![0u8; key.public_modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signing_input.as_bytes(),
        &mut sig,
    )
    .map_err(|_| "signing failed".to_string())?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
}
