//! What a build needs from the system is installed by the scripts that
//! build: `scripts/demo.sh` builds the default features, `scripts/test.sh`
//! (and the release) the `kerberos` feature too. Every crate of the build
//! that links or compiles system code (`*-sys`, bindgen) is named here with
//! the `scripts/lib.sh` group that installs its Debian packages; a new one,
//! or a group a script no longer asks for, fails this test.

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Crates that need something of the system to build, the `ensure_packages`
/// group that installs it, and the Debian packages that group must name.
const NEEDS: &[(&str, &str, &[&str])] = &[
    // C sources compiled with cc: a C compiler and libc's headers.
    ("aws-lc-sys", "build", &["build-essential", "libc6-dev"]),
    // The GSSAPI headers, and libclang for the binding generated from them.
    ("libgssapi-sys", "gssapi", &["libkrb5-dev"]),
    ("clang-sys", "gssapi", &["libclang-dev"]),
    ("bindgen", "gssapi", &["libclang-dev"]),
];

/// Crates whose name looks like they need the system but do not.
const PURE: &[&str] = &["linux-raw-sys"];

/// The crates of the build with `features` (normal and build
/// dependencies, as cargo resolves them for this platform).
fn crates(features: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(ROOT)
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["-f", "{p}"])
        .args(features)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The groups a script asks `ensure_packages` for.
fn groups(script: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(script)).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("ensure_packages "))
        .unwrap_or_else(|| panic!("{script} calls no ensure_packages"));
    line.split_whitespace().skip(1).map(str::to_owned).collect()
}

/// The text of `scripts/lib.sh`'s case for `group`.
fn lib_case(group: &str) -> String {
    let lib = std::fs::read_to_string(Path::new(ROOT).join("scripts/lib.sh")).unwrap();
    let start = lib
        .find(&format!("      {group})"))
        .unwrap_or_else(|| panic!("scripts/lib.sh has no `{group})` case"));
    let rest = &lib[start..];
    rest[..rest.find(";;").unwrap()].to_owned()
}

/// The groups the build with `features` needs, each checked against lib.sh.
fn needed(features: &[&str]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for name in crates(features) {
        let system = name.ends_with("-sys") || name == "bindgen";
        if !system || PURE.contains(&name.as_str()) {
            continue;
        }
        let Some((_, group, packages)) = NEEDS.iter().find(|(c, _, _)| *c == name) else {
            panic!(
                "the build {features:?} has `{name}`, which needs something of the system: say \
                 which Debian packages build it (scripts/lib.sh) and name it in NEEDS here"
            );
        };
        let case = lib_case(group);
        for package in *packages {
            assert!(
                case.contains(package),
                "scripts/lib.sh's `{group}` installs no {package} for {name}"
            );
        }
        out.push(*group);
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_scripts_that_build_install_what_the_build_needs() {
    let default = needed(&[]);
    assert!(default.contains(&"build"), "{default:?}");
    assert!(
        !default.contains(&"kerberos"),
        "the default build needs no GSSAPI headers: {default:?}"
    );
    for script in ["scripts/demo.sh", "scripts/test.sh"] {
        let asked = groups(script);
        for group in &default {
            assert!(
                asked.iter().any(|g| g == group),
                "{script} does not install `{group}`: {asked:?}"
            );
        }
    }
    let kerberos = needed(&["--features", "kerberos"]);
    assert!(kerberos.contains(&"gssapi"), "{kerberos:?}");
    let asked = groups("scripts/test.sh");
    for group in &kerberos {
        assert!(
            asked.iter().any(|g| g == group),
            "scripts/test.sh does not install `{group}`: {asked:?}"
        );
    }
    // The demo builds what it says it builds: the default features.
    let demo = std::fs::read_to_string(Path::new(ROOT).join("scripts/demo.sh")).unwrap();
    let build = demo
        .lines()
        .find(|l| l.starts_with("cargo build"))
        .expect("demo.sh builds");
    assert!(
        !build.contains("--features"),
        "{build}: then demo.sh must install its packages too"
    );
}
