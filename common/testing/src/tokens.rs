//! The planner's `tokens.toml`, written for tests.

/// A `tokens.toml` of `entries` (name, token, role, extra lines such as `zones = …`),
/// each token given by its `digest` (the planner's `auth::tokens::digest_hex`).
pub fn tokens_toml(
    entries: &[(&str, &str, &str, &str)],
    digest: impl Fn(&str) -> String,
) -> String {
    entries
        .iter()
        .map(|(name, token, role, extra)| {
            format!(
                "[[token]]\nname = \"{name}\"\nsha256 = \"{}\"\nrole = \"{role}\"\n{extra}\n",
                digest(token)
            )
        })
        .collect()
}
