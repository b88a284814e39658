//! What of a remote backend may be shown to clients: its URL without credentials, and
//! upstream text (error bodies, events) cut short with the backend's secrets taken out.
//!
//! A backend URL may carry `user:password@`, and an upstream server may echo the key it
//! was sent in an error ("Incorrect API key provided: sk-…"). Error messages go to
//! clients, so every upstream text passes through [`Redactor::redact`]: the key, the
//! user and the password (as written and percent-decoded) become `[redacted]`, as does
//! whatever follows `Bearer `; the result is cut at [`SHOWN_CHARS`] characters.

/// The most characters of upstream text an error shows.
pub const SHOWN_CHARS: usize = 500;

const REDACTED: &str = "[redacted]";

/// Takes a backend's secrets out of text shown to clients.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these secrets (empty and very short ones are skipped: a
    /// one-letter user name would blank out every such letter).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .flat_map(|secret| {
                let decoded = percent_decode(&secret);
                [secret, decoded]
            })
            .filter(|secret| secret.chars().count() >= 3)
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` without the secrets or bearer tokens, at most [`SHOWN_CHARS`] characters
    /// (an ellipsis says it was cut).
    pub fn redact(&self, text: &str) -> String {
        // Cut first (with room for the replacements), so a huge text is not copied whole.
        let mut cut: String = text.chars().take(SHOWN_CHARS * 2).collect();
        for secret in &self.secrets {
            if cut.contains(secret.as_str()) {
                cut = cut.replace(secret.as_str(), REDACTED);
            }
        }
        cut = redact_bearer(&cut);
        let shortened =
            text.chars().nth(SHOWN_CHARS * 2).is_some() || cut.chars().nth(SHOWN_CHARS).is_some();
        let mut shown: String = cut.chars().take(SHOWN_CHARS).collect();
        if shortened {
            shown.push('…');
        }
        shown
    }
}

/// Replaces the token after each `Bearer ` (any case).
fn redact_bearer(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(at) = lower[from..].find("bearer ") {
        let token_start = from + at + "bearer ".len();
        out.push_str(&text[from..token_start]);
        let token_end = text[token_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']'))
            .map_or(text.len(), |end| token_start + end);
        if token_end > token_start {
            out.push_str(REDACTED);
        }
        from = token_end;
    }
    out.push_str(&text[from..]);
    out
}

/// `%XX` escapes decoded (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| text.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                index += 3;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL's credentials (`user:password@`), split off: the URL without them, and them.
pub fn split_credentials(url: &str) -> (String, Vec<String>) {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let secrets = match userinfo.split_once(':') {
                Some((user, password)) => vec![user.to_string(), password.to_string()],
                None => vec![userinfo.to_string()],
            };
            (format!("{scheme}{host}{path}"), secrets)
        }
        None => (url.to_string(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_url() {
        let (url, secrets) = split_credentials("http://alice:s3cr%40t@127.0.0.1:8081/v1");
        assert_eq!(url, "http://127.0.0.1:8081/v1");
        assert_eq!(secrets, ["alice", "s3cr%40t"]);
        assert_eq!(
            split_credentials("http://127.0.0.1:8081"),
            ("http://127.0.0.1:8081".to_string(), Vec::new())
        );
    }

    #[test]
    fn secrets_and_bearer_tokens_are_replaced_and_long_text_cut() {
        let redactor = Redactor::new(["sk-upstream-123".to_string(), "s3cr%40t".to_string()]);
        let shown = redactor.redact(
            "Incorrect API key provided: sk-upstream-123; password s3cr@t; header Authorization: Bearer abc.def",
        );
        assert!(!shown.contains("sk-upstream-123"), "{shown}");
        assert!(!shown.contains("s3cr@t"), "{shown}");
        assert!(!shown.contains("abc.def"), "{shown}");
        assert!(shown.contains("Bearer [redacted]"), "{shown}");
        let long = redactor.redact(&"x".repeat(10_000_000));
        assert_eq!(long.chars().count(), SHOWN_CHARS + 1);
        assert!(long.ends_with('…'));
    }
}
