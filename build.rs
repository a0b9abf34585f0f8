//! Bakes the git revision, the build date and the compiler's version into
//! `--version` and `zookeeper_exporter_build_info`. Outside a git checkout
//! the revision says `unknown`; `SOURCE_DATE_EPOCH` (reproducible builds)
//! fixes the date. It also lists the known systems, one file each in
//! `src/systems/`, so that adding a system is adding its file.

use std::fmt::Write as _;

fn main() {
    known_systems();
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
    println!("cargo:rerun-if-env-changed=ZKEE_GIT_REVISION");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    if std::env::var_os("ZKEE_GIT_REVISION").is_none() {
        let revision = command_output("git", &["rev-parse", "--short=12", "HEAD"]);
        if let Some(r) = revision {
            println!("cargo:rustc-env=ZKEE_GIT_REVISION={r}");
        }
    }
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
    println!("cargo:rustc-env=ZKEE_BUILD_DATE={}", rfc3339(epoch));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = command_output(&rustc, &["--version"])
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ZKEE_RUSTC_VERSION={version}");
}

/// Writes `$OUT_DIR/systems.rs`: a module per file in `src/systems/`
/// (other than `mod.rs`), `SHIPPED` (every system) and `TEST_ONLY` (those
/// whose file starts with `#![cfg(test)]`, compiled into the unit tests
/// only). In file-name order, so the lists do not depend on the file
/// system.
fn known_systems() {
    println!("cargo:rerun-if-changed=src/systems");
    let dir = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"))
        .join("src/systems");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("src/systems is part of the source")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs"))
        .collect();
    files.sort();
    let (mut modules, mut shipped, mut test_only) = (String::new(), String::new(), String::new());
    for path in files {
        let module = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| {
                s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
            .unwrap_or_else(|| {
                panic!(
                    "{}: name a system's file in lowercase snake_case",
                    path.display()
                )
            })
            .to_owned();
        let text = std::fs::read_to_string(&path).expect("a system's file is readable");
        let test = text.lines().any(|l| l.trim() == "#![cfg(test)]");
        if test {
            modules.push_str("#[cfg(test)]\n");
        }
        let _ = writeln!(
            modules,
            "#[path = {:?}]\nmod {module};",
            path.display().to_string()
        );
        let list = if test { &mut test_only } else { &mut shipped };
        let _ = write!(list, "{module}::SYSTEM, ");
    }
    let code = format!(
        "{modules}\n\
         /// Every system a release knows, by file name.\n\
         static SHIPPED: &[&dyn KnownSystem] = &[{shipped}];\n\
         /// The unit tests' own systems.\n\
         #[cfg(test)]\n\
         static TEST_ONLY: &[&dyn KnownSystem] = &[{test_only}];\n\
         #[cfg(not(test))]\n\
         static TEST_ONLY: &[&dyn KnownSystem] = &[];\n"
    );
    let out =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("set by cargo")).join("systems.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
}

/// Seconds since 1970 as `YYYY-MM-DDTHH:MM:SSZ` (days to civil date after
/// Howard Hinnant's algorithm), without a date crate in the build.
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}
