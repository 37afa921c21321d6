#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nikaia_std::fuzzing::h2_frames(data));
