#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nikaia_std::fuzzing::qpack(data));
