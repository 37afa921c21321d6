//! The request target and `Host`, as every protocol carries them: the
//! target split into its path and query, and a host value checked (RFC
//! 9110 §7.2; `:authority` in HTTP/2 is the same value).

use super::request::{reject, Reject};

/// Splits a request target into its path and query. Origin-form (`/p?q`) and
/// absolute-form (`http://host/p?q`) are accepted; `*` only for OPTIONS.
pub(crate) fn split_target<'a>(
    method: &str,
    target: &'a str,
) -> Result<(&'a str, Option<&'a str>), Reject> {
    let rest = if target.starts_with('/') {
        target
    } else if target == "*" && method == "OPTIONS" {
        return Ok(("*", None));
    } else if let Some(after) = strip_scheme(target) {
        match after.find(['/', '?']) {
            Some(i) if after.as_bytes()[i] == b'/' => &after[i..],
            _ => return Err(reject(400, "absolute-form target without a path")),
        }
    } else {
        return Err(reject(400, "request target is not a path"));
    };
    Ok(match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    })
}

fn strip_scheme(target: &str) -> Option<&str> {
    let lower = target.get(..8)?.to_ascii_lowercase();
    if lower.starts_with("http://") {
        Some(&target[7..])
    } else if lower == "https://" {
        Some(&target[8..])
    } else {
        None
    }
}

/// A Host value: `uri-host [ ":" port ]`, or empty. Refuses anything that
/// could not be a host (spaces, slashes, `@`, controls).
pub(crate) fn valid_host(v: &[u8]) -> bool {
    v.iter().all(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b':' | b'[' | b']' | b'_' | b'~' | b'%')
    })
}
