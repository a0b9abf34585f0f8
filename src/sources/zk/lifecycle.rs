//! One cluster's clients, one after another: connect with capped, jittered
//! backoff, run a `Session` until its client's life ends (expiry, auth
//! failure, close), build the next. Tree changes from a reload
//! ([`TreePlan`]) reach the running session, or the models while none runs.

use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn};

use super::connect::{connect, connect_backoff, explain_connect_error, jitter};
use super::session::{End, Session};
use crate::config::ClusterConfig;
use crate::model::SharedCluster;
use crate::model::carry::TreePlan;
use crate::model::session::SessionState;

/// Why no client was built.
enum Refused {
    /// The agent has no usable Kerberos ticket (explained).
    Kerberos(String),
    Zk(zookeeper_client::Error),
}

/// Runs the cluster until `shutdown` flips to true. Never returns early on
/// ZooKeeper trouble: every failure is recorded and retried.
pub async fn run_cluster(
    cfg: ClusterConfig,
    state: SharedCluster,
    mut shutdown: watch::Receiver<bool>,
    mut plans: mpsc::UnboundedReceiver<TreePlan>,
) {
    let mut backoff = connect_backoff();
    let mut failing_since: Option<std::time::Instant> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        state.session_ended(SessionState::Connecting, None);
        let connecting = async {
            match crate::sources::kerberos::before_connect(&cfg, &state).await {
                Ok(()) => connect(&cfg).await.map_err(Refused::Zk),
                Err(why) => Err(Refused::Kerberos(why)),
            }
        };
        tokio::pin!(connecting);
        let connected = loop {
            tokio::select! {
                r = &mut connecting => break r,
                _ = shutdown.changed() => return,
                Some(plan) = plans.recv() => state.retree(plan.configured),
            }
        };
        let end = match connected {
            Ok(client) => {
                if let Some(since) = failing_since.take() {
                    info!(cluster = %cfg.name, after = ?since.elapsed(), "connected to ZooKeeper again");
                } else {
                    info!(cluster = %cfg.name, servers = %cfg.connect_string(), "connected to ZooKeeper");
                }
                backoff.reset();
                let session = Session::new(&cfg, client, state.clone());
                let end = tokio::select! {
                    end = session.run(&mut shutdown, &mut plans) => end,
                    () = crate::sources::kerberos::keep(&cfg, &state) => End::Closed,
                };
                if end == End::Shutdown {
                    return;
                }
                end
            }
            Err(Refused::Kerberos(message)) => {
                // Logged once by the Kerberos check itself.
                failing_since.get_or_insert_with(std::time::Instant::now);
                state.connect_failed(true, message);
                End::Closed
            }
            Err(Refused::Zk(e)) => {
                let message = explain_connect_error(&cfg, &e).await;
                if failing_since.is_none() {
                    warn!(cluster = %cfg.name, "{message}; retrying with backoff");
                    failing_since = Some(std::time::Instant::now());
                } else {
                    debug!(cluster = %cfg.name, "{message}");
                }
                let auth_failed = matches!(e, zookeeper_client::Error::AuthFailed);
                state.connect_failed(auth_failed, message);
                End::Closed
            }
        };
        if end == End::Expired {
            warn!(cluster = %cfg.name, "ZooKeeper session expired; building a new session");
        }
        let pause = tokio::time::sleep(backoff.next_delay_jittered(jitter()));
        tokio::pin!(pause);
        loop {
            tokio::select! {
                _ = &mut pause => break,
                _ = shutdown.changed() => return,
                Some(plan) = plans.recv() => state.retree(plan.configured),
            }
        }
    }
}
