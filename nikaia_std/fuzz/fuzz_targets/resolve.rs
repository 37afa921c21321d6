#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nikaia_std::fs::fuzzing::resolve(data));
