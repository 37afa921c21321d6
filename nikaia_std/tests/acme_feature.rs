//! A program built without the `acme` feature, given `[acme]`, refuses to
//! start and names the feature (`spec/tls.md`, "Automatic HTTPS"); so does
//! `Runtime::preflight` (what `nikaia check` prints). `./test.sh` runs
//! this crate's tests without the feature; the workspace's (which the
//! `nikaia` tool builds with it) compile this file out.
#![cfg(all(target_os = "linux", not(feature = "acme")))]

use nikaia_std::http::Server;
use nikaia_std::rt::{Acme, Listen, LogTarget, Runtime};

fn runtime(storage: &std::path::Path) -> Runtime {
    let mut acme = Acme::new(vec!["example.org".into()]);
    acme.agree_to_terms = true;
    acme.storage = storage.to_path_buf();
    let mut rt = Runtime::default();
    let mut tls = Listen::tcp("127.0.0.1:0".parse().unwrap());
    tls.tls = Some(true);
    rt.listen = vec![tls];
    rt.workers = 1;
    rt.access_log = LogTarget::Off;
    rt.acme = Some(acme);
    rt
}

#[test]
fn an_acme_table_without_the_feature_refuses_the_start_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let storage = tmp.path().join("acme");
    let refused = Server::with_runtime(runtime(&storage))
        .route("/", |_| "x")
        .start()
        .err()
        .expect("the start is refused");
    let why = refused.to_string();
    assert!(why.contains("`acme` feature"), "{why}");
    assert!(why.contains("--features nikaia_std/acme"), "{why}");
    // Nothing was made on the way.
    assert!(!storage.exists());
    let findings = runtime(&storage).preflight();
    let acme: Vec<_> = findings.iter().filter(|f| f.key == "acme").collect();
    assert!(
        acme.iter()
            .any(|f| !f.warning && f.message.contains("`acme` feature")),
        "{findings:?}"
    );
}
