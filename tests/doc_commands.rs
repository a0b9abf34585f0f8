//! The commands README.md, docs/api.md and docs/migrating.md show a user,
//! run as written by `sh` in one working directory, with this build's agent first on
//! `PATH`: each agent command serves where it says (the ZooKeeper names in
//! them need not resolve: the agent serves, not ready, and retries), the
//! `curl`s beside them get answers from it, and the release tarball
//! (`scripts/tarball.sh`, made in that directory first) unpacks and runs as
//! the README says. The set-up scripts (`./scripts/*`) are what CI runs
//! itself.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BIN: &str = env!("CARGO_BIN_EXE_zk-election-exporter");
const T: Duration = Duration::from_secs(30);

/// The shell lines of a Markdown file's `sh` blocks, without comments.
fn shell_lines(doc: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(doc)).unwrap();
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            inside = !inside && matches!(fence.trim(), "sh" | "bash" | "console");
            continue;
        }
        let line = line.split(" # ").next().unwrap_or("").trim();
        if inside && !line.is_empty() && !line.starts_with('#') {
            out.push(line.to_owned());
        }
    }
    out
}

/// `sh -c line`, the built agent first on `PATH`, in `dir`.
fn sh(line: &str, dir: &Path, stdout: Stdio) -> Command {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("exec {line}"))
        .env("PATH", path)
        .env_remove("ZK_EXPORTER_CONFIG")
        .current_dir(dir)
        .stdout(stdout)
        .stderr(Stdio::piped());
    cmd
}

/// The port an agent command serves on: `--web.listen-address=[HOST]:PORT`
/// or the default.
fn port_of(line: &str) -> u16 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("--web.listen-address="))
        .and_then(|a| a.rsplit(':').next())
        .map_or(9141, |p| p.parse().unwrap())
}

/// Runs an agent command; returns it once `/healthz` answers on its port,
/// or its exit code and standard error if it stops first.
fn start(line: &str, dir: &Path) -> Result<Child, (Option<i32>, String)> {
    let mut child = sh(line, dir, Stdio::null()).spawn().unwrap();
    let port = port_of(line);
    let outcome = wait_for(&format!("`{line}` serving on {port}"), T, || {
        if let Ok(Some(status)) = child.try_wait() {
            return Ok(Some(status.code()));
        }
        match http_get(port, "/healthz") {
            Ok((200, _)) => Ok(None),
            other => Err(format!("{other:?}")),
        }
    });
    match outcome {
        None => Ok(child),
        Some(code) => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            Err((code, err))
        }
    }
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A `curl` line against the running agent: it answers 2xx (`-f` added
/// to see that) with a body; piped into `grep PATTERN`, the pattern is one
/// of the agent's documented metric names.
fn curl(line: &str, dir: &Path) {
    let (request, grep) = match line.split_once(" | grep ") {
        Some((request, pattern)) => (request, Some(pattern.trim())),
        None => (line, None),
    };
    let request = request.replacen("curl ", "curl -f ", 1);
    let out = sh(&request, dir, Stdio::piped()).output().unwrap();
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "`{line}`: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(pattern) = grep {
        let metrics = std::fs::read_to_string(Path::new(ROOT).join("docs/metrics.md")).unwrap();
        assert!(
            metrics.contains(&format!("`{pattern}`")),
            "`{line}`: {pattern} is not documented"
        );
    }
}

#[test]
fn the_commands_of_the_readme_and_the_migration_guide_run_as_written() {
    let mut lines = shell_lines("README.md");
    lines.extend(shell_lines("docs/api.md"));
    lines.extend(shell_lines("docs/migrating.md"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("--web.listen-address=:9142")),
        "{lines:?}"
    );
    let dir = temp_dir("doc-commands");
    let mut ran = 0;
    let mut agent: Option<Child> = None;
    for line in &lines {
        if line.starts_with("./scripts/") {
            continue;
        }
        if line.starts_with("curl ") {
            assert!(agent.is_some(), "`{line}` comes before any agent command");
            curl(line, &dir);
            ran += 1;
            continue;
        }
        if line.starts_with("tar ") {
            let made = Command::new(format!("{ROOT}/scripts/tarball.sh"))
                .arg(&dir)
                .output()
                .unwrap();
            assert!(
                made.status.success(),
                "scripts/tarball.sh: {}",
                String::from_utf8_lossy(&made.stderr)
            );
            let out = sh(line, &dir, Stdio::piped()).output().unwrap();
            assert!(
                out.status.success(),
                "`{line}`: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
            continue;
        }
        let agent_command = line.starts_with("zk-election-exporter ")
            || (line.starts_with("./zk-election-exporter-")
                && line.contains("/zk-election-exporter "));
        assert!(agent_command, "a command this test does not know: `{line}`");
        // A command naming a configuration file the user writes first:
        // with the file absent here, it must say so and stop.
        if let Some(file) = line
            .split_whitespace()
            .skip_while(|w| *w != "--config")
            .nth(1)
            && !Path::new(file).exists()
        {
            let mut child = sh(line, &dir, Stdio::null()).spawn().unwrap();
            let status = wait_for(&format!("`{line}` to stop"), T, || {
                child
                    .try_wait()
                    .unwrap()
                    .ok_or_else(|| "running".to_owned())
            });
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            let code = status.code();
            assert_eq!(code, Some(2), "`{line}`: {err}");
            assert!(
                err.contains(file) && err.contains("cannot read"),
                "`{line}`: {err}"
            );
            ran += 1;
            continue;
        }
        if let Some(previous) = agent.take() {
            stop(previous);
        }
        match start(line, &dir) {
            Ok(child) => agent = Some(child),
            Err((code, err)) => panic!("`{line}` stopped with {code:?}: {err}"),
        }
        ran += 1;
    }
    if let Some(last) = agent {
        stop(last);
    }
    assert!(ran >= 8, "{ran} commands run of {lines:?}");
}
