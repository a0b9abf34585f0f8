//! `[web] listen_address` and `--web.listen-address` as exporters take them.

use super::*;

#[test]
fn listen_addresses_come_as_exporters_take_them() {
    use crate::config::listen::ListenAddress;
    let base = "[[clusters]]\nservers = [\"zk1:2181\"]\n";
    let one = load_file(&format!("[web]\nlisten_address = \":9142\"\n{base}"), &[]).unwrap();
    assert_eq!(one.web.listen_addresses, vec![ListenAddress::Any(9142)]);
    let many = load_file(
        &format!("[web]\nlisten_address = [\"localhost:9142\", \"[::1]:9143\"]\n{base}"),
        &[],
    )
    .unwrap();
    assert_eq!(
        many.web.listen_addresses,
        vec![
            ListenAddress::Name("localhost".into(), 9142),
            ListenAddress::Ip("[::1]:9143".parse().unwrap())
        ]
    );
    let env = [("ZK_EXPORTER_WEB__LISTEN_ADDRESS", ":9144")];
    let c = load_file(base, &env).unwrap();
    assert_eq!(c.web.listen_addresses, vec![ListenAddress::Any(9144)]);
    // The flag, given twice, replaces the file's.
    let f = file(&format!("[web]\nlisten_address = \":9142\"\n{base}"));
    let o = Overrides {
        config_file: Some(f.path().to_owned()),
        listen_address: vec![":9145".into(), "127.0.0.1:9146".into()],
        ..Default::default()
    };
    let c = load(&o, std::iter::empty()).unwrap();
    assert_eq!(
        c.web.listen_addresses,
        vec![
            ListenAddress::Any(9145),
            ListenAddress::Ip("127.0.0.1:9146".parse().unwrap())
        ]
    );
    let empty = load_file(&format!("[web]\nlisten_address = []\n{base}"), &[]).unwrap_err();
    assert!(
        empty.to_string().starts_with("web.listen_address:"),
        "{empty}"
    );
}
