//! The page around the report's body: a Content-Security-Policy that lets it load nothing but its own inline style, its own script (both by hash) and `data:` images, so the page works offline and a stored name cannot make it fetch or run anything.

use base64::Engine;
use sha2::{Digest, Sha256};

/// Sorts the tables on a click (no library, nothing fetched).
const SCRIPT: &str = include_str!("sort.js");
/// The system's own fonts, no web fonts.
const STYLE: &str = include_str!("style.css");

/// A CSP source that allows exactly `text` as an inline `<script>` or `<style>`.
fn hash_source(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The policy: nothing by default (no fetch, XHR, WebSocket, font, frame or object), images only
/// from `data:` (the charts), the page's own style and script only.
pub(super) fn content_security_policy() -> String {
    format!(
        "default-src 'none'; img-src data:; style-src {}; script-src {}; base-uri 'none'; form-action 'none'",
        hash_source(STYLE),
        hash_source(SCRIPT)
    )
}

/// The whole page: `title` is text (escaped here), `body` is HTML.
pub(super) fn page(title: &str, body: &str) -> String {
    let title = super::body::escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<link rel=\"icon\" href=\"data:,\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        csp = content_security_policy(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_the_pages_own_script_and_style_and_nothing_from_the_network() {
        let csp = content_security_policy();
        assert!(
            csp.starts_with("default-src 'none'; img-src data:;"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe") && !csp.contains("http"), "{csp}");
        let page = page("t <b>", "<p>x</p>\n");
        assert!(page.contains(&format!("<script>{SCRIPT}</script>")));
        assert!(page.contains(&format!("<style>{STYLE}</style>")));
        assert!(page.contains("<title>t &lt;b&gt;</title>"), "{page}");
        // The hash of what the page holds: a byte changed in the script would break it.
        assert_eq!(hash_source("alert(1)").len(), "'sha256-'".len() + 44);
        assert_ne!(hash_source(SCRIPT), hash_source(STYLE));
    }
}
