//! Entry points for the fuzz targets (`fuzz/`, run by `scripts/fuzz.sh`):
//! every parser that reads the outside world, fed arbitrary bytes. Each
//! must return, never panic. Kept in the library so the unit tests below
//! run every target over the fixtures on stable Rust, and a crash the
//! fuzzer finds becomes a regression test here.

use std::path::Path;

use crate::fourlw::{Command, interpret_detailed, parse};
use crate::model::candidate::{IdentityMode, parse_sequence};
use crate::sources::fourlw::admin::interpret_json;

/// The command a first byte selects.
fn command(selector: u8) -> Command {
    Command::ALL[usize::from(selector) % Command::ALL.len()]
}

/// A four-letter-word reply (first byte: which command), as it arrives:
/// bytes made text, interpreted; `cons` line by line too; the
/// `/zookeeper/config` member list.
pub fn fourlw_reply(data: &[u8]) {
    let Some((&selector, reply)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(reply);
    let _ = interpret_detailed(command(selector), &text);
    let _ = parse::refusal(&text);
    for line in text.lines() {
        if let Some(c) = parse::parse_cons_line(line) {
            let _ = c.host();
        }
    }
    let _ = parse::parse_members(&text);
}

/// An AdminServer JSON answer (first byte: which command).
pub fn admin_json(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        let _ = interpret_json(command(selector), &json);
    }
}

/// Identities from node names and data under every mode, a mode spec
/// itself, and sequence suffixes. Layout: selector, name length, name,
/// data.
pub fn identity(data: &[u8]) {
    const MODES: [&str; 10] = [
        "data",
        "node",
        "json:/id",
        "json:/host/0/name",
        "regex:^([^-]+)-",
        "protobuf:1",
        "protobuf:1.2.3",
        "hbase",
        "hdfs",
        "flink",
    ];
    let [selector, len, rest @ ..] = data else {
        return;
    };
    let split = usize::from(*len).min(rest.len());
    let (name, node_data) = rest.split_at(split);
    let name = String::from_utf8_lossy(name);
    let _ = parse_sequence(&name);
    if let Ok(mode) = IdentityMode::parse(MODES[usize::from(*selector) % MODES.len()]) {
        let _ = mode.extract(&name, node_data);
    }
    if let Ok(mode) = IdentityMode::parse(&String::from_utf8_lossy(node_data)) {
        let _ = mode.extract(&name, node_data);
    }
}

/// A TOML configuration file.
pub fn config_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::parse_toml(text);
    }
}

/// A web configuration file (YAML); files it names are looked for in an
/// empty directory.
pub fn web_config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::webfile::parse_text(text, Path::new("/nonexistent"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `dir`, recursively.
    fn files(dir: &Path, out: &mut Vec<Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else {
                out.push(std::fs::read(&path).unwrap());
            }
        }
    }

    /// Inputs the fuzzer once crashed on, per target
    /// (`tests/fuzz-regressions/<target>/`).
    #[test]
    fn inputs_that_once_crashed_are_taken() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
        type Target = fn(&[u8]);
        let targets: [(&str, Target); 5] = [
            ("fourlw_reply", fourlw_reply),
            ("admin_json", admin_json),
            ("identity", identity),
            ("config_toml", config_toml),
            ("web_config", web_config),
        ];
        let mut seen = 0;
        for (name, target) in targets {
            let mut inputs = Vec::new();
            let dir = root.join(name);
            if dir.is_dir() {
                files(&dir, &mut inputs);
            }
            for input in inputs {
                target(&input);
                seen += 1;
            }
        }
        assert!(seen >= 1);
    }

    #[test]
    fn a_dump_expiry_date_out_of_range_is_no_date() {
        assert!(
            parse::parse_dump(
                "SessionTracker dump:\nexpire at Mon Nov 30 09:30:17 UTC 2026:\n\t0x1\n"
            )
            .is_ok()
        );
        let crash = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fuzz-regressions/fourlw_reply/dump-expiry-date-overflow"),
        )
        .unwrap();
        fourlw_reply(&crash);
    }

    #[test]
    fn every_target_takes_every_fixture_and_its_mutilations() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut corpus = Vec::new();
        files(&root.join("tests/fixtures"), &mut corpus);
        corpus.push(std::fs::read(root.join("examples/config.toml")).unwrap());
        corpus.push(b"tls_server_config:\n  cert_file: a\n  key_file: b\n".to_vec());
        assert!(corpus.len() > 40, "{}", corpus.len());
        for bytes in &corpus {
            for cut in [0, 1, bytes.len() / 3, bytes.len() / 2, bytes.len()] {
                let cut = &bytes[..cut.min(bytes.len())];
                for selector in 0..11u8 {
                    let mut input = vec![selector];
                    input.extend_from_slice(cut);
                    fourlw_reply(&input);
                    admin_json(&input);
                    identity(&input);
                }
                config_toml(cut);
                web_config(cut);
            }
        }
    }
}
