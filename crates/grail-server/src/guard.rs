//! Requests from browsers: which `Host` and `Origin` headers are accepted, and the
//! content type the JSON routes insist on.
//!
//! A web page can make a browser send a request to a local server: a "simple" POST
//! (`Content-Type: text/plain`) needs no CORS preflight, and DNS rebinding makes a page's
//! own host name resolve to 127.0.0.1, so the browser sends `Host: evil.example` and
//! reads the answer as same-origin. So, as local servers that fear rebinding do:
//!
//! - `Host` must name this server: `localhost` (or a name under `.localhost`), a loopback
//!   address, the address it listens on, or any IP address when it listens on all
//!   (`0.0.0.0`, `::`) — a rebinding page can only send a name, never an address it does
//!   not own. Other names must be allowed (`--allowed-host`).
//! - `Origin`, when a browser sends one, must be a page of an allowed host (any port) or
//!   be allowed itself (`--allowed-origin`); `null` is refused.
//! - `POST /v1/chat/completions` wants `Content-Type: application/json` (what every
//!   OpenAI client sends, and what a page cannot send cross-origin without a preflight
//!   this server never grants).
//!
//! `*` in either list allows everything.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, StatusCode, header};

use crate::error::ApiError;

/// Which hosts and origins are accepted (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct BrowserPolicy {
    /// The address the server listens on, once known.
    pub bound: Option<SocketAddr>,
    /// More host names (or `host:port`) to accept, lower case; `*`: any.
    pub allowed_hosts: Vec<String>,
    /// More origins (`scheme://host[:port]`) to accept, lower case; `*`: any.
    pub allowed_origins: Vec<String>,
}

impl BrowserPolicy {
    /// Refuses (403) a request whose `Host` or `Origin` is not accepted.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        if let Some(host) = headers.get(header::HOST) {
            let host = host.to_str().unwrap_or("").to_ascii_lowercase();
            if !self.host_allowed(&host) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "invalid_request_error",
                    "host_not_allowed",
                    format!(
                        "Host `{}` is not a name of this server; a name other than localhost or its address must be allowed with grail serve --allowed-host",
                        shown(&host)
                    ),
                ));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            if !self.origin_allowed(&origin) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "invalid_request_error",
                    "origin_not_allowed",
                    format!(
                        "requests from pages at `{}` are not accepted; allow that origin with grail serve --allowed-origin",
                        shown(&origin)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether `authority` (`host[:port]`, lower case) names this server.
    fn host_allowed(&self, authority: &str) -> bool {
        if self
            .allowed_hosts
            .iter()
            .any(|allowed| allowed == "*" || allowed == authority)
        {
            return true;
        }
        let name = host_part(authority);
        if self.allowed_hosts.iter().any(|allowed| allowed == name) {
            return true;
        }
        if name == "localhost" || name.ends_with(".localhost") {
            return true;
        }
        let Ok(address) = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        else {
            return false;
        };
        let address = address.to_canonical();
        address.is_loopback()
            || self.bound.is_some_and(|bound| {
                bound.ip().is_unspecified() || bound.ip().to_canonical() == address
            })
    }

    /// Whether a page at `origin` (`scheme://host[:port]`, lower case) may call.
    fn origin_allowed(&self, origin: &str) -> bool {
        if self
            .allowed_origins
            .iter()
            .any(|allowed| allowed == "*" || allowed == origin.trim_end_matches('/'))
        {
            return true;
        }
        match origin.split_once("://") {
            Some(("http" | "https", authority)) => {
                !authority.is_empty() && self.host_allowed(authority.trim_end_matches('/'))
            }
            _ => false,
        }
    }
}

/// The host of `host[:port]` or `[v6][:port]`.
fn host_part(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .split_once(']')
            .map_or(authority, |(host, _)| &authority[..host.len() + 1]);
    }
    match authority.rsplit_once(':') {
        // One colon: a port. More: a bare IPv6 address.
        Some((host, port))
            if !host.contains(':') && port.bytes().all(|byte| byte.is_ascii_digit()) =>
        {
            host
        }
        _ => authority,
    }
}

/// A header's text as shown in an error (at most 100 characters).
fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

/// Refuses (415) a body that is not declared JSON.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let media = declared
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media == "application/json"
        || (media.starts_with("application/") && media.ends_with("+json"))
    {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_request_error",
        "unsupported_media_type",
        format!(
            "the body must be sent as Content-Type: application/json (it was {})",
            if declared.is_empty() {
                "not declared".to_string()
            } else {
                format!("`{}`", shown(declared))
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(bound: &str) -> BrowserPolicy {
        BrowserPolicy {
            bound: Some(bound.parse().unwrap()),
            ..BrowserPolicy::default()
        }
    }

    #[test]
    fn hosts_that_name_this_server_pass_and_other_names_do_not() {
        let local = policy("127.0.0.1:8080");
        for host in [
            "localhost",
            "localhost:8080",
            "app.localhost:8080",
            "127.0.0.1:8080",
            "127.0.0.2",
            "[::1]:8080",
            "::1",
        ] {
            assert!(local.host_allowed(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.5:8080",
            "",
        ] {
            assert!(!local.host_allowed(host), "{host}");
        }
        // Listening on every address: any address, still no foreign name.
        let all = policy("0.0.0.0:8080");
        assert!(all.host_allowed("10.0.0.5:8080"));
        assert!(!all.host_allowed("evil.example"));
        let listed = BrowserPolicy {
            allowed_hosts: vec!["grail.internal".into()],
            ..policy("10.0.0.5:8080")
        };
        assert!(listed.host_allowed("grail.internal:8080"));
        assert!(listed.host_allowed("10.0.0.5"));
        assert!(!listed.host_allowed("10.0.0.6"));
    }

    #[test]
    fn origins_of_local_pages_pass_and_others_do_not() {
        let local = policy("127.0.0.1:8080");
        assert!(local.origin_allowed("http://localhost:3000"));
        assert!(local.origin_allowed("http://127.0.0.1:8080"));
        assert!(!local.origin_allowed("https://evil.example"));
        assert!(!local.origin_allowed("null"));
        assert!(!local.origin_allowed("file://"));
        let listed = BrowserPolicy {
            allowed_origins: vec!["https://app.example".into()],
            ..policy("127.0.0.1:8080")
        };
        assert!(listed.origin_allowed("https://app.example"));
        assert!(!listed.origin_allowed("https://app.example.evil"));
    }

    #[test]
    fn only_json_bodies_pass() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            require_json(&headers).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        headers.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(require_json(&headers).is_err());
        headers.insert(
            header::CONTENT_TYPE,
            "Application/JSON; charset=utf-8".parse().unwrap(),
        );
        assert!(require_json(&headers).is_ok());
    }
}
