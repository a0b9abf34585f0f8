//! Waiting on the lease source's verdicts: in the agent's series and as
//! alerts in Alertmanager.

use std::time::Duration;

use super::program::{Program, alerts_in_alertmanager};
use super::*;

const T: Duration = Duration::from_secs(60);

/// Active alerts of `name` for `election`.
pub fn alerted(am: &Program, name: &str, election: &str) -> Result<usize, String> {
    Ok(alerts_in_alertmanager(am, name)?
        .iter()
        .filter(|a| a["election"] == election)
        .count())
}

pub async fn until_alerted(am: &Program, name: &str, election: &str, want: usize) {
    wait_for_async(
        &format!("{want} {name} for {election} in Alertmanager"),
        T,
        || match alerted(am, name, election)? {
            n if n == want => Ok(()),
            n => Err(format!("{n} active")),
        },
    )
    .await;
}

pub async fn until_state(agent: &Exporter, election: &str, state: &str) {
    agent
        .until_values(
            &format!("{election}: lease {state}"),
            T,
            &[(
                "zookeeper_election_lease_state",
                &[("election", election), ("state", state)],
                Some(1.0),
            )],
        )
        .await;
}
