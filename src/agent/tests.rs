//! The agent with a fault injected into one of its own tasks (test builds
//! only): it stops and says which task died, instead of serving the last
//! state as if it were current.

use std::time::Duration;

use super::supervise::faults;
use super::*;

/// A ZooKeeper nobody listens on: the session keeps retrying, which is
/// enough for a task to run.
fn config(cluster: &str, extra: &str) -> Config {
    crate::config::parse_toml(&format!(
        "[web]\nlisten_address = \"127.0.0.1:0\"\n{extra}\n[[clusters]]\nname = \"{cluster}\"\n\
         servers = [\"127.0.0.1:1\"]\nfour_letter_words = {{ enabled = false }}\n\
         [[clusters.elections]]\npath = \"/x/*\"\n"
    ))
    .unwrap()
}

/// Runs the agent (never asked to shut down) with a fault armed in
/// `task`; what it returned.
async fn run_with_fault(config: Config, task: &str) -> Result<(), AgentError> {
    faults::arm(task);
    let again = config.clone();
    let loader: Loader = Box::new(move || Ok(again.clone()));
    tokio::time::timeout(
        Duration::from_secs(60),
        run(config, loader, std::future::pending()),
    )
    .await
    .expect("the agent went on running after its task died")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_task_that_panics_stops_the_agent_naming_it() {
    let task = "cluster fault-session: ZooKeeper session";
    match run_with_fault(config("fault-session", ""), task).await {
        Err(AgentError::TaskFailed(f)) => {
            assert_eq!(f.task, task);
            assert!(f.how.starts_with("panicked: a fault injected"), "{}", f.how);
        }
        other => panic!("not a task failure: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_pusher_that_panics_stops_the_agent_naming_it() {
    let alerting = "[alerting]\nalertmanagers = [\"http://127.0.0.1:1\"]\n";
    match run_with_fault(config("fault-pusher", alerting), "alert pusher").await {
        Err(AgentError::TaskFailed(f)) => {
            assert_eq!(f.task, "alert pusher");
            let text = AgentError::TaskFailed(f).to_string();
            assert!(text.contains("restart it"), "{text}");
        }
        other => panic!("not a task failure: {other:?}"),
    }
}
