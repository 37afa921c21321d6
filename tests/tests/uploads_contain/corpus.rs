//! The request targets of the containment corpus, and the statuses the
//! code gives some of them exactly.

use super::*;

pub(super) struct Row {
    pub(super) label: String,
    pub(super) target: Vec<u8>,
}

/// Replaces each whole `..` segment of `p`.
pub(super) fn dotdot(p: &str, with: &str) -> String {
    p.split('/')
        .map(|s| if s == ".." { with } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

pub(super) type Spell = fn(&str) -> String;

/// Ways of spelling a name on the wire, for the rows that try to leave
/// the root: every one of them.
pub(super) const SPELLINGS: &[(&str, Spell)] = &[
    ("plain", |p| format!("/{p}")),
    ("dots %2e", |p| format!("/{}", p.replace('.', "%2e"))),
    ("dots %2E", |p| format!("/{}", p.replace('.', "%2E"))),
    ("half .%2e", |p| format!("/{}", dotdot(p, ".%2e"))),
    ("half %2e.", |p| format!("/{}", dotdot(p, "%2e."))),
    ("slash %2f", |p| format!("/{}", p.replace('/', "%2f"))),
    ("all %2F %2E", |p| {
        format!("/{}", p.replace('.', "%2E").replace('/', "%2F"))
    }),
    ("slash %5c", |p| format!("/{}", p.replace('/', "%5c"))),
    ("slash raw \\", |p| format!("/{}", p.replace('/', "\\"))),
    ("all %5c %2e", |p| {
        format!("/{}", p.replace('.', "%2e").replace('/', "%5c"))
    }),
    ("double %252e", |p| format!("/{}", p.replace('.', "%252e"))),
    ("double %252f", |p| format!("/{}", p.replace('/', "%252f"))),
    ("overlong %c0%ae", |p| {
        format!("/{}", p.replace('.', "%c0%ae"))
    }),
    ("overlong %c0%ae %c0%af", |p| {
        format!("/{}", p.replace('.', "%c0%ae").replace('/', "%c0%af"))
    }),
    ("overlong %e0%80%ae", |p| {
        format!("/{}", p.replace('.', "%e0%80%ae"))
    }),
    ("fullwidth dot", |p| {
        format!("/{}", p.replace('.', "%ef%bc%8e"))
    }),
    ("%u002e", |p| format!("/{}", p.replace('.', "%u002e"))),
    ("doubled //", |p| format!("//{}", p.replace('/', "//"))),
    ("./ segments", |p| format!("/./{}", p.replace('/', "/./"))),
    ("trailing /", |p| format!("/{p}/")),
    ("absolute-form", |p| format!("http://t/{p}")),
    ("..;", |p| format!("/{}", dotdot(p, "..;"))),
    ("NUL after", |p| format!("/{p}%00")),
    ("NUL in ..", |p| format!("/{}", dotdot(p, ".%00."))),
    ("query", |p| format!("/{p}?to=../../outside/q")),
    ("fragment", |p| format!("/{p}#../../outside/h")),
];

/// The spellings tried on every other name.
pub(super) const LIGHT: &[&str] = &[
    "plain",
    "dots %2E",
    "slash %2f",
    "doubled //",
    "./ segments",
    "trailing /",
];

/// Names that try to leave the root.
pub(super) const CLIMBS: &[&str] = &[
    "../outside/x",
    "../outside/keep.txt",
    "../runtime.toml",
    "drop/../../outside/x",
    "drop/../../outside/victim",
    "drop/../../runtime.toml",
    "drop/sub/../../../outside/sub/deep.txt",
    "drop/../public/x",
    "drop/../index.html",
    "drop/x/../../public/a.txt",
];

/// Every other name: inside `drop/`, links, own files, the deny list,
/// dot-names, the rest of the root.
pub(super) const NAMES: &[&str] = &[
    // Names the rule lets change.
    "drop/new.txt",
    "drop/a.txt",
    "drop/keep.txt",
    "drop/sub/new.txt",
    "drop/sub/inner.txt",
    "drop/new/deep/x.txt",
    "drop/x.gz",
    "drop/x.br",
    "drop/a.txt.zst",
    "drop/sub",
    "drop/empty",
    "drop",
    "drop/fifo",
    "drop/SECRET/x",
    "drop/x.",
    "drop/a..b",
    "drop/x::$DATA",
    "drop/CON",
    "drop/etc/passwd",
    "drop/outside-hard",
    // Names that are not UTF-8, and controls.
    "drop/caf%e9.txt",
    "drop/caf%ef%bf%bd.txt",
    "drop/%ff",
    "drop/%c0%af",
    "drop/x%0a",
    "drop/x%0d%0aSet-Cookie:%20a=b",
    "drop/%e2%80%ae",
    "drop/x%3f",
    "drop/x%23",
    "drop/%20",
    // Links.
    "drop/out/x",
    "drop/out/keep.txt",
    "drop/out/victim",
    "drop/out/sub/deep.txt",
    "drop/out",
    "drop/absout/x",
    "drop/absout/victim",
    "drop/absout",
    "drop/outfile",
    "drop/dangling",
    "drop/in",
    "drop/indir/x",
    "drop/indir/inner.txt",
    "drop/up/drop/x",
    "drop/up/drop/a.txt",
    "drop/up/public/x",
    "drop/up/public/a.txt",
    "drop/up/index.html",
    "drop/up",
    "drop/loop/x",
    "drop/loop",
    "drop/rt-link",
    // The runtime file's own files.
    "drop/rt-hard",
    "drop/pw-hard",
    "drop/404.html",
    // Denied.
    "drop/secret/x",
    "drop/secret/keep.txt",
    "drop/secret",
    "drop/secret/a.txt.gz",
    "drop/secret/new/x",
    // Denied too: a sidecar's rules are its original's.
    "drop/secret.gz",
    // Dot-names.
    "drop/.htaccess",
    "drop/.nikaia-tmp-x",
    ".well-known/acme-challenge/tok",
    ".well-known/acme-challenge/new",
    ".well-known/x",
    "drop/.git/config",
    "drop/sub/.env",
    ".htaccess",
    "drop/...",
    ".nikaia-tmp-x",
    // Elsewhere in the root.
    "public/x",
    "public/a.txt",
    "public/a.txt.gz",
    "public",
    "private/p.txt",
    "private/x",
    "index.html",
    "index.html.gz",
    "",
    "x",
    "DROP/x",
    "Drop/x",
    "dRoP/a.txt",
    "etc/passwd",
    "outside/x",
    "runtime.toml",
    "/etc/passwd",
    "%2fetc/passwd",
    "%2f%2fetc%2fpasswd",
];

/// Targets sent exactly as written: absolute names, targets that are not
/// paths, a raw NUL and raw bytes that are not ASCII.
pub(super) const RAW: &[&[u8]] = &[
    b"//etc/passwd",
    b"/%2fetc/passwd",
    b"/%2F..%2F..%2Foutside%2Fx",
    b"/drop%2f..%2f..%2foutside%2fx",
    b"/drop/%2e%2e/%2e%2e/outside/x",
    b"/drop/..%2f..%2foutside/x",
    b"/drop/%2f..%2f..%2foutside/x",
    b"/drop/..%5c..%5coutside/x",
    b"/drop/%5c..%5c..%5coutside/x",
    b"/drop\\..\\..\\outside\\x",
    b"/drop/x%00",
    b"/drop/x%00.txt",
    b"/drop/%00/x",
    b"/%00",
    b"/drop/x\x00y",
    b"/drop/caf\xe9-raw",
    b"/drop/x%",
    b"/drop/x%2",
    b"/drop/x%zz",
    b"drop/x",
    b"..",
    b"../outside/x",
    b"*",
    b"http://t",
    b"http://t/",
    b"http://t/drop/abs-form.txt",
    b"http://t/../outside/x",
    b"http://t/drop/../../outside/x",
    b"HTTP://t/drop/%2e%2e/%2e%2e/outside/x",
    b"https://t/drop/out/x",
    b"/",
    b"//",
    b"///drop///x",
    b"/drop/",
    b"/drop//",
    b"/drop/sub/",
    b"/drop/empty/",
    b"/drop/a.txt/",
    b"/drop/out/",
    b"/drop/up/",
    b"/drop/./a.txt",
    b"/drop/.",
    b"/drop/..",
    b"/drop/...",
    b"/drop/..;/..;/outside/x",
];

pub(super) fn corpus() -> Vec<Row> {
    let mut rows = Vec::new();
    for climb in CLIMBS {
        for (how, spell) in SPELLINGS {
            rows.push(Row {
                label: format!("{climb} [{how}]"),
                target: spell(climb).into_bytes(),
            });
        }
    }
    for name in NAMES {
        for (how, spell) in SPELLINGS.iter().filter(|(how, _)| LIGHT.contains(how)) {
            rows.push(Row {
                label: format!("{name} [{how}]"),
                target: spell(name).into_bytes(),
            });
        }
    }
    let long = [
        ("255-byte name", format!("/drop/{}", "a".repeat(255))),
        ("256-byte name", format!("/drop/{}", "b".repeat(256))),
        ("1000-byte name", format!("/drop/{}", "c".repeat(1000))),
        (
            "3000-byte encoded name",
            format!("/drop/{}", "%63".repeat(3000)),
        ),
        ("400 levels", format!("/drop/{}x", "d/".repeat(400))),
        (
            "30 levels of 200",
            format!("/drop/{}x", format!("{}/", "e".repeat(200)).repeat(30)),
        ),
        (
            "deep then up",
            format!("/drop/{}{}outside/x", "f/".repeat(100), "../".repeat(102)),
        ),
        (
            "long then up",
            format!("/drop/{}/../../outside/x", "g".repeat(5000)),
        ),
        ("long in a link", format!("/drop/out/{}", "h".repeat(200))),
    ];
    for (label, target) in long {
        rows.push(Row {
            label: label.to_string(),
            target: target.into_bytes(),
        });
    }
    for raw in RAW {
        rows.push(Row {
            label: "as written".to_string(),
            target: raw.to_vec(),
        });
    }
    let mut seen = BTreeSet::new();
    rows.retain(|r| seen.insert(r.target.clone()));
    rows
}

/// The statuses the code gives some rows, exactly.
pub(super) fn expected(method: &str, target: &[u8]) -> Option<&'static [u16]> {
    let put = method == "PUT";
    let want: &[u16] = match target {
        b"/drop/new.txt" if put => &[201],
        b"/drop/new.txt" => &[404],
        b"/drop/a.txt" | b"/drop/keep.txt" => &[204],
        b"/drop/x.gz" if put => &[201],
        b"/drop/new/deep/x.txt" if put => &[201],
        b"/public/x" | b"/public/a.txt" | b"/public/a.txt.gz" | b"/private/p.txt" => &[405],
        b"/index.html" | b"/" | b"/x" | b"/DROP/x" | b"/Drop/x" | b"//etc/passwd" => &[405],
        b"/drop/.htaccess" | b"/drop/.nikaia-tmp-x" | b"/.well-known/acme-challenge/tok" => &[404],
        b"/drop/secret/x" | b"/drop/secret/keep.txt" | b"/drop/secret" => &[404],
        b"/drop/out/x" | b"/drop/out/keep.txt" | b"/drop/out/victim" => &[403],
        b"/drop/absout/x" | b"/drop/absout/victim" | b"/drop/indir/x" => &[403],
        b"/drop/up/drop/x" | b"/drop/up/public/x" | b"/drop/up/index.html" => &[403],
        b"/drop/loop/x" => &[403],
        b"/drop/rt-hard" | b"/drop/pw-hard" | b"/drop/404.html" => &[403],
        b"/drop/" | b"/drop/sub/" | b"/drop/sub" | b"/drop/fifo" => &[409],
        b"/drop/empty/" if put => &[409],
        b"/drop/empty/" => &[204],
        b"/drop/outfile" | b"/drop/out" | b"/drop/up" | b"/drop/in" | b"/drop/rt-link" => &[204],
        b"/drop/dangling" | b"/drop/absout" | b"/drop/loop" => &[204],
        b"/drop/empty" if put => &[409],
        b"/drop/empty" => &[204],
        b"/drop/secret.gz" | b"/drop/secret/" => &[404],
        b"/drop/x%00" | b"/drop/%00/x" | b"/%00" | b"/../outside/x" | b"/drop/../../outside/x" => {
            &[400, 404]
        }
        _ => return None,
    };
    Some(want)
}

// ---------------------------------------------------------------------------
// Judging one request.
