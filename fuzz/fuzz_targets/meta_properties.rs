//! Fuzz target: any bytes, as a `meta.properties` file, must read to the
//! directory's identity or an error, never a panic (`MetaProperties::read`:
//! the Java properties syntax, then the version, cluster.id, node.id and
//! directory.id checks). An identity read back encodes and parses to the
//! same value.

#![no_main]

use kraft_controller::log::MetaProperties;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("meta.properties");
    let Ok(text) = std::str::from_utf8(data) else {
        // `read` reads the file as UTF-8 and fails on anything else.
        return;
    };
    let Ok(props) = MetaProperties::parse(path, text) else {
        return;
    };
    let again = MetaProperties::parse(path, &props.encode("Tue Dec 01 21:00:00 UTC 2026"))
        .expect("our own meta.properties parses");
    assert_eq!(again, props);
});
