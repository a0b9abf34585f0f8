//! The alerting agent: reads each cluster's alert conditions (under a
//! brief read lock; only the elections that changed since the last reading
//! are judged again, see [`ReadingCache`]), updates the [`Book`], and
//! pushes what changed to
//! every configured Alertmanager; resends active alerts every
//! `resend_interval`, marks resolved ones with `endsAt`, retries failed
//! deliveries with backoff. Sends run apart from the watch and from one
//! another: a hung Alertmanager delays nothing else.
//!
//! It reads when a source wrote to a cluster, at most every half second,
//! and every half second while time alone can change something (a hold
//! being waited out, an alert firing, a delivery owed, a condition whose
//! window passes, the agent's session lost). At rest, with every election
//! healthy and nothing owed, it sleeps until the models change.
//!
//! What the [`Book`] decides (what fires, what resolved) is pure; this
//! module is its I/O: one `Delivery` per Alertmanager says when a send is
//! due and what it owes, and the bodies are [`crate::api::alerts`]'s.

pub(crate) mod client;
mod delivery;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{info, warn};

use crate::api::alerts::{Context, PostableAlert};
use crate::config::alerting::AlertingConfig;
use crate::model::alerting::{
    Book, Changes, Key, Kind, PushStats, Reading, ReadingCache, Thresholds,
};
use crate::model::changes::WriteWatch;
use crate::model::{Roster, SharedCluster};
use delivery::{Delivery, Done};

/// The least time between two readings, and how often conditions are read
/// while time alone can change something.
const TICK: Duration = Duration::from_millis(500);

/// The holds and cap `cfg` gives the [`Book`].
pub fn thresholds(cfg: &AlertingConfig) -> Thresholds {
    Thresholds {
        no_master_for: cfg.no_master_for,
        session_lost_for: cfg.session_lost_for,
        holds: Kind::ALL.map(|k| cfg.holds.get(&k).copied()),
        windows: Kind::ALL.map(|k| cfg.windows.get(&k).copied()),
        max_alerts: cfg.max_alerts,
    }
}

/// A finished send: which Alertmanager, and how it went.
type Sent = (usize, Done);

/// The pusher between ticks.
struct Pusher {
    cfg: Arc<AlertingConfig>,
    stats: Arc<PushStats>,
    book: Book,
    /// When each disconnected cluster's session was first seen lost.
    lost_since: HashMap<String, Instant>,
    /// One per `cfg.alertmanagers`, in order.
    deliveries: Vec<Delivery>,
    /// The parts of each cluster's readings kept between ticks, by name:
    /// at rest no tick judges an election, in motion a tick judges those
    /// that changed.
    caches: HashMap<String, ReadingCache>,
    sends: JoinSet<Sent>,
    /// Whether the last readings showed no condition at all.
    quiet: bool,
}

/// Runs until `stop` turns true, then hands back what fires, so a pusher
/// started by a reload carries on (resolving what clears) where this one
/// stopped. `book` is built with `cfg`'s [`thresholds`]. A new book (not
/// carried from a pusher before) first takes in what Alertmanager already
/// has firing under the agent's labels ([`Book::adopt`]).
pub async fn run(
    cfg: AlertingConfig,
    clusters: Roster<SharedCluster>,
    stats: Arc<PushStats>,
    mut stop: watch::Receiver<bool>,
    book: Book,
    adopt: bool,
) -> Book {
    let mut pusher = Pusher::new(cfg, stats, book);
    // The read-back runs beside the ticks (an Alertmanager that hangs
    // delays no decision) and is aborted with the pusher.
    let mut reading_back = JoinSet::new();
    if adopt {
        let names: Vec<String> = clusters.now().iter().map(SharedCluster::name).collect();
        reading_back.spawn(read_back(pusher.cfg.clone(), pusher.stats.clone(), names));
    }
    let mut changes = WriteWatch::new(&clusters);
    // Something to read: the models changed, or the book took in what
    // Alertmanager had. The first reading is at once.
    let mut woken = true;
    let start = tokio::time::Instant::now();
    let mut last = start.checked_sub(TICK).unwrap_or(start);
    loop {
        let paced = woken || !pusher.at_rest();
        tokio::select! {
            _ = tokio::time::sleep_until(last + TICK), if paced => {}
            _ = changes.next(), if !woken => {
                woken = true;
                continue;
            }
            _ = stop.wait_for(|s| *s) => return pusher.stop(),
            Some(found) = reading_back.join_next(), if !reading_back.is_empty() => {
                match found {
                    Ok(found) => pusher.adopt(found),
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => {}
                }
                woken = true;
                continue;
            }
        }
        woken = false;
        last = tokio::time::Instant::now();
        let (now, wall) = (Instant::now(), SystemTime::now());
        let flap_window = Kind::MasterFlapping.window_in(&thresholds(&pusher.cfg));
        let roster = clusters.now();
        // A reload may rebuild a cluster under its name: its trees' stamps
        // are new then, so a part kept for the old one is never taken.
        pusher
            .caches
            .retain(|name, _| roster.iter().any(|c| c.name() == *name));
        let readings: Vec<(String, Reading, bool)> = roster
            .iter()
            .map(|c| {
                let cache = pusher.caches.entry(c.name()).or_default();
                c.alert_reading(now, flap_window, cache)
            })
            .collect();
        let names: Vec<String> = readings.iter().map(|r| r.0.clone()).collect();
        pusher.quiet = readings
            .iter()
            .all(|(_, r, connected)| *connected && r.conditions.is_empty());
        pusher.read(readings, now, wall);
        pusher.publish(&names, now, wall);
        pusher.reap(now);
        pusher.send_due(now, wall);
    }
}

/// Reads back from every Alertmanager at once the alerts it holds with
/// this agent's labels (one of `clusters`), and since when. One that fails
/// is logged, counted in `stats` and passed over: for what only it had,
/// the book then starts from nothing, as without this step.
async fn read_back(
    cfg: Arc<AlertingConfig>,
    stats: Arc<PushStats>,
    clusters: Vec<String>,
) -> Vec<(Key, Instant)> {
    let names: Vec<&str> = Kind::ALL.iter().map(|k| k.alertname()).collect();
    let asks = cfg.alertmanagers.iter().map(|target| {
        let names = &names;
        async move { (target, client::alerts(target, names).await) }
    });
    let answers = futures::future::join_all(asks).await;
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut found = Vec::new();
    for (target, answer) in answers {
        let own = answer
            .map_err(|e| (e.reason, format!("{}: {}", e.reason, e.detail)))
            .and_then(|body| {
                crate::api::alerts::own_alerts(&body, &cfg.external_labels, &clusters)
                    .map_err(|e| ("protocol", e))
            });
        match own {
            Ok(own) => found.extend(own),
            Err((reason, e)) => {
                stats.with(|s| {
                    *s.read_back_errors
                        .entry((target.url.clone(), reason))
                        .or_default() += 1;
                });
                warn!(alertmanager = %target.url, "cannot read back the alerts Alertmanager holds: {e}; any of this agent's alerts it has firing wait out their hold again");
            }
        }
    }
    found
        .into_iter()
        .map(|(key, since)| {
            let ago = wall.duration_since(since).unwrap_or_default();
            (key, now.checked_sub(ago).unwrap_or(now))
        })
        .collect()
}

impl Pusher {
    fn new(cfg: AlertingConfig, stats: Arc<PushStats>, book: Book) -> Self {
        // Every Alertmanager has its counter from the start (rates need a zero).
        stats.with(|s| {
            s.enabled = true;
            for target in &cfg.alertmanagers {
                s.sent.entry(target.url.clone()).or_default();
            }
        });
        info!(
            alertmanagers = cfg.alertmanagers.len(),
            no_master_for = ?cfg.no_master_for,
            "pushing the agent's own alerts to Alertmanager"
        );
        Self {
            deliveries: cfg
                .alertmanagers
                .iter()
                .map(|_| Delivery::default())
                .collect(),
            cfg: Arc::new(cfg),
            stats,
            book,
            lost_since: HashMap::new(),
            caches: HashMap::new(),
            sends: JoinSet::new(),
            quiet: false,
        }
    }

    /// Whether time alone can change nothing: the last readings showed no
    /// condition, the book waits for nothing, every Alertmanager has what
    /// it is owed. Only a change of the models then calls for a reading.
    fn at_rest(&self) -> bool {
        self.quiet
            && self.book.at_rest()
            && self.lost_since.is_empty()
            && self.sends.is_empty()
            && self.deliveries.iter().all(Delivery::idle)
    }

    /// Hands the book what Alertmanager has firing under this agent's
    /// labels ([`read_back`]).
    fn adopt(&mut self, found: Vec<(Key, Instant)>) {
        self.book.adopt(found);
        if self.book.adopted() > 0 {
            info!(
                alerts = self.book.adopted(),
                "Alertmanager has alerts of this agent firing: each carries on at its cluster's first reading that still shows it"
            );
        }
    }

    /// What fires stays published (a pusher started by a reload takes
    /// over at once); the agent clears it when `[alerting]` is removed.
    fn stop(self) -> Book {
        self.book
    }

    /// Every cluster's reading (name, conditions, session connected) into
    /// the book. A cluster a reload removed: what it had firing resolves
    /// (the user stopped watching it), instead of being re-sent as firing
    /// forever.
    fn read(&mut self, mut readings: Vec<(String, Reading, bool)>, now: Instant, wall: SystemTime) {
        let gone: BTreeSet<String> = self
            .book
            .firing()
            .map(|(key, _)| key.1.clone())
            .filter(|name| !readings.iter().any(|(n, _, _)| n == name))
            .collect();
        self.lost_since
            .retain(|name, _| readings.iter().any(|(n, _, _)| n == name));
        readings.extend(gone.into_iter().map(|name| {
            let reading = Reading {
                fresh: true,
                ..Reading::default()
            };
            (name, reading, true)
        }));
        let names: Vec<String> = readings.iter().map(|r| r.0.clone()).collect();
        self.book
            .forget_others(&names.iter().map(String::as_str).collect());
        for (name, reading, connected) in readings {
            let lost = if connected {
                self.lost_since.remove(&name);
                None
            } else {
                Some(*self.lost_since.entry(name.clone()).or_insert(now))
            };
            let (changes, left_out) = self.book.update(&name, reading, lost, now);
            if left_out > 0 {
                warn!(cluster = %name, left_out, "more alerts than alerting.max_alerts: the rest are not pushed (the rules' aggregates still see them)");
                self.stats.with(|s| s.dropped += left_out as u64);
            }
            self.changed(&changes, wall);
        }
    }

    /// Logs what fired and resolved and tells every Alertmanager.
    fn changed(&mut self, changes: &Changes, wall: SystemTime) {
        for key in &changes.fired {
            let (alert, cluster, election) = (key.0.alertname(), &key.1, &key.2);
            if changes.carried.contains(key) {
                info!(alert, %cluster, %election, "alert carried on from the previous process");
            } else {
                info!(alert, %cluster, %election, "alert fired");
            }
        }
        for (key, _) in &changes.resolved {
            info!(alert = key.0.alertname(), cluster = %key.1, election = %key.2, "alert resolved");
        }
        if changes.fired.is_empty() && changes.resolved.is_empty() {
            return;
        }
        let cap = self.cfg.max_alerts * 4;
        for d in &mut self.deliveries {
            let dropped = d.enqueue(&changes.resolved, wall, cap);
            if dropped > 0 {
                self.stats.with(|s| s.dropped += dropped as u64);
            }
        }
    }

    /// What fires, for `/metrics` and the status page: a count for every
    /// alertname of every cluster, zeros too (a rate needs them).
    fn publish(&self, clusters: &[String], now: Instant, wall: SystemTime) {
        let mut active: BTreeMap<(&'static str, String), usize> = Kind::ALL
            .iter()
            .flat_map(|k| clusters.iter().map(|c| ((k.alertname(), c.clone()), 0)))
            .collect();
        for (key, _) in self.book.firing() {
            *active
                .entry((key.0.alertname(), key.1.clone()))
                .or_default() += 1;
        }
        let firing = self
            .book
            .firing()
            .map(|(k, f)| {
                let since = wall - now.saturating_duration_since(f.since);
                (k.0.alertname(), k.1.clone(), k.2.clone(), since)
            })
            .collect();
        self.stats.with(|s| {
            s.active = active;
            s.firing = firing;
        });
    }

    /// Takes in the sends that finished.
    fn reap(&mut self, now: Instant) {
        while let Some(done) = self.sends.try_join_next() {
            let (i, done) = match done {
                Ok(done) => done,
                // A send that panicked left its delivery marked in flight
                // for good: that Alertmanager would never hear again. The
                // pusher dies with it, and the agent's supervisor stops
                // the agent (agent/supervise.rs).
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => continue,
            };
            let url = &self.cfg.alertmanagers[i].url;
            let d = &mut self.deliveries[i];
            match &done.result {
                Ok(()) => {
                    if d.failing() {
                        info!(alertmanager = %url, "alerts delivered again");
                    }
                    self.stats
                        .with(|s| *s.sent.entry(url.clone()).or_default() += done.alerts as u64);
                }
                Err(e) => {
                    if !d.failing() {
                        warn!(alertmanager = %url, reason = e.reason, "cannot deliver alerts: {}; retrying with backoff", e.detail);
                    }
                    self.stats
                        .with(|s| *s.errors.entry((url.clone(), e.reason)).or_default() += 1);
                }
            }
            d.on_done(&done, now);
        }
    }

    /// Starts a send to every Alertmanager one is due to.
    fn send_due(&mut self, now: Instant, wall: SystemTime) {
        let cx = Context {
            external_labels: &self.cfg.external_labels,
            generator_url: self.cfg.generator_url.as_deref(),
            runbook_url: &self.cfg.runbook_url,
        };
        for (i, d) in self.deliveries.iter_mut().enumerate() {
            let (due, dropped) = d.due(&self.book, now, wall, self.cfg.resend_interval);
            if dropped > 0 {
                self.stats.with(|s| s.dropped += dropped as u64);
            }
            if !due {
                continue;
            }
            let ends_active = wall + self.cfg.resend_interval * 4;
            let mut alerts: Vec<PostableAlert> = self
                .book
                .firing()
                .map(|(k, f)| PostableAlert::of(cx, k, f, now, wall, ends_active))
                .collect();
            alerts.extend(
                d.resolved()
                    .map(|(k, f, at)| PostableAlert::of(cx, k, f, now, wall, at)),
            );
            let body = serde_json::to_vec(&alerts).unwrap_or_default();
            let (resolved, alerts) = (d.start(), alerts.len());
            let cfg = self.cfg.clone();
            self.sends.spawn(async move {
                let result = client::post(&cfg.alertmanagers[i], &body).await;
                let done = Done {
                    resolved,
                    alerts,
                    result,
                };
                (i, done)
            });
        }
    }
}
