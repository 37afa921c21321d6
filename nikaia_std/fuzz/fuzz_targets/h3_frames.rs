#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nikaia_std::fuzzing::h3_frames(data));
