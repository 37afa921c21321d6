//! HTML escaping of text put into a page std writes (a directory listing).

/// Escapes `&`, `<`, `>`, `"` and `'` so that `s` reads as text in HTML,
/// in an element or in a quoted attribute value.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_five_markup_characters_and_nothing_else() {
        assert_eq!(html_escape(""), "");
        assert_eq!(html_escape("plain name.txt"), "plain name.txt");
        assert_eq!(
            html_escape("<b>&\"x\"'s</b>"),
            "&lt;b&gt;&amp;&quot;x&quot;&#39;s&lt;/b&gt;"
        );
        assert_eq!(html_escape("&amp;"), "&amp;amp;");
        assert_eq!(html_escape("é ✓ %20"), "é ✓ %20");
    }
}
