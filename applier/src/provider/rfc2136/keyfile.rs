//! TSIG keys as BIND writes them: a key file (`tsig-keygen` output, possibly several
//! keys) or a bare base64 secret. Errors never quote the secret.
use super::config::TsigAlgorithm;
use base64::Engine as _;

/// The TSIG key a key file holds.
pub(super) struct Key {
    pub(super) name: String,
    pub(super) algorithm: TsigAlgorithm,
    pub(super) secret: Vec<u8>,
}

/// Reads a BIND key file (`key "name" { algorithm …; secret "…"; };`, possibly
/// several keys) or a bare base64 secret. Errors never quote the secret.
pub(super) fn read_key(
    text: &str,
    want_name: Option<&str>,
    want_alg: Option<TsigAlgorithm>,
) -> Result<Key, String> {
    let same_name = |a: &str, b: &str| {
        a.trim_end_matches('.')
            .eq_ignore_ascii_case(b.trim_end_matches('.'))
    };
    let tokens = tokenize(text);
    if tokens.first().map(String::as_str) != Some("key") {
        // A bare secret.
        let name = want_name.ok_or("holds a bare secret, so tsig_key_name must be set")?;
        let b64: String = text.split_whitespace().collect();
        return Ok(Key {
            name: name.to_string(),
            algorithm: want_alg.unwrap_or_default(),
            secret: decode_secret(&b64)?,
        });
    }
    // key NAME { algorithm ALG ; secret "S" ; } ;
    let mut keys = Vec::new();
    let mut it = tokens.iter().map(String::as_str).peekable();
    while let Some(tok) = it.next() {
        if tok != "key" {
            continue;
        }
        let name = it.next().ok_or("a key has no name")?.to_string();
        if it.next() != Some("{") {
            return Err(format!("key {name:?}: expected '{{'"));
        }
        let (mut alg, mut secret) = (None, None);
        loop {
            match it.next() {
                Some("}") | None => break,
                Some("algorithm") => alg = it.next().map(str::to_string),
                Some("secret") => secret = it.next().map(str::to_string),
                Some(_) => {}
            }
        }
        keys.push((name, alg, secret));
    }
    let (name, alg, secret) = match want_name {
        Some(want) => keys
            .into_iter()
            .find(|(n, _, _)| same_name(n, want))
            .ok_or_else(|| format!("holds no key named {want:?}"))?,
        None if keys.len() == 1 => keys.into_iter().next().ok_or("holds no key")?,
        None => return Err("holds several keys; set tsig_key_name to pick one".into()),
    };
    let alg_text = alg.ok_or_else(|| format!("key {name:?} has no algorithm"))?;
    let algorithm = TsigAlgorithm::parse(&alg_text).ok_or_else(|| {
        format!("key {name:?}: algorithm {alg_text:?} is not supported (hmac-sha256, hmac-sha384, hmac-sha512)")
    })?;
    if let Some(want) = want_alg
        && want != algorithm
    {
        return Err(format!(
            "key {name:?} is {}, but tsig_algorithm says {}",
            algorithm.as_str(),
            want.as_str()
        ));
    }
    let secret = secret.ok_or_else(|| format!("key {name:?} has no secret"))?;
    Ok(Key {
        name,
        algorithm,
        secret: decode_secret(&secret)?,
    })
}

pub(super) fn decode_secret(b64: &str) -> Result<Vec<u8>, String> {
    // The decoder's own error quotes a byte of the secret: say less.
    let secret = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|_| "the secret is not valid base64".to_string())?;
    if secret.is_empty() {
        return Err("the secret is empty".into());
    }
    Ok(secret)
}

/// named.conf tokens: words, quoted strings (unquoted), `{`, `}`, `;`; comments
/// (`//`, `#`, `/* */`) dropped.
pub(super) fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '{' | '}' | ';' => out.push(c.to_string()),
            '"' => {
                let mut s = String::new();
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    s.push(c);
                }
                out.push(s);
            }
            c => {
                let mut s = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || matches!(n, '{' | '}' | ';' | '"') {
                        break;
                    }
                    s.push(n);
                    chars.next();
                }
                out.push(s);
            }
        }
    }
    out
}
