//! The cases of the equality corpus, in curl's words, and the validators
//! the conditional ones send.

use crate::curl::CurlAnswer;
use std::time::{Duration, Instant};

/// One request of the corpus, in curl's words (`-I`, `-X`, `-H`, `-d`,
/// `-u`, `--path-as-is`), and the status HTTP/1.1 answers it with.
pub struct Case {
    pub name: &'static str,
    /// Which server: 0 the rows app, 1 the fallback one, 2 the site's
    /// rules.
    pub server: usize,
    pub path: &'static str,
    pub args: Vec<String>,
    pub status: u16,
}

/// A [`Case`].
pub fn case(
    name: &'static str,
    server: usize,
    path: &'static str,
    args: &[&str],
    status: u16,
) -> Case {
    Case {
        name,
        server,
        path,
        args: args.iter().map(|s| s.to_string()).collect(),
        status,
    }
}

impl Case {
    /// The case and what went `wrong` with its answers, for a test's
    /// failure message.
    pub fn failure(&self, wrong: &[String]) -> String {
        format!(
            "{} ({} {:?}):\n    {}",
            self.name,
            self.path,
            self.args,
            wrong.join("\n    ")
        )
    }
}

/// The validators the conditional cases send, read off the servers first
/// (`If-None-Match` and `If-Modified-Since` lines, ready for `-H`).
pub struct Validators {
    /// Of `/big.bin` on the rows app.
    pub inm: String,
    pub ims: String,
    /// Of the kept gzip variant of `/app.js` on the rows app.
    pub variant_inm: String,
    /// Of `/sub/?format=json` on the rows app.
    pub list_inm: String,
    /// Of `/small.txt` on the site's rules.
    pub small_inm: String,
}

impl Validators {
    /// The validators, read from the corpus's servers with `curl(server,
    /// path, args)` (over HTTP/1.1); the kept variants of the rows app's
    /// `app.js` made first ([`keep_variants`]).
    pub fn read(curl: impl Fn(usize, &str, &[&str]) -> CurlAnswer) -> Validators {
        let etag = |a: &CurlAnswer| a.header("etag").expect("an ETag").to_owned();
        let big = curl(0, "/big.bin", &[]);
        let variant_etag = keep_variants(|args| curl(0, "/app.js", args));
        Validators {
            inm: format!("If-None-Match: {}", etag(&big)),
            ims: format!(
                "If-Modified-Since: {}",
                big.header("last-modified").unwrap()
            ),
            variant_inm: format!("If-None-Match: {variant_etag}"),
            list_inm: format!(
                "If-None-Match: {}",
                etag(&curl(0, "/sub/?format=json", &[]))
            ),
            small_inm: format!("If-None-Match: {}", etag(&curl(2, "/small.txt", &[]))),
        }
    }
}

/// Asks for `app.js` with `curl(args)` as gzip, then as br, until each
/// is answered from a kept variant (the first answers are the identity,
/// the server compresses and keeps the file meanwhile; each server keeps
/// its own); the gzip variant's ETag.
pub fn keep_variants(curl: impl Fn(&[&str]) -> CurlAnswer) -> String {
    let mut variant_etag = String::new();
    for coding in ["gzip", "br"] {
        let started = Instant::now();
        let ae = format!("Accept-Encoding: {coding}");
        loop {
            let seen = curl(&["-H", &ae]);
            if seen.header("content-encoding") == Some(coding) {
                if coding == "gzip" {
                    variant_etag = seen.header("etag").expect("an ETag").to_owned();
                }
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "app.js never kept as {coding}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    variant_etag
}

/// Every case of the corpus; with `empty_and_large`, the cases of the
/// site's empty and large files too (HTTP/3's), after `dir: a file`.
pub fn cases(v: &Validators, empty_and_large: bool) -> Vec<Case> {
    let (inm, ims) = (v.inm.clone(), v.ims.clone());
    let (variant_inm, list_inm) = (v.variant_inm.clone(), v.list_inm.clone());
    let small_inm = v.small_inm.clone();
    let origin = "Origin: https://app.example";
    let acrm = "Access-Control-Request-Method: GET";
    let mut all = vec![
        case("String", 0, "/row/string?q=1", &[], 200),
        case("&'static str", 0, "/row/static", &[], 200),
        case("html::Raw", 0, "/row/html", &[], 200),
        case("Bytes", 0, "/row/bytes", &[], 200),
        case("fs::Mapped", 0, "/row/mapped", &[], 200),
        case("Response with headers", 0, "/row/response", &[], 201),
        case("HEAD of a Response", 0, "/row/response", &["-I"], 201),
        case("Result Ok", 0, "/row/ok", &[], 200),
        case("Result Err: 500, the error hidden", 0, "/row/err", &[], 500),
        case("a panicking handler: 500", 0, "/row/panic", &[], 500),
        case(
            "a request body echoed",
            0,
            "/row/echo",
            &["-d", "hello body"],
            200,
        ),
        case(
            "a wrong method: 405",
            0,
            "/row/static",
            &["-X", "DELETE"],
            405,
        ),
        case("Response wrapping a File", 0, "/row/wrapped", &[], 200),
        case("http::File", 0, "/file/big.bin", &[], 200),
        case("http::File, missing", 0, "/file/nope.bin", &[], 404),
        case("dir: a file", 0, "/big.bin", &[], 200),
    ];
    if empty_and_large {
        all.extend([
            case("an empty file", 0, "/empty.bin", &[], 200),
            case("HEAD of an empty file", 0, "/empty.bin", &["-I"], 200),
            case("a large file", 0, "/large.bin", &[], 200),
            case(
                "a large file, ranged",
                0,
                "/large.bin",
                &["-H", "Range: bytes=1000000-2999999"],
                206,
            ),
            case("HEAD of a large file", 0, "/large.bin", &["-I"], 200),
        ]);
    }
    all.extend([
        case("dir: a file again (kept)", 0, "/small.txt", &[], 200),
        case("dir: a file once more", 0, "/small.txt", &[], 200),
        case("dir: percent-encoded name", 0, "/sp%20ace.txt", &[], 200),
        case(
            "206 single range",
            0,
            "/big.bin",
            &["-H", "Range: bytes=10-19"],
            206,
        ),
        case(
            "206 suffix range",
            0,
            "/big.bin",
            &["-H", "Range: bytes=-7"],
            206,
        ),
        // spec/files.md: several ranges are answered with the whole file.
        case(
            "multi-range",
            0,
            "/big.bin",
            &["-H", "Range: bytes=0-1,5-9"],
            200,
        ),
        case("304 via If-None-Match", 0, "/big.bin", &["-H", &inm], 304),
        case(
            "304 via If-Modified-Since",
            0,
            "/big.bin",
            &["-H", &ims],
            304,
        ),
        case(
            "412 via If-Match",
            0,
            "/big.bin",
            &["-H", "If-Match: \"other\""],
            412,
        ),
        case("416", 0, "/big.bin", &["-H", "Range: bytes=999999-"], 416),
        case("HEAD of a file", 0, "/big.bin", &["-I"], 200),
        case("POST to a file", 0, "/big.bin", &["-d", "x"], 405),
        case("dir: a name not UTF-8", 0, "/caf%E9.txt", &[], 200),
        case("dir: its UTF-8 spelling", 0, "/caf%C3%A9.txt", &[], 404),
        case("dir: a directory not UTF-8", 0, "/d%FF/", &[], 200),
        case("dir: a file in it", 0, "/d%FF/x%FE.txt", &[], 200),
        case("dir: its slash redirect", 0, "/d%FF?x=1", &[], 301),
        case("dir: an encoded NUL", 0, "/caf%00.txt", &[], 400),
        case("dir: a bad escape", 0, "/d%FF/%zz", &[], 400),
        case(
            "dir: an encoded dot-dot",
            0,
            "/d%FF/%2E%2E/caf%E9.txt",
            &[],
            404,
        ),
        case(
            "http::File by the lossy param",
            0,
            "/file/caf%E9.txt",
            &[],
            404,
        ),
        case("directory index", 0, "/docs/", &[], 200),
        case("the top index", 0, "/", &[], 200),
        case("directory without slash: 301", 0, "/docs?x=1", &[], 301),
        case("a listing", 0, "/sub/", &[], 200),
        case(
            "a listing as JSON",
            0,
            "/sub/",
            &["-H", "Accept: application/json"],
            200,
        ),
        case(
            "a listing sorted",
            0,
            "/sub/?sort=size&order=desc&format=json",
            &[],
            200,
        ),
        case(
            "a listing sorted, HTML",
            0,
            "/sub/?sort=mtime&order=desc",
            &[],
            200,
        ),
        case(
            "a listing's 304",
            0,
            "/sub/?format=json",
            &["-H", &list_inm],
            304,
        ),
        case("HEAD of a listing", 0, "/sub/", &["-I"], 200),
        case(
            "sidecar .gz",
            0,
            "/page.css",
            &["-H", "Accept-Encoding: gzip"],
            200,
        ),
        case(
            "sidecar .br",
            0,
            "/page.css",
            &["-H", "Accept-Encoding: gzip, br"],
            200,
        ),
        case(
            "sidecar ranged",
            0,
            "/page.css",
            &["-H", "Accept-Encoding: gzip", "-H", "Range: bytes=5-9"],
            206,
        ),
        case("no sidecar asked", 0, "/page.css", &[], 200),
        case(
            "a kept gzip variant",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip"],
            200,
        ),
        case(
            "a kept br variant",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip, deflate, br, zstd"],
            200,
        ),
        case(
            "a kept variant, ranged",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip", "-H", "Range: bytes=10-99"],
            206,
        ),
        case(
            "a kept variant, 304",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip", "-H", &variant_inm],
            304,
        ),
        case(
            "a kept variant, HEAD",
            0,
            "/app.js",
            &["-I", "-H", "Accept-Encoding: br"],
            200,
        ),
        case("a sidecar by its name", 0, "/page.css.gz", &[], 200),
        case(
            "cache-control: hashed asset",
            0,
            "/assets/app-1a2b3c.js",
            &[],
            200,
        ),
        case("cache-control: assets/**", 0, "/assets/logo.txt", &[], 200),
        case(
            "not-found page for a missing name",
            0,
            "/missing.txt",
            &[],
            404,
        ),
        case("not-found page for HEAD", 0, "/missing.txt", &["-I"], 404),
        case("not-found page for a hidden name", 0, "/.env", &[], 404),
        case("not-found page for a symlink out", 0, "/out", &[], 404),
        case(
            "fallback for a missing name",
            1,
            "/some/app/route",
            &[],
            200,
        ),
        case("fallback HEAD", 1, "/some/app/route", &["-I"], 200),
        case(
            "fallback ranged",
            1,
            "/nope",
            &["-H", "Range: bytes=0-3"],
            206,
        ),
        case("fallback keeps hidden 404", 1, "/.env", &[], 404),
        case("the second index name", 1, "/homes/", &[], 200),
        case(
            "fallback: a missing asset stays 404",
            1,
            "/assets/app.3f2a.js",
            &["-H", "Accept: */*"],
            404,
        ),
        case(
            "fallback: a navigation with a dot",
            1,
            "/v1.2",
            &["-H", "Accept: text/html,*/*;q=0.8"],
            200,
        ),
        case("fallback server: a file", 1, "/small.txt", &[], 200),
        case(
            "fallback server: a directory without index",
            1,
            "/sub/",
            &[],
            200,
        ),
        case(
            "OPTIONS without rules: 204 Allow",
            0,
            "/small.txt",
            &["-X", "OPTIONS"],
            204,
        ),
        case("site: header rules on a file", 2, "/index.html", &[], 200),
        case("site: rules on the index", 2, "/", &[], 200),
        case(
            "site: rules on a 206",
            2,
            "/small.txt",
            &["-H", "Range: bytes=1-5"],
            206,
        ),
        case(
            "site: rules on a 304",
            2,
            "/small.txt",
            &["-H", &small_inm],
            304,
        ),
        case("site: Content-Disposition", 2, "/sub/a.txt", &[], 200),
        case(
            "site: a sidecar",
            2,
            "/page.css",
            &["-H", "Accept-Encoding: gzip"],
            200,
        ),
        case(
            "site: a 404 with the always rules",
            2,
            "/missing.txt",
            &[],
            404,
        ),
        case("site: the slash redirect", 2, "/sub", &[], 301),
        case("site: denied", 2, "/big.bin", &[], 403),
        case("site: denied HEAD", 2, "/big.bin", &["-I"], 403),
        case(
            "site: denied, a name not UTF-8",
            2,
            "/x%FF.secret",
            &[],
            403,
        ),
        case(
            "site: a CORS preflight",
            2,
            "/small.txt",
            &[
                "-X",
                "OPTIONS",
                "-H",
                origin,
                "-H",
                acrm,
                "-H",
                "Access-Control-Request-Headers: range",
            ],
            204,
        ),
        case(
            "site: a refused preflight",
            2,
            "/small.txt",
            &[
                "-X",
                "OPTIONS",
                "-H",
                "Origin: https://evil.example",
                "-H",
                acrm,
            ],
            204,
        ),
        case("site: OPTIONS", 2, "/small.txt", &["-X", "OPTIONS"], 204),
        case("site: a CORS GET", 2, "/small.txt", &["-H", origin], 200),
        case(
            "site: another origin's GET",
            2,
            "/small.txt",
            &["-H", "Origin: https://evil.example"],
            200,
        ),
        case("site: 401 without credentials", 2, "/docs/", &[], 401),
        case(
            "site: 401 with a wrong password",
            2,
            "/docs/",
            &["-u", "alice:nope"],
            401,
        ),
        case(
            "site: 200 with credentials",
            2,
            "/docs/",
            &["-u", "alice:open sesame"],
            200,
        ),
        case(
            "site: merged slashes",
            2,
            "//sub//a.txt",
            &["--path-as-is"],
            200,
        ),
        case(
            "site: a dot segment",
            2,
            "/sub/../small.txt",
            &["--path-as-is"],
            404,
        ),
    ]);
    all
}
