//! What `nikaia check` says out loud of a site's write rules: a drive
//! anyone can change or whose password crosses the network in the clear,
//! names no `[[auth]]` rule protects, writers the users file does not
//! know, WebDAV writes without locks.

use crate::rt::{any_matches, Runtime};

/// What `nikaia check` says of the write rules (warnings): names a rule
/// covers that no `[[auth]]` rule protects (writes there are refused, or
/// open to anyone), and writers the users file that protects them does
/// not have. Each pattern is tried on a name made from it.
pub(crate) fn findings(rt: &Runtime) -> Vec<crate::rt::Finding> {
    let mut found = Vec::new();
    for (i, rule) in rt.site.write.iter().enumerate() {
        // A drive anyone can change, or whose password crosses the
        // network in the clear, is said out loud (`spec/site.md`, "WebDAV
        // class 1").
        let open = match (rule.anyone, rule.plain_http) {
            (true, _) => Some("without credentials (anyone = true)"),
            (false, true) => Some("on a plain listener (plain-http = true): its password crosses the network in the clear unless a proxy in front ends TLS"),
            (false, false) => None,
        };
        if let Some(how) = open.filter(|_| rule.webdav) {
            found.push(crate::rt::Finding {
                key: "write",
                message: format!("[[write]] rule {} lets WebDAV clients write {how}", i + 1),
                warning: true,
            });
        }
        for pattern in &rule.patterns {
            let Some(name) = sample(pattern) else {
                continue;
            };
            let auth = rt
                .site
                .auth
                .iter()
                .find(|a| any_matches(&a.patterns, &name));
            let message = match auth {
                None if rule.anyone => format!(
                    "[[write]] rule {} lets anyone write names such as `{name}` (anyone = true), \
                     which no [[auth]] rule protects",
                    i + 1
                ),
                None => format!(
                    "[[write]] rule {} covers names such as `{name}` that no [[auth]] rule \
                     protects: writes there are refused (403) until one does",
                    i + 1
                ),
                Some(auth) => {
                    let strangers: Vec<&str> = (rule.writers.iter())
                        .filter(|w| auth.users.hash(w).is_none())
                        .map(String::as_str)
                        .collect();
                    if strangers.is_empty() {
                        continue;
                    }
                    format!(
                        "[[write]] rule {}: writer(s) {} are not users of {}, which protects \
                         `{name}`",
                        i + 1,
                        strangers.join(", "),
                        auth.htpasswd.display()
                    )
                }
            };
            found.push(crate::rt::Finding {
                key: "write",
                message,
                warning: true,
            });
        }
    }
    // A drive Windows and Finder can only read (`spec/site.md`, "WebDAV
    // class 2: locks").
    let writes_dav = rt.site.write.iter().any(|r| r.webdav);
    if writes_dav && rt.site.webdav_locks.is_none() {
        found.push(crate::rt::Finding {
            key: "write",
            message: "WebDAV writes without [webdav-locks]: the server speaks class 1 only, and \
                      Windows' mini-redirector and macOS Finder mount it read-only (they write \
                      only after a LOCK)"
                .to_owned(),
            warning: true,
        });
    }
    found
}

/// A name `pattern` matches, made by putting `x` for each wildcard and
/// the first character of each class; `None` when that name does not
/// match it after all.
pub(crate) fn sample(pattern: &crate::rt::Glob) -> Option<String> {
    let text = pattern.as_str();
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str("x/x");
            }
            '*' | '?' => out.push('x'),
            '[' => {
                let first = chars.next().filter(|&c| c != '!' && c != '^');
                out.push(first.unwrap_or('x'));
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                }
            }
            c => out.push(c),
        }
    }
    pattern.matches(&out).then_some(out)
}
