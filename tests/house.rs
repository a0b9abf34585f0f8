//! The shape of the code, held so the next feature cannot undo it: no file
//! in `src/` or `tests/` of 600 lines or more, at most five functions of
//! more than 80 lines in `src/` outside the metric encoders (flat lists of
//! families, in `src/metrics/`) and the unit tests, and the map in
//! `src/lib.rs` true of what imports what beside the layers.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MAX_FILE_LINES: usize = 600;
const LONG_FUNCTION: usize = 80;
const MAX_LONG_FUNCTIONS: usize = 5;

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// (name, first line, length in lines) of every function with a body in
/// `text`: from its `fn` line to the closing brace at the same indentation.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let mut rest = code;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        if code.ends_with(';') {
            continue;
        }
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, i + 1, end + 2));
        }
    }
    out
}

/// Unit tests in `src/`: a `tests.rs`, or a file under a `tests` folder.
fn is_test_code(path: &str) -> bool {
    path.ends_with("/tests.rs") || path.contains("/tests/") && path.starts_with("src/")
}

#[test]
fn no_file_reaches_600_lines() {
    let mut long = Vec::new();
    for dir in ["src", "tests"] {
        for path in rust_files(&Path::new(ROOT).join(dir)) {
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            if lines >= MAX_FILE_LINES {
                long.push(format!("{} ({lines})", relative(&path)));
            }
        }
    }
    assert!(
        long.is_empty(),
        "files of {MAX_FILE_LINES} lines or more (split them by what they do): {long:?}"
    );
}

#[test]
fn few_functions_run_past_80_lines() {
    let mut long = Vec::new();
    for path in rust_files(&Path::new(ROOT).join("src")) {
        let name = relative(&path);
        if name.starts_with("src/metrics/") || is_test_code(&name) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A `#[cfg(test)] mod tests { … }` at the end of a file is tests.
        let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or("");
        for (function, line, length) in functions(code) {
            if length > LONG_FUNCTION {
                long.push(format!("{name}:{line} {function} ({length})"));
            }
        }
    }
    assert!(
        long.len() <= MAX_LONG_FUNCTIONS,
        "{} functions of more than {LONG_FUNCTION} lines, at most {MAX_LONG_FUNCTIONS} \
         (split one by what its parts do): {long:#?}",
        long.len()
    );
}

#[test]
fn the_function_reader_finds_bodies_and_skips_declarations() {
    let text = "fn a() {\n    x();\n}\n    pub(crate) async fn b(\n        y: u8,\n    ) -> u8 {\n        y\n    }\ntrait T {\n    fn c(&self);\n}\n";
    assert_eq!(
        functions(text),
        [("a".to_owned(), 1, 3), ("b".to_owned(), 4, 5)]
    );
}

/// What `src/lib.rs` says beside the layers: no layer imports `logging`,
/// `simulate` or `fuzzing`; `panics`, `os`, `web_client` and `protobuf`
/// import nothing of the crate; the known systems import nothing of it
/// but `protobuf`.
#[test]
fn the_map_in_lib_rs_holds() {
    let src = Path::new(ROOT).join("src");
    let mut wrong = Vec::new();
    for path in rust_files(&src) {
        let name = relative(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        for module in ["logging", "simulate", "fuzzing"] {
            let own =
                name == format!("src/{module}.rs") || name.starts_with(&format!("src/{module}/"));
            if !own
                && name != "src/main.rs"
                && name != "src/lib.rs"
                && text.contains(&format!("crate::{module}"))
            {
                wrong.push(format!("{name} imports {module}"));
            }
        }
        if name.starts_with("src/systems/")
            && text.lines().any(|l| {
                !l.trim_start().starts_with("//")
                    && l.contains("crate::")
                    && !l.contains("crate::protobuf")
            })
        {
            wrong.push(format!("{name} imports more of the crate than protobuf"));
        }
        if [
            "src/panics.rs",
            "src/os.rs",
            "src/web_client.rs",
            "src/protobuf.rs",
        ]
        .contains(&name.as_str())
            && text
                .lines()
                .any(|l| !l.trim_start().starts_with("//") && l.contains("crate::"))
        {
            wrong.push(format!("{name} imports the crate"));
        }
    }
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(
        lib.contains("no layer imports them") && lib.contains("which import nothing of the crate"),
        "src/lib.rs no longer says it"
    );
    assert!(wrong.is_empty(), "src/lib.rs says otherwise: {wrong:?}");
}
