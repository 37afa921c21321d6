//! Routes: exact paths and one tail wildcard (`/files/*name`), matched against
//! the path after it was percent-decoded (once, by the parser); each
//! method's handler with how it takes its body (`body.rs`).

use super::body::{MakeSink, Rule};
use super::request::Request;
use super::response::Response;

/// A handler called with the request (and, for a whole body, its body).
pub(crate) type Plain = Box<dyn Fn(&Request) -> Response + Send + Sync>;

/// What answers one method of a route.
pub(crate) enum Handler {
    /// Called once the request (and a whole body) is here.
    Plain(Plain),
    /// Called at head time for the sink its body is fed to.
    Stream(MakeSink),
    /// Called at head time for the file its body becomes.
    File(super::to_file::MakeFile),
}

/// A method's handler and its body declaration.
pub(crate) struct Entry {
    pub handler: Handler,
    pub rule: Rule,
}

impl Entry {
    /// A handler that takes no body.
    pub(crate) fn plain(handler: Plain) -> Entry {
        Entry {
            handler: Handler::Plain(handler),
            rule: Rule::NOTHING,
        }
    }
}

enum Pattern {
    Exact(String),
    /// Matches every path that starts with the prefix; the rest is the value.
    Tail(String),
}

struct Route {
    pattern: Pattern,
    handlers: Vec<(String, Entry)>,
    /// What answers every other method, instead of a 405 the router
    /// decides (`Router::otherwise`).
    other: Option<Entry>,
}

/// What a path and method found.
pub(crate) enum Found<'a> {
    /// The handler, and where the wildcard's value starts in the path.
    Handler(&'a Entry, Option<usize>),
    /// The path exists but not for this method: the `Allow` value.
    WrongMethod(String),
    Nothing,
}

#[derive(Default)]
pub(crate) struct Router {
    routes: Vec<Route>,
    /// The route and method added last (what `Server::max_body` changes).
    last: Option<(usize, String)>,
}

impl Router {
    /// Adds `handler` for `method` at `path`. A path ending in `/*name` is a
    /// tail wildcard. Panics on a path that does not start with `/`, as a
    /// programming error found at start-up.
    pub(crate) fn add(&mut self, method: &str, path: &str, entry: Entry) {
        assert!(path.starts_with('/'), "route {path:?} must start with '/'");
        let pattern = match path.rfind("/*") {
            Some(i) if !path[i + 2..].contains('/') => Pattern::Tail(path[..=i].to_owned()),
            _ => Pattern::Exact(path.to_owned()),
        };
        let same = |p: &Pattern| match (p, &pattern) {
            (Pattern::Exact(a), Pattern::Exact(b)) | (Pattern::Tail(a), Pattern::Tail(b)) => a == b,
            _ => false,
        };
        let method = method.to_ascii_uppercase();
        let key = match &pattern {
            Pattern::Exact(p) => (0, p.clone()),
            Pattern::Tail(p) => (1, p.clone()),
        };
        match self.routes.iter_mut().find(|r| same(&r.pattern)) {
            Some(route) => {
                route.handlers.retain(|(m, _)| *m != method);
                route.handlers.push((method.clone(), entry));
            }
            None => self.routes.push(Route {
                pattern,
                handlers: vec![(method.clone(), entry)],
                other: None,
            }),
        }
        // Exact routes first, then longer prefixes before shorter ones.
        self.routes.sort_by_key(|r| match &r.pattern {
            Pattern::Exact(_) => (0, 0),
            Pattern::Tail(p) => (1, usize::MAX - p.len()),
        });
        let at = self.routes.iter().position(|r| match (&r.pattern, &key) {
            (Pattern::Exact(p), (0, k)) | (Pattern::Tail(p), (1, k)) => p == k,
            _ => false,
        });
        self.last = at.map(|i| (i, method));
    }

    /// Has `entry` answer every method `path`'s route has no handler of
    /// its own for (`nikaia serve`'s directory handler: the site's rules
    /// decide what a name allows, and say it in the 405's `Allow`). The
    /// route must exist already.
    pub(crate) fn otherwise(&mut self, path: &str, entry: Entry) {
        let route = self.routes.iter_mut().find(|r| match &r.pattern {
            Pattern::Exact(p) => p == path,
            Pattern::Tail(prefix) => path.rfind("/*").is_some_and(|i| prefix == &path[..=i]),
        });
        route.expect("otherwise follows a route of the path").other = Some(entry);
    }

    /// The entry added last, to change its body declaration.
    pub(crate) fn last_mut(&mut self) -> Option<&mut Entry> {
        let (i, method) = self.last.as_ref()?;
        let route = self.routes.get_mut(*i)?;
        route
            .handlers
            .iter_mut()
            .find(|(m, _)| m == method)
            .map(|(_, e)| e)
    }

    /// The route for the decoded `path`'s bytes: its literal parts are
    /// UTF-8, so comparing them with the bytes is exact.
    pub(crate) fn find(&self, method: &str, path: &[u8]) -> Found<'_> {
        for route in &self.routes {
            let param = match &route.pattern {
                Pattern::Exact(p) if p.as_bytes() == path => None,
                Pattern::Tail(prefix) if path.starts_with(prefix.as_bytes()) => Some(prefix.len()),
                _ => continue,
            };
            let lookup = |m: &str| route.handlers.iter().find(|(hm, _)| hm == m);
            let hit =
                lookup(method).or_else(|| (method == "HEAD").then(|| lookup("GET")).flatten());
            return match (hit, &route.other) {
                (Some((_, h)), _) => Found::Handler(h, param),
                (None, Some(other)) => Found::Handler(other, param),
                (None, None) => Found::WrongMethod(allow(&route.handlers)),
            };
        }
        Found::Nothing
    }
}

fn allow(handlers: &[(String, Entry)]) -> String {
    let mut methods: Vec<&str> = handlers.iter().map(|(m, _)| m.as_str()).collect();
    if methods.contains(&"GET") && !methods.contains(&"HEAD") {
        methods.push("HEAD");
    }
    methods.sort_unstable();
    methods.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h() -> Entry {
        Entry::plain(Box::new(|_| Response::new(200)))
    }

    #[test]
    fn exact_then_longest_tail() {
        let mut r = Router::default();
        r.add("GET", "/*rest", h());
        r.add("GET", "/files/*name", h());
        r.add("GET", "/files/index", h());
        assert!(matches!(
            r.find("GET", b"/files/index"),
            Found::Handler(_, None)
        ));
        match r.find("GET", b"/files/a/b") {
            Found::Handler(_, Some(p)) => assert_eq!(p, "/files/".len()),
            _ => panic!(),
        }
        match r.find("GET", b"/x") {
            Found::Handler(_, Some(p)) => assert_eq!(p, 1),
            _ => panic!(),
        }
    }

    #[test]
    fn literals_match_the_bytes_of_a_path_that_is_not_utf8() {
        let mut r = Router::default();
        r.add("GET", "/files/*name", h());
        r.add("GET", "/caf\u{e9}", h());
        match r.find("GET", b"/files/caf\xe9.txt") {
            Found::Handler(_, Some(p)) => assert_eq!(p, "/files/".len()),
            _ => panic!(),
        }
        // The route's é is UTF-8; Latin-1's is another name.
        assert!(matches!(r.find("GET", b"/caf\xe9"), Found::Nothing));
        assert!(matches!(
            r.find("GET", "/caf\u{e9}".as_bytes()),
            Found::Handler(_, None)
        ));
    }

    #[test]
    fn head_uses_get_and_wrong_method_lists_allow() {
        let mut r = Router::default();
        r.add("GET", "/a", h());
        assert!(matches!(r.find("HEAD", b"/a"), Found::Handler(..)));
        match r.find("POST", b"/a") {
            Found::WrongMethod(allow) => assert_eq!(allow, "GET, HEAD"),
            _ => panic!(),
        }
        assert!(matches!(r.find("GET", b"/b"), Found::Nothing));
    }

    #[test]
    fn otherwise_answers_every_method_the_route_has_none_for() {
        let mut r = Router::default();
        r.add("GET", "/a/*rest", h());
        r.add("PUT", "/a/*rest", h());
        r.add("GET", "/b", h());
        r.otherwise("/a/*rest", Entry::plain(Box::new(|_| Response::new(405))));
        let status = |found: Found<'_>| match found {
            Found::Handler(e, _) => match &e.handler {
                Handler::Plain(h) => h(&crate::http::h1::parse::test_request(
                    "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
                ))
                .status(),
                _ => panic!(),
            },
            _ => 0,
        };
        assert_eq!(status(r.find("GET", b"/a/x")), 200);
        assert_eq!(status(r.find("HEAD", b"/a/x")), 200);
        assert_eq!(status(r.find("POST", b"/a/x")), 405);
        assert_eq!(status(r.find("PROPFIND", b"/a/")), 405);
        // Other routes keep the router's 405.
        assert!(matches!(r.find("POST", b"/b"), Found::WrongMethod(_)));
    }
}
