//! The alerting agent: every half second, reads each cluster's alert
//! conditions (under a brief read lock), updates the [`Book`], and pushes
//! what changed to every configured Alertmanager; resends active alerts
//! every `resend_interval`, marks resolved ones with `endsAt`, retries
//! failed deliveries with backoff. Sends run apart from the watch and from
//! one another: a hung Alertmanager delays nothing else.

pub mod client;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{info, warn};

use crate::config::alerting::AlertingConfig;
use crate::model::alerting::{Book, Firing, Key, Kind, PushStats, Reading, Thresholds, fill};
use crate::model::{Roster, SharedCluster};

/// How often conditions are read.
const TICK: Duration = Duration::from_millis(500);
/// Longest wait between retries to an Alertmanager that fails.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Resolutions not delivered within this are given up (and counted).
const RESOLVED_KEPT: Duration = Duration::from_secs(600);

/// One Alertmanager's delivery state.
#[derive(Debug, Default)]
struct Delivery {
    /// Something changed since the last delivery.
    dirty: bool,
    last_ok: Option<Instant>,
    retry_at: Option<Instant>,
    failures: u32,
    in_flight: bool,
    /// Resolved alerts (with when) not yet delivered here.
    resolved: Vec<(Key, Firing, SystemTime)>,
    /// Whether the last attempt failed (logged once per outage).
    failing: bool,
}

/// The JSON of one alert (Alertmanager API v2 `postableAlert`).
fn alert_json(
    cfg: &AlertingConfig,
    key: &Key,
    firing: &Firing,
    now: Instant,
    wall: SystemTime,
    ends: SystemTime,
) -> Value {
    let (kind, cluster, election) = key;
    let mut labels = Map::new();
    for (k, v) in &cfg.external_labels {
        labels.insert(k.clone(), json!(v));
    }
    labels.insert("alertname".into(), json!(kind.alertname()));
    labels.insert("severity".into(), json!(kind.severity()));
    labels.insert("cluster".into(), json!(cluster));
    if !election.is_empty() {
        labels.insert("election".into(), json!(election));
    }
    let (summary, description) = kind.texts();
    let starts = wall - now.saturating_duration_since(firing.since);
    let mut alert = json!({
        "labels": labels,
        "annotations": {
            "summary": fill(summary, cluster, election, firing.value),
            "description": fill(description, cluster, election, firing.value),
            "runbook_url": format!("docs/runbooks.md#{}", kind.anchor()),
        },
        "startsAt": humantime::format_rfc3339_millis(starts).to_string(),
        "endsAt": humantime::format_rfc3339_millis(ends).to_string(),
    });
    if let Some(base) = &cfg.generator_url {
        let path = if election.is_empty() {
            String::from("/")
        } else {
            format!("/api/v1/elections{election}?cluster={cluster}")
        };
        alert["generatorURL"] = json!(format!("{}{path}", base.trim_end_matches('/')));
    }
    alert
}

/// Runs until `stop` turns true, then hands back what fires, so a pusher
/// started by a reload carries on (resolving what clears) where this one
/// stopped.
pub async fn run(
    cfg: AlertingConfig,
    clusters: Roster<SharedCluster>,
    stats: Arc<PushStats>,
    mut stop: watch::Receiver<bool>,
    mut book: Book,
) -> Book {
    let thresholds = Thresholds {
        no_master_for: cfg.no_master_for,
        session_lost_for: cfg.session_lost_for,
    };
    let cfg = Arc::new(cfg);
    let mut lost_since: HashMap<String, Instant> = HashMap::new();
    let mut deliveries: Vec<Delivery> = cfg
        .alertmanagers
        .iter()
        .map(|_| Delivery::default())
        .collect();
    let mut sends: JoinSet<(usize, usize, usize, Result<(), client::SendError>)> = JoinSet::new();
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
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = stop.wait_for(|s| *s) => {
                stats.with(|s| {
                    s.enabled = false;
                    s.active.clear();
                    s.firing.clear();
                });
                return book;
            }
        }
        let (now, wall) = (Instant::now(), SystemTime::now());
        let roster = clusters.now();
        let mut readings: Vec<(String, Reading, bool)> = roster
            .iter()
            .map(|cluster| {
                let c = cluster.read();
                (
                    c.name.clone(),
                    c.alert_reading(now),
                    c.session.is_connected(),
                )
            })
            .collect();
        // A cluster a reload removed: what it had firing resolves (the user
        // stopped watching it), instead of being re-sent as firing forever.
        let gone: BTreeSet<String> = book
            .firing()
            .map(|(key, _)| key.1.clone())
            .filter(|name| !readings.iter().any(|(n, _, _)| n == name))
            .collect();
        lost_since.retain(|name, _| readings.iter().any(|(n, _, _)| n == name));
        readings.extend(gone.into_iter().map(|name| {
            let reading = Reading {
                fresh: true,
                ..Reading::default()
            };
            (name, reading, true)
        }));
        for (name, reading, connected) in readings {
            let lost = if connected {
                lost_since.remove(&name);
                None
            } else {
                Some(*lost_since.entry(name.clone()).or_insert(now))
            };
            let (changes, left_out) =
                book.update(&name, reading, lost, now, &thresholds, cfg.max_alerts);
            if left_out > 0 {
                warn!(cluster = %name, left_out, "more alerts than alerting.max_alerts: the rest are not pushed (the rules' aggregates still see them)");
                stats.with(|s| s.dropped += left_out as u64);
            }
            for key in &changes.fired {
                info!(alert = key.0.alertname(), cluster = %key.1, election = %key.2, "alert fired");
            }
            for (key, _) in &changes.resolved {
                info!(alert = key.0.alertname(), cluster = %key.1, election = %key.2, "alert resolved");
            }
            if !changes.fired.is_empty() || !changes.resolved.is_empty() {
                for d in &mut deliveries {
                    d.dirty = true;
                    d.resolved.extend(
                        changes
                            .resolved
                            .iter()
                            .map(|(k, f)| (k.clone(), f.clone(), wall)),
                    );
                    // Bounded while an Alertmanager is unreachable: the
                    // oldest resolutions go first (counted). Not while a
                    // send is in flight: it counts what it carried.
                    let cap = cfg.max_alerts * 4;
                    if d.resolved.len() > cap && !d.in_flight {
                        let over = d.resolved.len() - cap;
                        d.resolved.drain(..over);
                        stats.with(|s| s.dropped += over as u64);
                    }
                }
            }
        }
        let mut active: BTreeMap<&'static str, usize> =
            Kind::ALL.iter().map(|k| (k.alertname(), 0)).collect();
        for (key, _) in book.firing() {
            *active.entry(key.0.alertname()).or_default() += 1;
        }
        let firing = book
            .firing()
            .map(|(k, f)| {
                let since = wall - now.saturating_duration_since(f.since);
                (k.0.alertname(), k.1.clone(), k.2.clone(), since)
            })
            .collect();
        stats.with(|s| {
            s.active = active;
            s.firing = firing;
        });

        while let Some(done) = sends.try_join_next() {
            let Ok((i, count, alerts, result)) = done else {
                continue;
            };
            let d = &mut deliveries[i];
            let url = &cfg.alertmanagers[i].url;
            d.in_flight = false;
            match result {
                Ok(()) => {
                    if d.failing {
                        info!(alertmanager = %url, "alerts delivered again");
                    }
                    // Resolutions that arrived during the send are kept.
                    let mut resolved = std::mem::take(&mut d.resolved);
                    let kept = resolved.split_off(count.min(resolved.len()));
                    *d = Delivery {
                        last_ok: Some(now),
                        resolved: kept,
                        dirty: d.dirty,
                        ..Delivery::default()
                    };
                    stats.with(|s| *s.sent.entry(url.clone()).or_default() += alerts as u64);
                }
                Err(e) => {
                    if !d.failing {
                        warn!(alertmanager = %url, reason = e.reason, "cannot deliver alerts: {}; retrying with backoff", e.detail);
                    }
                    d.failing = true;
                    d.failures += 1;
                    let wait = Duration::from_secs(1 << d.failures.min(5)).min(BACKOFF_MAX);
                    d.retry_at = Some(now + wait);
                    d.dirty = true;
                    stats.with(|s| *s.errors.entry((url.clone(), e.reason)).or_default() += 1);
                }
            }
        }

        for (i, d) in deliveries.iter_mut().enumerate() {
            if d.in_flight {
                continue;
            }
            let stale_before = wall - RESOLVED_KEPT;
            let before = d.resolved.len();
            d.resolved.retain(|(_, _, at)| *at >= stale_before);
            if d.resolved.len() < before {
                stats.with(|s| s.dropped += (before - d.resolved.len()) as u64);
            }
            let resend_due = !book.is_empty()
                && d.last_ok
                    .is_none_or(|t| now.saturating_duration_since(t) >= cfg.resend_interval);
            let wanted = d.dirty || resend_due || !d.resolved.is_empty();
            if !wanted || d.retry_at.is_some_and(|t| now < t) {
                continue;
            }
            if book.is_empty() && d.resolved.is_empty() {
                d.dirty = false;
                continue;
            }
            let ends_active = wall + cfg.resend_interval * 4;
            let mut alerts: Vec<Value> = book
                .firing()
                .map(|(k, f)| alert_json(&cfg, k, f, now, wall, ends_active))
                .collect();
            alerts.extend(
                d.resolved
                    .iter()
                    .map(|(k, f, at)| alert_json(&cfg, k, f, now, wall, *at)),
            );
            let body = serde_json::to_vec(&alerts).unwrap_or_default();
            let (count, sent) = (d.resolved.len(), alerts.len());
            d.in_flight = true;
            d.dirty = false;
            let cfg = cfg.clone();
            sends.spawn(async move {
                let result = client::post(&cfg.alertmanagers[i], &body).await;
                (i, count, sent, result)
            });
        }
    }
}
