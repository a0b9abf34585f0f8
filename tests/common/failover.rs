//! One failover timed from both sides: when the system's own status first
//! showed the new leader and when the agent did, polled side by side from
//! the moment the test stopped the old one. The figures are printed, and
//! appended to `$ZKEE_FAILOVER_LOG` when set (scripts/bench-failover.sh
//! turns them into the table in docs/benchmarks.md); never asserted.

use std::io::Write;
use std::time::{Duration, Instant};

use super::wait::wait_for_async;

/// Polls `system` and `agent` (every 50 ms, so the figures are that
/// coarse, plus what a check takes) until both hold, from `since` (just before
/// the old leader was stopped). `case` names what was done (`spark
/// SIGKILL`), `sessions` the session timeout that bounds it.
pub async fn time_failover(
    case: &str,
    sessions: &str,
    since: Instant,
    timeout: Duration,
    mut system: impl FnMut() -> Result<(), String>,
    mut agent: impl FnMut() -> Result<(), String>,
) -> (Duration, Duration) {
    let (mut system_at, mut agent_at) = (None, None);
    wait_for_async(
        &format!("{case}: both views of the new leader"),
        timeout,
        || {
            if system_at.is_none() && system().is_ok() {
                system_at = Some(since.elapsed());
            }
            if agent_at.is_none() {
                match agent() {
                    Ok(()) => agent_at = Some(since.elapsed()),
                    Err(e) if system_at.is_some() => return Err(format!("the agent: {e}")),
                    Err(_) => {}
                }
            }
            system_at
                .zip(agent_at)
                .ok_or_else(|| "the system's own view not yet".to_owned())
        },
    )
    .await;
    let (system_at, agent_at) = (system_at.unwrap(), agent_at.unwrap());
    let line = format!(
        "{case}\t{sessions}\t{:.2}\t{:.2}",
        system_at.as_secs_f64(),
        agent_at.as_secs_f64()
    );
    eprintln!("failover: {line}");
    if let Ok(path) = std::env::var("ZKEE_FAILOVER_LOG") {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        writeln!(file, "{line}").unwrap();
    }
    (system_at, agent_at)
}
