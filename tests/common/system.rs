//! The real systems the tests run beside ZooKeeper (Patroni, ClickHouse,
//! Spark, Flink): stopping one of their processes by signal, and what the
//! agent says about the elections they hold.

use std::process::{Child, Command};
use std::time::Duration;

use super::{Exporter, Metrics, election_labels, wait_for};

/// The pid of the one process whose command line matches `pattern` (a
/// `pgrep -f` regex: anchor it, since the watcher's own command line holds
/// the same words).
pub fn pid_matching(pattern: &str) -> Option<String> {
    let out = Command::new("pgrep").arg("-f").arg(pattern).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .find(|pid| !pid.is_empty())
}

/// Sends `signal` (TERM: a graceful stop, KILL: a crash) to the process
/// matching `pattern`, waits until it is gone, then reaps its watcher.
pub fn stop_matching(pattern: &str, signal: &str, watcher: &mut Option<Child>, timeout: Duration) {
    if let Some(pid) = pid_matching(pattern) {
        let _ = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(&pid)
            .status();
    }
    wait_for("the process gone", timeout, || {
        match pid_matching(pattern) {
            None => Ok(()),
            Some(pid) => Err(format!("pid {pid} still runs")),
        }
    });
    if let Some(mut child) = watcher.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Master switches the agent counted for `election` (ensemble `test`).
pub fn switches(m: &Metrics, election: &str) -> Option<f64> {
    m.get(
        "zookeeper_election_master_changes_total",
        &election_labels(election),
    )
}

/// Waits until the agent counts `n` candidates of `election`.
pub async fn until_candidates(exporter: &Exporter, election: &str, n: f64, timeout: Duration) {
    exporter
        .until(&format!("{n} candidates of {election}"), timeout, |m| {
            m.get("zookeeper_election_candidates", &election_labels(election)) == Some(n)
        })
        .await;
}

/// Waits until the system's own view (`system`) and then the agent's
/// (`agent`) both show `who` leading; returns the agent's metrics then.
pub async fn until_both_show(
    exporter: &Exporter,
    who: &str,
    timeout: Duration,
    system: impl FnMut() -> Result<(), String>,
    agent: impl FnMut() -> Result<(), String>,
) -> Metrics {
    super::wait_for_async(&format!("{who} leading, by its own word"), timeout, system).await;
    super::wait_for_async(&format!("the agent naming {who}"), timeout, agent).await;
    exporter.metrics().unwrap()
}
