#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    zk_election_exporter::fuzzing::router(data);
});
