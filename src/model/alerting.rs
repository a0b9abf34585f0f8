//! The alerts the agent decides itself, pushed straight to Alertmanager
//! because it sees them first. Each has a rule in the mixin, which stays
//! silent while an agent pushes (one voice, docs/alerts.md): the name,
//! severity, texts and holds come from that rule, through `catalogue.rs`,
//! generated from the mixin. The masterless, session and lease holds are
//! configured instead.
//!
//! Pure: conditions are read from the models at an instant the caller
//! gives; [`Book`] turns them into alerts that fire and resolve.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What a pushed alert is: its rule twin's name, severity and texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    NoMaster,
    GhostMaster,
    DuplicateIdentity,
    MasterFlapping,
    EpochRegression,
    RecordDisagrees,
    SplitBrain,
    LeaseExpired,
    SessionDown,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::NoMaster,
        Kind::GhostMaster,
        Kind::DuplicateIdentity,
        Kind::MasterFlapping,
        Kind::EpochRegression,
        Kind::RecordDisagrees,
        Kind::SplitBrain,
        Kind::LeaseExpired,
        Kind::SessionDown,
    ];

    /// Whether the kind is judged from the lease table, whose readings
    /// come and fail apart from the session's.
    pub fn judged_from_lease(self) -> bool {
        matches!(self, Kind::SplitBrain | Kind::LeaseExpired)
    }

    /// Its entry in the catalogue generated from the mixin's rules.
    pub const fn entry(self) -> &'static Entry {
        &catalogue::CATALOGUE[self as usize]
    }

    pub const fn alertname(self) -> &'static str {
        self.entry().alertname
    }

    pub const fn severity(self) -> &'static str {
        self.entry().severity
    }

    /// The rule's `summary` and `description`, with `{{ $labels.ensemble }}`,
    /// `{{ $labels.election }}` and `{{ $value }}` to fill in ([`fill`]).
    pub const fn texts(self) -> (&'static str, &'static str) {
        (self.entry().summary, self.entry().description)
    }

    /// The runbook anchor (docs/runbooks.md#...).
    pub fn anchor(self) -> String {
        self.alertname().to_ascii_lowercase()
    }

    /// How long the condition must hold: the masterless, session and
    /// lease holds are configured (the lease ones per set, see
    /// [`Condition::hold`]), the others are the rule's `for:` unless
    /// `[alerting] holds` follows a mixin whose `_config` changed it.
    fn hold(self, t: &Thresholds) -> Duration {
        match self {
            Kind::NoMaster => t.no_master_for,
            Kind::SessionDown => t.session_lost_for,
            _ => t.holds[self as usize]
                .or(self.entry().hold)
                .unwrap_or(Duration::ZERO),
        }
    }

    /// The window the deployment's rule judges within: the catalogue's,
    /// unless `[alerting] windows` follows a mixin whose `_config` changed
    /// it.
    pub fn window_in(self, t: &Thresholds) -> Duration {
        t.windows[self as usize].unwrap_or_else(|| self.window())
    }

    /// The window the catalogue's rule judges within (flapping, epoch
    /// regressions).
    pub const fn window(self) -> Duration {
        match self.entry().window {
            Some(w) => w,
            None => panic!("this alert judges no window"),
        }
    }

    /// How many switches within [`Kind::window`] make it flap.
    pub const fn switches(self) -> usize {
        match self.entry().switches {
            Some(n) => n as usize,
            None => panic!("this alert counts no switches"),
        }
    }
}

/// One of the agent's alerts as its rule in the mixin defines it
/// (`catalogue.rs` is generated from the mixin; the two never differ).
#[derive(Debug)]
pub struct Entry {
    pub kind: Kind,
    pub alertname: &'static str,
    pub severity: &'static str,
    pub summary: &'static str,
    pub description: &'static str,
    /// The rule's `for:`; `None` for alerts that judge a window.
    pub hold: Option<Duration>,
    pub window: Option<Duration>,
    pub switches: Option<u32>,
}

#[rustfmt::skip]
mod catalogue;
mod reading;

pub use reading::{Condition, Reading, ReadingCache};

// The catalogue is in `Kind::ALL` order, so `entry` may index it.
const _: () = {
    let mut i = 0;
    while i < Kind::ALL.len() {
        assert!(catalogue::CATALOGUE[i].kind as usize == Kind::ALL[i] as usize);
        assert!(Kind::ALL[i] as usize == i);
        i += 1;
    }
    assert!(catalogue::CATALOGUE.len() == Kind::ALL.len());
};

/// The configured holds and cap.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub no_master_for: Duration,
    pub session_lost_for: Duration,
    /// The rule's `for:` as the deployment's mixin has it, where that
    /// differs from the catalogue, by [`Kind`] index.
    pub holds: [Option<Duration>; Kind::ALL.len()],
    /// The rule's window likewise, for the alerts that judge one.
    pub windows: [Option<Duration>; Kind::ALL.len()],
    /// Most alerts firing per cluster.
    pub max_alerts: usize,
}

/// Which alert: its kind, cluster and election (empty for the session).
pub type Key = (Kind, String, String);

/// An alert firing now.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    /// When its condition began.
    pub since: Instant,
    pub value: u64,
}

/// What changed at an update.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    pub fired: Vec<Key>,
    /// Those of `fired` that a previous process had pushed and this one
    /// carries on (adopted, with their old start): no new trouble.
    pub carried: Vec<Key>,
    pub resolved: Vec<(Key, Firing)>,
}

/// The alerts firing, and conditions waiting out their hold.
#[derive(Debug)]
pub struct Book {
    thresholds: Thresholds,
    firing: BTreeMap<Key, Firing>,
    pending: BTreeMap<Key, Instant>,
    /// Epoch regressions last seen per election, and when they grew.
    regressions: BTreeMap<Key, (u64, Instant)>,
    /// Alerts that held but were left out past the cap.
    left_out: std::collections::BTreeSet<Key>,
    /// Alerts Alertmanager already had firing when this book began (an
    /// agent restarted mid-alert, another replica's), since when: each is
    /// decided at its cluster's first fresh reading, see [`Book::adopt`].
    adopted: BTreeMap<Key, Instant>,
    /// Since when each cluster's readings are fresh without a break (the
    /// first since the start, or since its session came back): what the
    /// agent has watched of a window since then is all it knows of it, as
    /// a new session lists the trees again.
    first_fresh: BTreeMap<String, Instant>,
}

impl Book {
    pub fn new(thresholds: Thresholds) -> Self {
        Self {
            thresholds,
            firing: BTreeMap::new(),
            pending: BTreeMap::new(),
            regressions: BTreeMap::new(),
            left_out: Default::default(),
            adopted: BTreeMap::new(),
            first_fresh: BTreeMap::new(),
        }
    }

    /// Takes in alerts Alertmanager already has firing with this agent's
    /// labels, and since when. Without them a restarted agent would wait
    /// out every hold again while Alertmanager's copy runs out (its
    /// `endsAt` is four resends away): a resolution while the trouble
    /// holds, then a second page. An adopted alert fires at once at its
    /// cluster's first fresh reading if the reading still shows it (or
    /// cannot judge it: a tree not yet listed, a lease source down), with
    /// its old start. An alert judged over a window (flapping, an epoch
    /// regression) holds until the agent has watched a whole window since
    /// its first fresh reading: the switches and regressions behind it
    /// were counted by the previous process, so a shorter look cannot show
    /// it over. Otherwise it is forgotten, and Alertmanager lets its copy expire.
    pub fn adopt(&mut self, alerts: impl IntoIterator<Item = (Key, Instant)>) {
        for (key, since) in alerts {
            if self.firing.contains_key(&key) {
                continue;
            }
            let at = self.adopted.entry(key).or_insert(since);
            *at = (*at).min(since);
        }
    }

    /// How many adopted alerts are still to be decided.
    pub fn adopted(&self) -> usize {
        self.adopted.len()
    }

    /// The same alerts under new thresholds (a reload changed
    /// `[alerting]`): what fires carries on, and resolves when it clears.
    pub fn retuned(self, thresholds: Thresholds) -> Self {
        Self { thresholds, ..self }
    }

    pub fn firing(&self) -> impl Iterator<Item = (&Key, &Firing)> {
        self.firing.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.firing.is_empty()
    }

    /// Whether time alone can change nothing here: nothing fires (no
    /// resend due), waits out a hold, or waits for its first reading.
    /// Readings with no condition then change the book only when the
    /// models change.
    pub fn at_rest(&self) -> bool {
        self.firing.is_empty() && self.pending.is_empty() && self.adopted.is_empty()
    }

    /// Applies `cluster`'s reading at `now`. A stale reading keeps what
    /// fires as it is. `session_lost_since` is when the agent's session
    /// stopped being connected (measured by the caller). At most
    /// `max_alerts` fire per cluster; the number newly left out is
    /// returned (each counted once, not at every update).
    pub fn update(
        &mut self,
        cluster: &str,
        mut reading: Reading,
        session_lost_since: Option<Instant>,
        now: Instant,
    ) -> (Changes, usize) {
        // The elections whose regressions are counted: the book keeps the
        // count each was last seen at, so that only growth fires.
        let counted: std::collections::BTreeSet<Key> = reading
            .conditions
            .iter()
            .filter(|c| c.kind == Kind::EpochRegression)
            .map(|c| (c.kind, cluster.to_owned(), c.election.clone()))
            .collect();
        let mut wanted = self.wanted(
            cluster,
            std::mem::take(&mut reading.conditions),
            session_lost_since,
            now,
        );
        let fresh = reading.fresh;
        if fresh {
            self.first_fresh.entry(cluster.to_owned()).or_insert(now);
        } else {
            self.first_fresh.remove(cluster);
        }
        let watched = self.first_fresh.get(cluster).copied();
        let at_once = self.decide_adopted(cluster, &mut wanted, &reading, now);
        let mut changes = Changes::default();
        let left_out = self.admit(cluster, &wanted, &at_once, now, &mut changes);
        // Resolve what no longer holds, for this cluster; from a stale
        // reading only the session alert may change.
        let gone: Vec<Key> = self
            .firing
            .keys()
            .filter(|k| k.1 == cluster && !wanted.contains_key(*k))
            .filter(|k| k.0 == Kind::SessionDown || (fresh && !reading.holds_still(k)))
            .filter(|k| !self.window_unwatched(k, watched, now))
            .cloned()
            .collect();
        for key in gone {
            if let Some(f) = self.firing.remove(&key) {
                changes.resolved.push((key, f));
            }
        }
        if fresh {
            let keep = |k: &Key| k.1 != cluster || wanted.contains_key(k) || reading.holds_still(k);
            self.pending.retain(|k, _| keep(k));
            // A count stays known while the reading still shows it, also
            // once its alert resolved: forgotten, the same count would
            // read as new growth at the next update and page again.
            self.regressions
                .retain(|k, _| keep(k) || counted.contains(k));
            self.left_out
                .retain(|k| keep(k) && !self.firing.contains_key(k));
        }
        (changes, left_out)
    }

    /// Forgets what it knows of clusters other than `kept` that have
    /// nothing firing (a reload removed them): a cluster added again
    /// later under the same name starts afresh, its windows unwatched.
    pub fn forget_others(&mut self, kept: &std::collections::BTreeSet<&str>) {
        let firing: std::collections::BTreeSet<String> =
            self.firing.keys().map(|k| k.1.clone()).collect();
        let keep = |cluster: &String| kept.contains(cluster.as_str()) || firing.contains(cluster);
        self.first_fresh.retain(|c, _| keep(c));
        self.pending.retain(|k, _| keep(&k.1));
        self.regressions.retain(|k, _| keep(&k.1));
        self.left_out.retain(|k| keep(&k.1));
    }

    /// Whether `key` judges a window the agent has not watched whole since
    /// `watched` (see `first_fresh`): flapping or a regression that fires
    /// cannot be shown over by a shorter look, so it stays.
    fn window_unwatched(&self, key: &Key, watched: Option<Instant>, now: Instant) -> bool {
        matches!(key.0, Kind::EpochRegression | Kind::MasterFlapping)
            && watched.is_none_or(|w| {
                now.saturating_duration_since(w) < key.0.window_in(&self.thresholds)
            })
    }

    /// The alerts `cluster`'s reading asks for: key → (since when, value,
    /// the condition's own hold). An epoch regression is asked for while
    /// its count grew within the rule's window.
    fn wanted(
        &mut self,
        cluster: &str,
        conditions: Vec<Condition>,
        session_lost_since: Option<Instant>,
        now: Instant,
    ) -> BTreeMap<Key, (Instant, u64, Option<Duration>)> {
        let mut wanted = BTreeMap::new();
        if let Some(since) = session_lost_since {
            let key = (Kind::SessionDown, cluster.to_owned(), String::new());
            wanted.insert(key, (since, 0, None));
        }
        for c in conditions {
            let key = (c.kind, cluster.to_owned(), c.election);
            if c.kind == Kind::EpochRegression {
                let seen = self.regressions.entry(key.clone()).or_insert((0, now));
                if c.value > seen.0 {
                    *seen = (c.value, now);
                }
                if now.saturating_duration_since(seen.1)
                    <= Kind::EpochRegression.window_in(&self.thresholds)
                {
                    let since = seen.1;
                    wanted.insert(key, (since, c.value, None));
                }
                continue;
            }
            let since = c
                .since
                .unwrap_or_else(|| *self.pending.get(&key).unwrap_or(&now));
            wanted.insert(key, (since, c.value, c.hold));
        }
        wanted
    }

    /// Decides `cluster`'s adopted alerts (see [`Book::adopt`]): those to
    /// fire at once go into `wanted` with their old start and are
    /// returned. Election alerts wait for a fresh reading; the session's
    /// is judged at every one.
    fn decide_adopted(
        &mut self,
        cluster: &str,
        wanted: &mut BTreeMap<Key, (Instant, u64, Option<Duration>)>,
        reading: &Reading,
        now: Instant,
    ) -> std::collections::BTreeSet<Key> {
        let mut at_once = std::collections::BTreeSet::new();
        let mine: Vec<(Key, Instant)> = self
            .adopted
            .iter()
            .filter(|(k, _)| k.1 == cluster && (reading.fresh || k.0 == Kind::SessionDown))
            .map(|(k, at)| (k.clone(), *at))
            .collect();
        for (key, adopted_since) in mine {
            let keep = if let Some(w) = wanted.get_mut(&key) {
                w.0 = w.0.min(adopted_since);
                false
            } else if matches!(key.0, Kind::EpochRegression | Kind::MasterFlapping) {
                let open = self.window_unwatched(&key, self.first_fresh.get(cluster).copied(), now);
                if open {
                    wanted.insert(key.clone(), (adopted_since, 1, None));
                }
                open
            } else if key.0 != Kind::SessionDown && reading.holds_still(&key) {
                wanted.insert(key.clone(), (adopted_since, 0, None));
                false
            } else {
                self.adopted.remove(&key);
                continue;
            };
            at_once.insert(key.clone());
            if !keep {
                self.adopted.remove(&key);
            }
        }
        at_once
    }

    /// Fires what has held its `for` (at most `max_alerts` per cluster;
    /// returns how many were newly left out), keeps the rest pending.
    /// `at_once` fire without waiting: Alertmanager already had them.
    fn admit(
        &mut self,
        cluster: &str,
        wanted: &BTreeMap<Key, (Instant, u64, Option<Duration>)>,
        at_once: &std::collections::BTreeSet<Key>,
        now: Instant,
        changes: &mut Changes,
    ) -> usize {
        let t = self.thresholds;
        let mut left_out = 0;
        let mut count = self.firing.keys().filter(|k| k.1 == cluster).count();
        for (key, (since, value, hold)) in wanted {
            let held = at_once.contains(key)
                || now.saturating_duration_since(*since) >= hold.unwrap_or(key.0.hold(&t));
            if let Some(f) = self.firing.get_mut(key) {
                f.value = *value;
            } else if held {
                if count >= t.max_alerts {
                    if self.left_out.insert(key.clone()) {
                        left_out += 1;
                    }
                    continue;
                }
                count += 1;
                self.pending.remove(key);
                let firing = Firing {
                    since: *since,
                    value: *value,
                };
                self.firing.insert(key.clone(), firing);
                changes.fired.push(key.clone());
                if at_once.contains(key) {
                    changes.carried.push(key.clone());
                }
            } else {
                self.pending.entry(key.clone()).or_insert(*since);
            }
        }
        left_out
    }
}

/// What the pusher counts, shared with `/metrics`.
#[derive(Debug, Default)]
pub struct PushStats {
    inner: std::sync::Mutex<PushCounts>,
}

/// A copy of the pusher's counters.
#[derive(Debug, Clone, Default)]
pub struct PushCounts {
    /// Whether a pusher runs (`[alerting]` is configured now).
    pub enabled: bool,
    /// Firing alerts by alertname and cluster.
    pub active: BTreeMap<(&'static str, String), usize>,
    /// Alerts delivered, per Alertmanager URL.
    pub sent: BTreeMap<String, u64>,
    /// Failed deliveries, per Alertmanager URL and reason.
    pub errors: BTreeMap<(String, &'static str), u64>,
    /// Failed read-backs at start, per Alertmanager URL and reason.
    pub read_back_errors: BTreeMap<(String, &'static str), u64>,
    /// Alerts never sent (past `max_alerts`, or resolutions given up).
    pub dropped: u64,
    /// What fires now: alertname, cluster, election (empty for the
    /// session), since when.
    pub firing: Vec<(&'static str, String, String, std::time::SystemTime)>,
}

impl PushStats {
    pub fn with(&self, f: impl FnOnce(&mut PushCounts)) {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()));
    }
    pub fn snapshot(&self) -> PushCounts {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Fills a rule's template, as Prometheus would: `{{ $labels.ensemble }}`,
/// `{{ $labels.election }}` and `{{ $value }}` (the only ones the
/// catalogue's texts use; a test keeps it so).
pub fn fill(template: &str, cluster: &str, election: &str, value: u64) -> String {
    template
        .replace("{{ $labels.ensemble }}", cluster)
        .replace("{{ $labels.election }}", election)
        .replace("{{ $value }}", &value.to_string())
}

#[cfg(test)]
mod tests;
