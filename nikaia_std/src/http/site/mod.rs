//! The operator's rules for the directory handler's answers
//! (`spec/site.md`): one name per request (`path`), the decisions taken
//! before a file is opened (deny, `OPTIONS` and CORS preflights, Basic
//! authentication: [`gate`]), and the headers put on what comes out
//! (`dress`). Target- and protocol-independent: a backend only runs the
//! bcrypt check the gate asks for off its event loop.

pub(crate) mod basic;
mod cors;
pub(crate) mod dav;
pub(crate) mod dress;
pub(crate) mod findings;
pub(crate) mod lock;
pub(crate) mod path;
pub(crate) mod resume;
pub(crate) mod upload;
pub(crate) mod write;

use super::request::Request;
use super::response::Response;
use crate::rt::{any_matches, Runtime, Users};
use bytes::Bytes;
use std::sync::Arc;

/// What the gate decided for a request of the directory handler.
pub(crate) enum Gate {
    /// Answer with this (a deny rule's 403, `OPTIONS`, a preflight, 401,
    /// 403); no file is opened.
    Answer(Response),
    /// A deny rule's 404: answered as a missing name is (the `not-found`
    /// page, never the `fallback`), so it tells nothing; never opened.
    Hide,
    /// Credentials to check off the event loop first.
    Verify(Check),
    /// Go on to the file.
    Pass(Grant),
}

/// What a request was let through with.
#[derive(Clone, Debug, Default)]
pub(crate) struct Grant {
    /// The user whose credentials were verified (for the access log).
    pub user: Option<String>,
    /// The users they were verified against (`AuthRule::generation`: the
    /// htpasswd file's path and contents). Compared with the rule that
    /// protects the file sent, under whichever runtime is current then, so
    /// a reload while the check ran cannot let other credentials through.
    pub users: Option<u64>,
}

/// Credentials to verify against one rule's users: bcrypt, off the loop.
pub(crate) struct Check {
    pub users: Arc<Users>,
    pub generation: u64,
    pub user: String,
    pub password: Vec<u8>,
    /// Who asked: at most [`PER_CLIENT`] of a client's checks wait at once.
    pub client: Option<std::net::IpAddr>,
    realm: String,
}

/// Checks one client may have waiting at once; past it, 503 (`spec/site.md`).
pub(crate) const PER_CLIENT: usize = 8;

/// What checking credentials found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Valid,
    Invalid,
    /// Too many checks wait already: 503, try again.
    Busy,
}

impl Check {
    /// The credentials `req` offers for the users of `rule`, to check; 401
    /// when it offers none (or malformed ones).
    pub(crate) fn of(rule: &crate::rt::AuthRule, req: &Request) -> Result<Check, Response> {
        let Some((user, password)) = req
            .header_bytes("authorization")
            .and_then(basic::credentials)
        else {
            return Err(unauthorized(&rule.realm));
        };
        Ok(Check {
            users: rule.users.clone(),
            generation: rule.generation,
            user,
            password,
            client: req.client().ip(),
            realm: rule.realm.clone(),
        })
    }

    /// The gate's decision once the check is done: through, or the answer.
    pub(crate) fn decide(self, verdict: Verdict) -> Result<Grant, Response> {
        match verdict {
            Verdict::Valid => Ok(Grant {
                user: Some(self.user),
                users: Some(self.generation),
            }),
            Verdict::Invalid => Err(unauthorized(&self.realm)),
            Verdict::Busy => {
                let mut r = Response::status_page(503);
                r.push_header("Retry-After", Bytes::from_static(b"1"));
                Err(r)
            }
        }
    }
}

/// The decisions before the file: deny, `OPTIONS`, auth (`spec/site.md`,
/// "The order of decisions"). `name` is the normalised request name,
/// `index` the directory's index names; `tls`: the connection is TLS;
/// `verified`: whether the backend's table of verified credentials has
/// these.
pub(crate) fn gate(
    rt: &Runtime,
    req: &Request,
    name: &std::path::Path,
    index: &[String],
    tls: bool,
    verified: impl FnOnce(&Check) -> bool,
) -> Gate {
    let site = &rt.site;
    let read = matches!(req.method(), "GET" | "HEAD" | "PROPFIND");
    if site.deny.is_empty() && site.auth.is_empty() && read {
        return Gate::Pass(Grant::default());
    }
    let name = name.to_string_lossy();
    let names = path::Candidates::of(&name, index);
    let matches = |patterns: &[crate::rt::Glob]| names.iter().any(|n| any_matches(patterns, n));
    if let Some(rule) = site.deny.iter().find(|r| matches(&r.patterns)) {
        return match rule.status {
            404 => Gate::Hide,
            status => Gate::Answer(Response::status_page(status)),
        };
    }
    if req.method() == "OPTIONS" {
        // The writes a rule allows here are allowed too (and only here).
        let writes = write::allowed(rt, &name);
        return Gate::Answer(match &site.cors {
            Some(cors) if cors::is_preflight(req) => cors::preflight(cors, req, &writes),
            _ => {
                let mut r = Response::new(204);
                r.push_header("Allow", allow(&writes));
                dav::options(rt, &name, &mut r);
                r
            }
        });
    }
    if !read {
        // Routed here for every method but the writer's (`serve_dir`).
        return Gate::Answer(not_allowed(rt, &name));
    }
    read_auth(rt, req, &names, tls, verified)
}

/// The read rules alone for `name` (deny, auth), whatever the method: a
/// WebDAV request's read (`PROPFIND`, a `COPY`'s source and members).
pub(crate) fn gate_read(
    rt: &Runtime,
    req: &Request,
    name: &str,
    tls: bool,
    verified: impl FnOnce(&Check) -> bool,
) -> Gate {
    let names = path::Candidates::of(name, &[]);
    let matches = |patterns: &[crate::rt::Glob]| names.iter().any(|n| any_matches(patterns, n));
    if let Some(rule) = rt.site.deny.iter().find(|r| matches(&r.patterns)) {
        return match rule.status {
            404 => Gate::Hide,
            status => Gate::Answer(Response::status_page(status)),
        };
    }
    read_auth(rt, req, &names, tls, verified)
}

/// The auth rule of a read of `names`, if one protects it.
fn read_auth(
    rt: &Runtime,
    req: &Request,
    names: &path::Candidates<'_>,
    tls: bool,
    verified: impl FnOnce(&Check) -> bool,
) -> Gate {
    let matches = |patterns: &[crate::rt::Glob]| names.iter().any(|n| any_matches(patterns, n));
    // A rule that protects writes only is the writer's (`write.rs`).
    let mut reads = rt.site.auth.iter().filter(|r| !r.writes_only);
    let Some(rule) = reads.find(|r| matches(&r.patterns)) else {
        return Gate::Pass(Grant::default());
    };
    if !tls && !rule.plain_http {
        return Gate::Answer(Response::status_page(403));
    }
    let check = match Check::of(rule, req) {
        Ok(check) => check,
        Err(unauthorized) => return Gate::Answer(unauthorized),
    };
    if verified(&check) {
        return match check.decide(Verdict::Valid) {
            Ok(grant) => Gate::Pass(grant),
            Err(resp) => Gate::Answer(resp),
        };
    }
    Gate::Verify(check)
}

/// Whether the file sent may go out to a request let through with
/// `grant`, by each of its `names` (the name it was opened by, and the
/// name it has under the root once symbolic links are followed): none
/// denied, and none protected by users the request was not verified
/// against (a `fallback` or `not-found` page may be protected where the
/// name asked for was not; a link may name a protected file).
pub(crate) fn may_send<'n>(
    rt: &Runtime,
    grant: &Grant,
    names: impl IntoIterator<Item = &'n str>,
) -> bool {
    let site = &rt.site;
    names.into_iter().all(|name| {
        !site.deny.iter().any(|r| any_matches(&r.patterns, name))
            && match (site.auth.iter())
                .filter(|r| !r.writes_only)
                .find(|r| any_matches(&r.patterns, name))
            {
                None => true,
                Some(rule) => grant.users == Some(rule.generation),
            }
    })
}

/// The `Allow` of a name: the directory handler's methods, and `writes`,
/// those a write rule allows for it ([`write::allowed`]). Every `OPTIONS`
/// answer and every 405 of the handler and its writer say it, from here.
fn allow(writes: &[&str]) -> Bytes {
    let mut methods = String::from("GET, HEAD, OPTIONS");
    for m in writes {
        methods.push_str(", ");
        methods.push_str(m);
    }
    Bytes::from(methods)
}

/// 405 for a method `name` does not allow, with the methods it does
/// (`name` normalised, with a trailing `/` for a directory).
pub(crate) fn not_allowed(rt: &Runtime, name: &str) -> Response {
    let mut r = Response::status_page(405);
    r.push_header("Allow", allow(&write::allowed(rt, name)));
    r
}

/// 401 asking for Basic credentials.
fn unauthorized(realm: &str) -> Response {
    let mut r = Response::status_page(401);
    let challenge = format!("Basic realm=\"{realm}\", charset=\"UTF-8\"");
    r.push_header("WWW-Authenticate", Bytes::from(challenge));
    r
}

// The runtime reads its htpasswd files from a directory (Linux tests).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::path::Path;

    fn runtime(text: &str, dir: &Path) -> Runtime {
        Runtime::parse(text, &dir.join("runtime.toml")).unwrap()
    }

    #[test]
    fn a_deny_rule_matches_a_name_that_is_not_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime(
            "[[deny]]\nmatch = \"*.secret\"\n\n[[deny]]\nmatch = \"d?/**\"\nstatus = 403\n",
            dir.path(),
        );
        let req =
            crate::http::h1::parse::test_request("GET /x%FF.secret HTTP/1.1\r\nHost: h\r\n\r\n");
        let gate = |name: &[u8]| {
            gate(
                &rt,
                &req,
                Path::new(std::ffi::OsStr::from_bytes(name)),
                &["index.html".to_string()],
                false,
                |_| false,
            )
        };
        assert!(matches!(gate(b"x\xff.secret"), Gate::Hide));
        assert!(matches!(gate(b"\xe9/x\xff.secret.gz"), Gate::Hide));
        match gate(b"d\xff/") {
            Gate::Answer(r) => assert_eq!(r.status(), 403),
            _ => panic!("d\\xff/ is denied with 403"),
        }
        assert!(matches!(gate(b"x\xff.txt"), Gate::Pass(_)));
    }

    #[test]
    fn a_grant_is_for_a_users_file_whatever_the_rules_became() {
        let dir = tempfile::tempdir().unwrap();
        let alice = "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n";
        std::fs::write(dir.path().join("a.htpasswd"), alice).unwrap();
        std::fs::write(dir.path().join("none.htpasswd"), "").unwrap();
        let old = runtime(
            "[[auth]]\nmatch = \"**\"\nhtpasswd = \"a.htpasswd\"\n",
            dir.path(),
        );
        // A reload while the check ran: secret/ now reads another file.
        let new = runtime(
            "[[auth]]\nmatch = \"secret/**\"\nhtpasswd = \"none.htpasswd\"\n\
             [[auth]]\nmatch = \"**\"\nhtpasswd = \"a.htpasswd\"\n",
            dir.path(),
        );
        let grant = Grant {
            user: Some("alice".into()),
            users: Some(old.site.auth[0].generation),
        };
        assert!(may_send(&old, &grant, ["secret/plan.txt"]));
        assert!(!may_send(&new, &grant, ["secret/plan.txt"]));
        assert!(may_send(&new, &grant, ["public.txt"]));
        assert!(!may_send(&new, &Grant::default(), ["public.txt"]));
    }
}
