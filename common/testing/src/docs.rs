//! Blocks and sections of the repository's Markdown documentation, for the tests that
//! check that what the docs show still holds.

/// The text of every fenced code block opened with "```" and `lang`, in order.
pub fn code_blocks<'a>(markdown: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}");
    markdown
        .split(fence.as_str())
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect()
}

/// The first `lang` block that contains `needle`; panics saying so when none does.
pub fn code_block_with<'a>(markdown: &'a str, lang: &str, needle: &str) -> &'a str {
    code_blocks(markdown, lang)
        .into_iter()
        .find(|b| b.contains(needle))
        .unwrap_or_else(|| panic!("no ```{lang} block with {needle:?}"))
}

/// The text under the heading `## title`, up to the next `## ` heading; panics when
/// there is no such heading.
pub fn section<'a>(markdown: &'a str, title: &str) -> &'a str {
    let heading = format!("## {title}");
    let after = markdown
        .split(heading.as_str())
        .nth(1)
        .unwrap_or_else(|| panic!("no {heading:?} section"));
    after.split("\n## ").next().unwrap_or(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# T\n\n## One\n\n```toml\na = 1\n```\n\n```sh\nls\n```\n\n## Two\n\n```toml\nb = [2]\n```\n";

    #[test]
    fn blocks_and_sections_are_found_in_order() {
        assert_eq!(code_blocks(DOC, "toml"), ["\na = 1\n", "\nb = [2]\n"]);
        assert_eq!(code_block_with(DOC, "toml", "b ="), "\nb = [2]\n");
        assert_eq!(code_blocks(section(DOC, "One"), "sh"), ["\nls\n"]);
        assert!(!section(DOC, "One").contains("b = [2]"));
    }
}
