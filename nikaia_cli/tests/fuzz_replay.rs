//! Replays, on stable, every input the `.nk` fuzz target kept
//! (`fuzz/corpus/nk`) and every crash it found (`fuzz/regressions/nk`),
//! through the same entry point. CI replays; it does not fuzz.

#[test]
fn nk() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    nikaia_std::fuzzing::replay(&fuzz, "nk", nikaia_cli::fuzzing::nk);
}
