#![cfg(test)]
//! A system of the unit tests only, defined in this file and nowhere else:
//! the tests that go over every known system (`--system`, discovery's
//! recognition, `check-config`, identity modes) take it like the shipped
//! ones, which shows that a system is added by adding its file.
//!
//! Its layout: under `ROOT/<job>`, one EPHEMERAL `owner` (data: the owner's
//! name in hex) beside `waiting` (standbys) and `workers` (a registry).

use super::{Decoder, Election, Group, KnownSystem, Root, Spot, SystemTree};

pub(super) const SYSTEM: &dyn KnownSystem = &TestOnly;

struct TestOnly;

impl KnownSystem for TestOnly {
    fn name(&self) -> &'static str {
        "test-only"
    }

    fn default_root(&self) -> &'static str {
        "/test-only"
    }

    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree> {
        vec![
            Election::node(root.at("/*/owner"), "test-only-hex")
                .standbys(root.at("/*/waiting"))
                .into(),
            Group::new(root.at("/*/workers")).into(),
        ]
    }

    fn layout(&self) -> &'static [&'static str] {
        &["/job", "/job/owner", "/job/waiting", "/job/workers"]
    }

    fn recognise(&self, spot: &Spot<'_>) -> Option<String> {
        (spot.name() == "owner"
            && spot.up(1) != "/"
            && spot.sibling("waiting")
            && spot.sibling("workers"))
        .then(|| spot.up(2).to_owned())
    }

    fn decoders(&self) -> &'static [Decoder] {
        &[Decoder {
            name: "test-only-hex",
            decode: hex,
        }]
    }
}

/// `6f6e65` → `one`.
fn hex(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?.trim();
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}
