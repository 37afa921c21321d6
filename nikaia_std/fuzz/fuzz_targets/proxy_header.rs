#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| nikaia_std::fuzzing::proxy_header(data));
