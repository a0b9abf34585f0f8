//! Collects four-letter words from every member of one cluster on scrape:
//! all servers × commands at once, each bounded by `timeout`, one collection
//! shared by concurrent scrapes, and reused while younger than
//! `min_interval`.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::join_all;
use tracing::{info, warn};

use super::admin;
use crate::config::FourLetterWordsConfig;
use crate::fourlw::{Command, Failure, Reply};
use crate::model::cluster::EnsembleFeed;
use crate::model::ensemble::{Exchange, ServerPoll};

/// The poller of one cluster.
#[derive(Debug)]
pub struct Poller {
    cluster: String,
    config: FourLetterWordsConfig,
    /// Where its collections go.
    ensemble: EnsembleFeed,
    /// When the last collection finished. Held across a collection, so a
    /// scrape arriving meanwhile waits for it and then reuses its result.
    finished: tokio::sync::Mutex<Option<Instant>>,
    /// (server, command) pairs already reported as not allowed.
    refused: Mutex<HashSet<(String, Command)>>,
    /// Last known up/down of each server, to log transitions only.
    was_up: Mutex<HashMap<String, bool>>,
    /// Good replies of commands whose answer is configuration (`conf`,
    /// `envi`), reused for [`STATIC_REFRESH`] to spare the server.
    static_replies: Mutex<HashMap<(String, Command), (Instant, Exchange)>>,
    /// Servers whose last `mntr` reply gave a server state: `ruok` and
    /// `isro` are not asked of them (see `poll_server`).
    mntr_states: Mutex<HashSet<String>>,
}

/// How long a good `conf` or `envi` reply is reused: it only changes when
/// the server restarts with another configuration.
const STATIC_REFRESH: Duration = Duration::from_secs(60);

fn is_static(command: Command) -> bool {
    matches!(command, Command::Conf | Command::Envi)
}

impl Poller {
    pub fn new(cluster: String, config: FourLetterWordsConfig, ensemble: EnsembleFeed) -> Self {
        Self {
            cluster,
            config,
            ensemble,
            finished: tokio::sync::Mutex::new(None),
            refused: Mutex::default(),
            was_up: Mutex::default(),
            static_replies: Mutex::default(),
            mntr_states: Mutex::default(),
        }
    }

    /// Brings the cluster's ensemble model up to date for a scrape. Takes at
    /// most `timeout` plus scheduling, whatever the servers do.
    pub async fn collect(&self) {
        let arrived = Instant::now();
        let mut finished = self.finished.lock().await;
        if let Some(done) = *finished {
            // Finished after we arrived: it was in flight, share it.
            if done >= arrived || done.elapsed() < self.config.min_interval {
                return;
            }
        }
        let servers = self.ensemble.now().servers_to_poll(&self.config.servers);
        let polls: Vec<ServerPoll> = join_all(servers.iter().map(|s| self.poll_server(s))).await;
        self.log_changes(&polls);
        self.ensemble.collected(polls);
        *finished = Some(Instant::now());
    }

    async fn poll_server(&self, server: &str) -> ServerPoll {
        let commands = &self.config.commands;
        // `ruok` and `isro` tell nothing a `mntr` reply with a server state
        // does not: it only answers while serving (`imok`), and its state
        // is `read-only` exactly when `isro` says `ro`. They are skipped
        // while the server's last `mntr` gave a state; everything else is
        // asked at once, so a hung member still costs one timeout.
        let skip = commands.contains(&Command::Mntr)
            && self
                .mntr_states
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(server);
        let mut exchanges = join_all(
            commands
                .iter()
                .filter(|c| !(skip && matches!(c, Command::Ruok | Command::Isro)))
                .map(|c| self.exchange(server, *c)),
        )
        .await;
        let has_state = exchanges
            .iter()
            .any(|e| matches!(&e.result, Ok(Reply::Mntr(m)) if m.role().is_some()));
        {
            let mut states = self.mntr_states.lock().unwrap_or_else(|p| p.into_inner());
            if has_state {
                states.insert(server.to_owned());
            } else {
                states.remove(server);
            }
        }
        // A server that answers nothing live must not show cached config.
        let live_failure =
            exchanges
                .iter()
                .filter(|e| !is_static(e.command))
                .try_fold(None, |first, e| match &e.result {
                    Ok(_) => Err(()),
                    Err(f) => Ok(first.or(Some(*f))),
                });
        if let Ok(Some(failure)) = live_failure {
            let mut cache = self
                .static_replies
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            for e in exchanges
                .iter_mut()
                .filter(|e| is_static(e.command) && e.result.is_ok())
            {
                cache.remove(&(server.to_owned(), e.command));
                e.result = Err(failure);
            }
        }
        ServerPoll {
            server: server.to_owned(),
            exchanges,
        }
    }

    async fn exchange(&self, server: &str, command: Command) -> Exchange {
        let key = (server.to_owned(), command);
        if is_static(command) {
            let cache = self
                .static_replies
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some((at, exchange)) = cache.get(&key)
                && at.elapsed() < STATIC_REFRESH
            {
                return exchange.clone();
            }
        }
        let exchange = self.exchange_now(server, command).await;
        if is_static(command) {
            let mut cache = self
                .static_replies
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if exchange.result.is_ok() {
                cache.insert(key, (Instant::now(), exchange.clone()));
            } else {
                cache.remove(&key);
            }
        }
        exchange
    }

    /// The four-letter word, or the AdminServer in its place when the word
    /// is not allowed; both within one `timeout`, and timed as one.
    async fn exchange_now(&self, server: &str, command: Command) -> Exchange {
        let tls = self.config.tls.as_ref();
        let mut exchange = super::ask(server, command, self.config.timeout, tls).await;
        if let (Err(Failure::NotAllowed), Some(template)) =
            (&exchange.result, &self.config.admin_url)
            && admin::supports(command)
        {
            let left = self.config.timeout.saturating_sub(exchange.duration);
            let started = Instant::now();
            if let Ok(reply) = admin::fetch(template, server, command, left, tls).await {
                exchange.result = Ok(reply);
            }
            exchange.duration += started.elapsed();
        }
        exchange
    }

    /// Logs a refused command once per server, and servers going down or
    /// coming back, not every scrape.
    fn log_changes(&self, polls: &[ServerPoll]) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        let mut was_up = self.was_up.lock().unwrap_or_else(|p| p.into_inner());
        for poll in polls {
            for e in &poll.exchanges {
                if e.result == Err(Failure::NotAllowed)
                    && refused.insert((poll.server.clone(), e.command))
                {
                    warn!(
                        cluster = %self.cluster,
                        server = %poll.server,
                        "four-letter word `{}` is not allowed; add it to 4lw.commands.whitelist in zoo.cfg \
                         (e.g. 4lw.commands.whitelist=mntr,srvr,ruok,isro,conf) or set four_letter_words.admin_url",
                        e.command.name()
                    );
                }
            }
            let up = poll.exchanges.iter().any(|e| e.result.is_ok());
            let reason = poll
                .exchanges
                .iter()
                .find_map(|e| e.result.as_ref().err())
                .map_or("no reply", |f| f.label());
            match was_up.insert(poll.server.clone(), up) {
                Some(true) | None if !up => {
                    warn!(cluster = %self.cluster, server = %poll.server, reason, "ZooKeeper server not answering four-letter words")
                }
                Some(false) if up => {
                    info!(cluster = %self.cluster, server = %poll.server, "ZooKeeper server answering four-letter words again")
                }
                _ => {}
            }
        }
    }
}
