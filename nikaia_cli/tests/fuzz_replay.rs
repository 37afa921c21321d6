//! Replays, on stable, every input the `.nk` fuzz target kept
//! (`fuzz/corpus/nk`) and every crash it found (`fuzz/regressions/nk`),
//! through the same entry point. CI replays; it does not fuzz.

use std::path::Path;

#[test]
fn nk() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut inputs = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join("nk")) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let data = std::fs::read(&path).unwrap();
            let caught = std::panic::catch_unwind(|| nikaia_cli::fuzzing::nk(&data));
            assert!(
                caught.is_ok(),
                "{}: the nk target failed on it",
                path.display()
            );
            inputs += 1;
        }
    }
    assert!(inputs > 0, "no corpus for nk");
}
