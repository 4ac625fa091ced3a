//! The links mailed to users: where they may point (the allow-lists, as
//! Directus compares them) and how their token is added.

/// Whether `url` is allowed by `list`: named exactly, or with the origin
/// and path of an entry (query and fragment aside), as Directus's
/// `isUrlAllowed` decides.
pub fn url_allowed(url: &str, list: &[String]) -> bool {
    if list.iter().any(|allowed| allowed == url) {
        return true;
    }
    let Some(wanted) = origin_and_path(url) else {
        return false;
    };
    list.iter()
        .filter_map(|allowed| origin_and_path(allowed))
        .any(|allowed| allowed == wanted)
}

/// Only web addresses count: an opaque `javascript:` or `data:` URL has
/// no origin.
fn origin_and_path(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some(format!(
        "{}{}",
        url.origin().ascii_serialization(),
        url.path()
    ))
}

/// `base` with `token=<token>` in its query (replacing a `token` it had).
pub fn with_token(base: &str, token: &str) -> String {
    match url::Url::parse(base) {
        Ok(mut url) => {
            let kept: Vec<(String, String)> = url
                .query_pairs()
                .filter(|(k, _)| k != "token")
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            url.query_pairs_mut()
                .clear()
                .extend_pairs(kept)
                .append_pair("token", token);
            url.to_string()
        }
        // A relative base (`PUBLIC_URL=/`, Directus's default).
        Err(_) => {
            let separator = if base.contains('?') { '&' } else { '?' };
            format!("{base}{separator}token={token}")
        }
    }
}

/// `public_url` and `path` joined by one slash.
pub fn on_public_url(public_url: &str, path: &str) -> String {
    format!(
        "{}/{}",
        public_url.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn urls_are_allowed_by_origin_and_path() {
        let allowed = list(&["https://site.example/verify", "not a url"]);
        assert!(url_allowed("https://site.example/verify", &allowed));
        assert!(url_allowed(
            "https://site.example/verify?from=mail",
            &allowed
        ));
        assert!(url_allowed("https://SITE.example:443/verify", &allowed));
        assert!(!url_allowed("https://site.example/verify/other", &allowed));
        assert!(!url_allowed("http://site.example/verify", &allowed));
        assert!(!url_allowed("https://evil.example/verify", &allowed));
        assert!(!url_allowed("javascript:alert(1)", &allowed));
        assert!(url_allowed("not a url", &allowed));
        assert!(!url_allowed("https://site.example/verify", &[]));
    }

    #[test]
    fn the_token_goes_in_the_query() {
        assert_eq!(
            with_token("https://site.example/verify", "abc"),
            "https://site.example/verify?token=abc"
        );
        assert_eq!(
            with_token("https://site.example/verify?lang=fr&token=old", "abc"),
            "https://site.example/verify?lang=fr&token=abc"
        );
        assert_eq!(
            with_token("/admin/reset-password", "abc"),
            "/admin/reset-password?token=abc"
        );
        assert_eq!(
            on_public_url("http://127.0.0.1:8055/", "/users/register/verify-email"),
            "http://127.0.0.1:8055/users/register/verify-email"
        );
    }
}
