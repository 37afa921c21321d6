//! The runtime file's keys that are tables or come in groups — listeners,
//! `cache-control` and the pages, `[acme]`, `[[certificate]]`, HTTP/2's,
//! a site's rules, request bodies' limits and clocks — read, defaulted and
//! refused (`spec/runtime-file.md`, "Keys").

use super::*;

#[test]
fn listen_takes_v4_and_v6() {
    assert_eq!(
        ok("listen = \"0.0.0.0:80\"").listen,
        vec![Listen::tcp(SocketAddr::from(([0, 0, 0, 0], 80)))]
    );
    assert_eq!(
        ok("listen = \"[::]:443\"").listen,
        vec![Listen::tcp("[::]:443".parse().unwrap())]
    );
}

#[test]
fn listen_takes_a_list_of_addresses_and_tables() {
    let rt = ok(r#"
tls-cert = "cert.pem"
tls-key = "key.pem"
listen = [
  "[::]:443",
  { address = "0.0.0.0:80", tls = false, https-redirect = true },
  { address = "[::]:80", tls = false, https-redirect = 8443 },
  { address = "unix:sock/http.sock", tls = false, mode = "0600", name = "web" },
]
"#);
    let file_dir = std::env::current_dir().unwrap();
    assert_eq!(rt.listen.len(), 4);
    assert_eq!(rt.listen[0], Listen::tcp("[::]:443".parse().unwrap()));
    assert!(
        rt.speaks_tls(&rt.listen[0]),
        "a bare entry follows the pair"
    );
    assert_eq!(rt.listen[1].tls, Some(false));
    assert_eq!(
        rt.listen[1].https_redirect,
        Some(HttpsRedirect::TlsListener)
    );
    assert_eq!(rt.listen[2].https_redirect, Some(HttpsRedirect::Port(8443)));
    assert_eq!(
        rt.listen[3].address,
        ListenAddr::Unix(file_dir.join("sock/http.sock"))
    );
    assert_eq!(rt.listen[3].mode, 0o600);
    assert_eq!(rt.listen[3].name.as_deref(), Some("web"));
    // What `nikaia check` prints reads back the same.
    assert_eq!(ok(&rt.to_toml()), rt);
}

#[test]
fn cache_control_not_found_and_fallback() {
    let rt = ok(r#"
not-found = "errors/404.html"
fallback = "index.html"

[cache-control]
default = "no-cache"
"*.html" = "no-cache"
"assets/*-[0-9a-f]*.*" = "public, max-age=31536000, immutable"
"assets/**" = "public, max-age=3600"
"#);
    assert_eq!(rt.not_found.as_deref(), Some("errors/404.html"));
    assert_eq!(rt.fallback.as_deref(), Some("index.html"));
    let cc = &rt.cache_control;
    let patterns: Vec<&str> = cc.rules.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(patterns, ["*.html", "assets/*-[0-9a-f]*.*", "assets/**"]);
    // The first rule that matches wins, in file order; else the default.
    assert_eq!(
        cc.value_for("assets/app-3fa9c1.js"),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(
        cc.value_for("assets/logo.png"),
        Some("public, max-age=3600")
    );
    assert_eq!(cc.value_for("docs/index.html"), Some("no-cache"));
    assert_eq!(cc.value_for("robots.txt"), Some("no-cache"));
    // A string is the value for every file; an inline table is a table.
    let one = ok("cache-control = \"max-age=60\"\n").cache_control;
    assert_eq!(
        (one.default.as_deref(), one.rules.len()),
        (Some("max-age=60"), 0)
    );
    let inline = ok("cache-control = { \"*.css\" = \"max-age=60\" }\n").cache_control;
    assert_eq!(inline.value_for("a/b.css"), Some("max-age=60"));
    assert_eq!(inline.value_for("a/b.js"), None, "no default: no header");
    // A dot-name is allowed: the page need not be servable itself.
    assert_eq!(
        ok("not-found = \".errors/404.html\"").not_found.as_deref(),
        Some(".errors/404.html")
    );
}

#[test]
fn an_acme_table_names_dns_names_and_says_the_terms_are_agreed() {
    let rt = ok(r#"
[acme]
domains = ["Example.ORG", "www.example.org."]
contact = "ops@example.org"
directory = "https://acme-staging-v02.api.letsencrypt.org/directory"
agree-to-terms = true
storage = "state/acme"
profile = "tlsserver"
key-type = "ecdsa-p384"
challenges = ["tls-alpn-01"]
eab-kid = "kid-1"
eab-hmac-key = "eab.key"
"#);
    let acme = rt.acme.as_ref().unwrap();
    assert_eq!(acme.domains, ["example.org", "www.example.org"]);
    assert_eq!(acme.contact, ["mailto:ops@example.org"]);
    assert_eq!(acme.storage, std::path::absolute("state/acme").unwrap());
    assert_eq!(acme.key_type, nikaia_std::rt::KeyType::EcdsaP384);
    assert_eq!(acme.challenges, [nikaia_std::rt::ChallengeKind::TlsAlpn01]);
    assert_eq!(acme.eab.as_ref().unwrap().kid, "kid-1");
    // It makes the listeners speak TLS, and round-trips.
    assert!(rt.speaks_tls(&rt.listen[0]));
    assert_eq!(ok(&rt.to_toml()), rt);
    let defaults = ok("[acme]\ndomains = [\"example.org\"]\nagree-to-terms = true\n");
    let acme = defaults.acme.unwrap();
    assert_eq!(acme.directory, nikaia_std::rt::LETS_ENCRYPT);
    assert_eq!(acme.challenges.len(), 2);

    assert_eq!(
        errors(
            r#"
[acme]
domains = ["*.example.org", "192.0.2.1", "localhost", "ok.example", "ok.example"]
directory = "http://ca.example/dir"
challenges = ["dns-01"]
eab-kid = "k"
agree-to-terms = false
"#
        ),
        "runtime.toml:3:12: error: key `acme`: `domains`: \"*.example.org\": a wildcard needs the DNS-01 challenge, which is not offered\n\
         runtime.toml:3:29: error: key `acme`: `domains`: \"192.0.2.1\": an IP address, not a DNS name\n\
         runtime.toml:3:42: error: key `acme`: `domains`: \"localhost\": a DNS name of one label (a CA issues only for names with a dot)\n\
         runtime.toml:3:69: error: key `acme`: `domains`: \"ok.example\" is named twice\n\
         runtime.toml:4:13: error: key `acme`: `directory`: \"http://ca.example/dir\" is not an https:// URL (a CA's directory is served over HTTPS)\n\
         runtime.toml:5:15: error: key `acme`: `challenges`: \"dns-01\" is not offered (it needs the DNS zone's API)\n\
         runtime.toml:6:11: error: key `acme`: `eab-kid` needs `eab-hmac-key`, the file holding the key\n"
    );
    assert_eq!(
        errors("[acme]\ndomains = [\"example.org\"]\n"),
        "runtime.toml:1:1: error: key `acme`: no account is made until `agree-to-terms = true` says the operator agreed to the CA's terms of service (the directory's `meta.termsOfService`)\n"
    );
}

#[test]
fn an_acme_table_leaves_its_names_and_terms_to_the_command_line_only_when_told() {
    use nikaia_std::rt::{Acme, AcmeNames};
    let dir = tempfile::tempdir().unwrap();
    let read = |text: &str, names: AcmeNames| {
        let file = dir.path().join(FILE);
        std::fs::write(&file, text).unwrap();
        Runtime::load_with(&file, names)
            .map_err(|e| render(&e).replace(&format!("{}", file.display()), FILE))
    };
    // The systemd unit's file: only the storage.
    let bare = "[acme]\nstorage = \"/var/lib/nikaia/acme\"\n";
    assert_eq!(
        read(bare, AcmeNames::File).unwrap_err(),
        "runtime.toml:1:1: error: key `acme`: `[acme]` needs `domains`, the names to obtain \
         certificates for (or `nikaia serve --domain NAME`, once per name)\n"
    );
    for names in [AcmeNames::CommandLine, AcmeNames::FileOrCommandLine] {
        let acme = read(bare, names).unwrap().acme.unwrap();
        assert!(acme.domains.is_empty() && !acme.agree_to_terms, "{names:?}");
        assert!(acme.incomplete().unwrap().contains("names no domain"));
    }
    // Names without the terms: the command line agrees; the file alone,
    // or perhaps alone, must.
    let named = "[acme]\ndomains = [\"example.org\"]\n";
    let acme = read(named, AcmeNames::CommandLine).unwrap().acme.unwrap();
    assert_eq!(acme.domains, ["example.org"]);
    assert!(acme.incomplete().unwrap().contains("agree-to-terms = true"));
    for names in [AcmeNames::File, AcmeNames::FileOrCommandLine] {
        let e = read(named, names).unwrap_err();
        assert!(e.contains("agree-to-terms = true"), "{names:?}: {e}");
    }
    // Every other field is checked as ever.
    let e = read(
        "[acme]\ndirectory = \"http://ca\"\n",
        AcmeNames::CommandLine,
    )
    .unwrap_err();
    assert!(e.contains("is not an https:// URL"), "{e}");
    // The effective configuration leaves the names out, and reads back.
    let rt = read(bare, AcmeNames::FileOrCommandLine).unwrap();
    assert!(!rt.to_toml().contains("domains"), "{}", rt.to_toml());
    let again = read(&rt.to_toml(), AcmeNames::FileOrCommandLine).unwrap();
    assert_eq!(again.acme, rt.acme);
    let mut full = Acme::new(vec!["example.org".into()]);
    full.agree_to_terms = true;
    assert_eq!(full.incomplete(), None);
}

#[test]
fn a_server_given_an_acme_table_without_names_or_terms_refuses_to_start() {
    use nikaia_std::rt::Acme;
    for (domains, agree, why) in [
        (vec![], true, "names no domain"),
        (
            vec!["example.org".to_owned()],
            false,
            "agree-to-terms = true",
        ),
    ] {
        let mut acme = Acme::new(domains);
        acme.agree_to_terms = agree;
        let mut rt = Runtime::default();
        rt.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0)).into()];
        rt.workers = 1;
        rt.access_log = LogTarget::Off;
        rt.acme = Some(acme);
        let refused = nikaia_std::http::Server::with_runtime(rt)
            .route("/", |_| "x")
            .start()
            .err()
            .expect("the start is refused");
        assert!(refused.to_string().contains(why), "{refused}");
    }
}

#[test]
fn certificate_tables_name_pairs_and_at_most_one_default() {
    let rt = ok(r#"
tls-cert = "short.pem"
tls-key = "short.key"

[[certificate]]
cert = "/etc/site/a.pem"
key = "a.key"

[[certificate]]
cert = "b.pem"
key = "b.key"
default = true
"#);
    let here = std::path::absolute(".").unwrap();
    let pairs = rt.pairs();
    assert_eq!(pairs.len(), 3);
    assert_eq!(
        (pairs[0].cert.clone(), pairs[0].default),
        (here.join("short.pem"), false)
    );
    assert_eq!(
        (pairs[1].cert.clone(), pairs[1].key.clone()),
        (PathBuf::from("/etc/site/a.pem"), here.join("a.key"))
    );
    assert!(pairs[2].default);
    // A `[[certificate]]` alone makes the listeners speak TLS.
    let rt = ok("certificate = [{ cert = \"c.pem\", key = \"k.pem\" }]\n");
    assert!(rt.has_certificates() && rt.speaks_tls(&rt.listen[0]));
    assert!(ok("listen = { address = \"127.0.0.1:1\", tls = true }\ncertificate = [{ cert = \"c.pem\", key = \"k.pem\" }]\n").speaks_tls(&rt.listen[0]));

    assert_eq!(
        errors(
            r#"
[[certificate]]
cert = "a.pem"
default = true

[[certificate]]
key = "b.key"
crt = "b.pem"

[[certificate]]
cert = "c.pem"
key = "c.key"
default = true
"#
        ),
        "runtime.toml:2:1: error: key `certificate`: a certificate needs `key` (the PEM private key)\n\
         runtime.toml:8:1: error: key `certificate`: unknown field `crt`; the fields are `cert`, `key` and `default`\n\
         runtime.toml:13:11: error: key `certificate`: a second pair marked `default`; one pair at most is the default\n"
    );
    assert_eq!(
        errors("certificate = \"a.pem\"\n"),
        "runtime.toml:1:15: error: key `certificate`: expected a list of tables, written [[certificate]], found a string\n"
    );
}

#[test]
fn http2_is_a_boolean_and_its_request_cap_a_count() {
    for (text, want) in [
        ("http2 = \"false\"", "write it without quotes"),
        ("http2 = 1", "expected true or false"),
        ("http2-max-requests = 0", "from 1 to"),
    ] {
        let errors = Runtime::parse(text, Path::new("r.toml")).unwrap_err();
        assert!(
            errors[0].message.contains(want),
            "{text}: {}",
            errors[0].message
        );
        assert_eq!(
            (errors[0].line, errors[0].column),
            (1, text.find('=').unwrap() + 3)
        );
    }
}

// ---- a site's rules (spec/site.md) ----------------------------------------

#[test]
fn a_sites_rules_are_read_in_file_order() {
    let rt = ok(r#"
security-headers = true
trusted-proxies = ["10.0.0.0/8", "192.168.1.7", "fd00::/8", "unix"]
listen = { address = "0.0.0.0:8443", proxy-protocol = true }

[cors]
origins = "*"
methods = ["GET"]
max-age = "10m"

[[headers]]
match = "**"
set = { X-Frame-Options = "DENY" }
always = true

[[headers]]
match = ["*.pdf"]
set = { Content-Type = "application/pdf" }
add = { Link = "</a>; rel=preload" }
remove = ["X-Powered-By"]

[[deny]]
match = "*.bak"

[[deny]]
match = "private/**"
status = 403
"#);
    let site = &rt.site;
    assert_eq!(
        site.security_headers,
        Some(nikaia_std::rt::SecurityHeaders::default())
    );
    assert_eq!(site.trusted_proxies.nets.len(), 3);
    assert!(site.trusted_proxies.unix);
    assert!(site.trusted_proxies.trusts("10.9.8.7".parse().unwrap()));
    assert!(!site.trusted_proxies.trusts("192.168.1.8".parse().unwrap()));
    assert!(rt.listen[0].proxy_protocol);
    let cors = site.cors.as_ref().unwrap();
    assert_eq!(cors.origins, nikaia_std::rt::Origins::Any);
    assert_eq!(cors.methods, ["GET"]);
    assert_eq!(cors.max_age, Duration::from_secs(600));
    assert_eq!(site.headers.len(), 2);
    assert!(site.headers[0].always && !site.headers[1].always);
    assert_eq!(site.headers[1].set.len(), 1);
    assert_eq!(site.headers[1].set[0].0, "Content-Type");
    assert_eq!(&site.headers[1].set[0].1[..], b"application/pdf");
    assert_eq!(site.headers[1].remove, ["X-Powered-By"]);
    assert_eq!(
        site.deny.iter().map(|d| d.status).collect::<Vec<_>>(),
        [404, 403]
    );
    let printed = rt.to_toml();
    assert_eq!(ok(&printed), rt);
}

#[test]
fn header_rules_refuse_the_servers_own_headers_and_broken_values() {
    insta::assert_snapshot!(errors(
        r#"[[headers]]
match = "*.html"
set = { Content-Length = "5", ETag = "x", "Bad Name" = "v" }
add = { Vary = "Cookie", X-Ok = "line\nbreak" }
remove = ["Transfer-Encoding", "connection"]

[[headers]]
set = { X-A = "b" }

[[headers]]
match = "*.css"

[[headers]]
match = "a//b"
set = { X-A = "b", x-a = "c" }
when = "always"
"#
    ));
}

#[test]
fn cors_refuses_any_origin_with_credentials() {
    insta::assert_snapshot!(errors(
        r#"[cors]
origins = "*"
credentials = true
"#
    ));
    insta::assert_snapshot!(
        "cors_bad_origins",
        errors(
            r#"[cors]
origins = ["https://App.example", "https://a.example/", "a.example", "https://a.example:8443"]
methods = ["get"]
"#
        )
    );
}

#[test]
fn trusted_proxies_and_proxy_protocol() {
    insta::assert_snapshot!(errors(
        r#"trusted-proxies = ["10.0.0.1/8", "10.0.0.0/33", "example.com", "::1/129"]
"#
    ));
    insta::assert_snapshot!(
        "proxy_protocol_without_trust",
        errors("listen = { address = \"0.0.0.0:80\", proxy-protocol = true }\n")
    );
}

#[test]
fn auth_reads_its_htpasswd_and_refuses_other_schemes_at_their_place() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("good.htpasswd"),
        "# users\nalice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.htpasswd"),
        "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\ncarol:$apr1$0EcTl.Ch$gIRHd1QnuVCXCuARl2v6P0\n",
    )
    .unwrap();
    let file = dir.path().join("runtime.toml");
    let rule = |htpasswd: &str| {
        format!("[[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"{htpasswd}\"\nrealm = \"stage\"\n")
    };
    let rt = Runtime::parse(&rule("good.htpasswd"), &file).unwrap();
    let auth = &rt.site.auth[0];
    assert_eq!(auth.htpasswd, dir.path().join("good.htpasswd"));
    assert_eq!(auth.users.len(), 1);
    assert_eq!((auth.realm.as_str(), auth.plain_http), ("stage", false));
    // The same file read again is the same generation.
    let again = Runtime::parse(&rule("good.htpasswd"), &file).unwrap();
    assert_eq!(again.site.auth[0].generation, auth.generation);

    let errors = render(&Runtime::parse(&rule("bad.htpasswd"), &file).unwrap_err());
    let bad = dir.path().join("bad.htpasswd");
    assert!(
        errors.starts_with(&format!("{}:2:7: error: ", bad.display())),
        "{errors}"
    );
    assert!(errors.contains("htpasswd -B"), "{errors}");
    // A cost that would let a few guesses hold every verifier.
    std::fs::write(
        dir.path().join("slow.htpasswd"),
        "alice:$2y$15$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n",
    )
    .unwrap();
    let errors = render(&Runtime::parse(&rule("slow.htpasswd"), &file).unwrap_err());
    assert!(errors.contains("bcrypt cost 15; above 14"), "{errors}");
    let errors = render(&Runtime::parse(&rule("missing.htpasswd"), &file).unwrap_err());
    assert!(
        errors.contains("runtime.toml:3:12: error: key `auth`: `htpasswd`: cannot read"),
        "{errors}"
    );
}

#[test]
fn request_bodies_have_limits_and_clocks_by_default() {
    let d = Runtime::default();
    assert_eq!((d.body_limit, d.stream_limit), (1 << 20, 1 << 30));
    assert_eq!(
        (d.body_timeout, d.body_idle_timeout, d.body_rate_grace),
        (
            Duration::from_secs(60),
            Duration::from_secs(30),
            Duration::from_secs(5)
        )
    );
    assert_eq!(d.body_min_rate, 240);
    let text = "body-limit = \"4MiB\"\nstream-limit = \"10GiB\"\nbody-timeout = \"2m\"\n\
                body-idle-timeout = \"5s\"\nbody-min-rate = \"1KiB\"\nbody-rate-grace = \"0s\"\n";
    let rt = Runtime::parse(text, Path::new("r.toml")).unwrap();
    assert_eq!((rt.body_limit, rt.stream_limit), (4 << 20, 10 << 30));
    assert_eq!(rt.body_timeout, Duration::from_secs(120));
    assert_eq!(rt.body_idle_timeout, Duration::from_secs(5));
    assert_eq!(
        (rt.body_min_rate, rt.body_rate_grace),
        (1024, Duration::ZERO)
    );
    for (text, want) in [
        ("body-idle-timeout = \"0s\"", "from 1ms"),
        ("body-limit = \"lots\"", "KiB"),
        ("body-min-rate = \"2GiB\"", "to 1GiB"),
    ] {
        let errors = Runtime::parse(text, Path::new("r.toml")).unwrap_err();
        assert!(
            errors[0].message.contains(want),
            "{text}: {}",
            errors[0].message
        );
    }
}

#[test]
fn a_write_rule_says_who_writes_and_allows_something() {
    let rt = ok("[[write]]\nmatch = \"drop/**\"\nwriters = [\"alice\"]\n");
    let rule = &rt.site.write[0];
    assert!(rule.create && rule.replace && !rule.delete && !rule.delete_dirs);
    assert!(!rule.anyone && !rule.make_dirs && !rule.trusted && !rule.plain_http);
    assert_eq!(rule.durability, nikaia_std::fs::Durability::Data);
    assert_eq!(rule.max_size, None);
    for (text, says) in [
        ("match = \"x\"\n", "needs `writers`"),
        (
            "match = \"x\"\nwriters = [\"a\"]\nanyone = true\n",
            "not both",
        ),
        ("match = \"x\"\nwriters = []\n", "name at least one user"),
        ("writers = [\"a\"]\n", "needs `match`"),
        (
            "match = \"x\"\nanyone = true\ncreate = false\nreplace = false\n",
            "allows nothing",
        ),
        (
            "match = \"x\"\nanyone = true\ndurability = \"sometimes\"\n",
            "\"none\", \"data\" or \"full\"",
        ),
        (
            "match = \"x\"\nanyone = true\nmax_size = 5\n",
            "unknown field `max_size`",
        ),
        ("match = \"x\"\nwriters = [\"a:b\"]\n", "not a user name"),
    ] {
        let text = format!("[[write]]\n{text}");
        let errors = parse(&text).expect_err(&text);
        let shown = render(&errors);
        assert!(shown.contains(says), "{text}: {shown}");
    }
}

#[test]
fn resumable_names_its_directory_and_a_plain_endpoint() {
    let rt = ok("[resumable]\ndir = \"partial\"\n");
    let r = rt.resumable.expect("[resumable]");
    assert!(r.dir.is_absolute() && r.dir.ends_with("partial"), "{r:?}");
    assert_eq!(r.endpoint, "/.tus/");
    assert_eq!(r.expire, std::time::Duration::from_secs(24 * 3600));
    assert_eq!((r.max_pending, r.max_pending_per_user), (256, 16));
    assert_eq!(r.max_pending_bytes, 64 << 30);
    let rt = ok("[resumable]\ndir = \"/p\"\nendpoint = \"/up/files/\"\nexpire = \"2h\"\nmax-pending-bytes = \"1GiB\"\n");
    let r = rt.resumable.unwrap();
    assert_eq!(
        (r.endpoint.as_str(), r.expire.as_secs()),
        ("/up/files/", 7200)
    );
    assert_eq!(r.max_pending_bytes, 1 << 30);
    for (text, says) in [
        ("endpoint = \"/up/\"\n", "needs `dir`"),
        (
            "dir = \"/p\"\nendpoint = \"up/\"\n",
            "an absolute path ending in `/`",
        ),
        (
            "dir = \"/p\"\nendpoint = \"/up\"\n",
            "an absolute path ending in `/`",
        ),
        (
            "dir = \"/p\"\nendpoint = \"/a/../b/\"\n",
            "found \"/a/../b/\"",
        ),
        (
            "dir = \"/p\"\nendpoint = \"/a b/\"\n",
            "an absolute path ending in `/`",
        ),
        (
            "dir = \"/p\"\nendpoint = \"/\"\n",
            "an absolute path ending in `/`",
        ),
        (
            "dir = \"/p\"\nexpire = \"0s\"\n",
            "expected a duration from",
        ),
        ("dir = \"/p\"\nmax-pending = 0\n", "from 1 to"),
        (
            "dir = \"/p\"\nmax_pending = 3\n",
            "unknown field `max_pending`",
        ),
    ] {
        let text = format!("[resumable]\n{text}");
        let errors = parse(&text).expect_err(&text);
        let shown = render(&errors);
        assert!(shown.contains(says), "{text}: {shown}");
        assert!(shown.starts_with("runtime.toml:"), "{shown}");
    }
}
