//! `/metrics`: a `prometheus-client` collector that encodes the models at
//! scrape time, one encoder per model (`ENCODERS`), every family name in
//! [`names`].
//!
//! Nothing here is updated by event handlers; each scrape takes a read lock
//! on each cluster, reads the models and writes the exposition, in the
//! Prometheus text format or OpenMetrics as the scraper asks.

mod alerting;
mod discovery;
mod elections;
mod encode;
mod ensemble;
mod exporter;
mod fourlw;
mod ghost;
mod groups;
mod kerberos;
mod lease;
mod locks;
pub mod mntr;
mod mntr_section;
pub mod names;
mod probe;
mod reload;
mod session;
mod text;
mod trees;
mod web;

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use prometheus_client::collector::Collector as PromCollector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;

use crate::model::attention::Survey;
use crate::model::{ClusterState, Roster, SharedCluster};
use mntr_section::encode_mntr_section;

/// Content type of the Prometheus text format.
pub const TEXT_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
/// Content type of OpenMetrics text.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Renders the models of the clusters one scrape saw: the per-election
/// families by hand into `elections` (see [`text`]), the rest through the
/// library.
#[derive(Debug)]
pub struct Collector {
    clusters: Arc<Vec<SharedCluster>>,
    openmetrics: bool,
    elections: Arc<std::sync::Mutex<String>>,
}

/// Everything `/metrics` shows: the clusters' families (through a
/// registry made for each scrape around one snapshot of the roster), the
/// agent's own counters, and the families `prometheus-client` cannot encode
/// (summaries folded from `mntr`), from the same snapshot: a reload during
/// a scrape never mixes old and new clusters in one body.
#[derive(Debug)]
pub struct Exposition {
    clusters: Roster<SharedCluster>,
    web: Option<Arc<crate::model::web::WebStats>>,
    push: Option<Arc<crate::model::alerting::PushStats>>,
    reload: Option<Arc<crate::model::reload::ReloadStats>>,
    /// The mntr section (samples and summaries) per format, with the
    /// ensemble generations it was written for: rebuilt only after a new
    /// collection, not on every scrape.
    mntr_cache: std::sync::Mutex<[Option<MntrSection>; 2]>,
    /// `mntr` typings by key set, made once and reused by every collection.
    typings: std::sync::Mutex<mntr::Typings>,
    /// The mntr section's text per format with the values left out, laid
    /// out once per set of key sets and reused by every collection.
    layouts: std::sync::Mutex<[mntr_section::Layout; 2]>,
    /// Length of the last body rendered.
    last_len: std::sync::atomic::AtomicUsize,
}

/// Rendered mntr families and the clusters (identity, ensemble generation)
/// they reflect: a reload that replaces a cluster invalidates it too.
type MntrSection = (Vec<(usize, u64)>, String);

impl Exposition {
    pub fn new(clusters: Vec<SharedCluster>) -> Self {
        Self::build(Roster::new(clusters), None, None)
    }

    /// With the HTTP server's own counters, and the alert pusher's when
    /// alerts are pushed.
    pub fn with_server(
        clusters: Roster<SharedCluster>,
        web: std::sync::Arc<crate::model::web::WebStats>,
        push: Option<std::sync::Arc<crate::model::alerting::PushStats>>,
        reload: std::sync::Arc<crate::model::reload::ReloadStats>,
    ) -> Self {
        let mut exposition = Self::build(clusters, Some(web), push);
        exposition.reload = Some(reload);
        exposition
    }

    fn build(
        clusters: Roster<SharedCluster>,
        web: Option<Arc<crate::model::web::WebStats>>,
        push: Option<Arc<crate::model::alerting::PushStats>>,
    ) -> Self {
        Self {
            clusters,
            web,
            push,
            reload: None,
            mntr_cache: std::sync::Mutex::new([None, None]),
            typings: std::sync::Mutex::new(mntr::Typings::default()),
            layouts: std::sync::Mutex::default(),
            last_len: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The registry of one scrape: the clusters of `roster`, then the
    /// agent's own counters, in exposition order; the per-election
    /// families go to `elections`.
    fn registry(
        &self,
        roster: Arc<Vec<SharedCluster>>,
        openmetrics: bool,
        elections: Arc<std::sync::Mutex<String>>,
    ) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Collector {
            clusters: roster,
            openmetrics,
            elections,
        }));
        if let Some(stats) = &self.web {
            registry.register_collector(Box::new(web::WebCollector {
                stats: stats.clone(),
            }));
        }
        if let Some(stats) = &self.push {
            registry.register_collector(Box::new(alerting::PushCollector {
                stats: stats.clone(),
            }));
        }
        if let Some(stats) = &self.reload {
            registry.register_collector(Box::new(reload::ReloadCollector {
                stats: stats.clone(),
            }));
        }
        registry
    }

    /// Encodes everything in the Prometheus text format, or OpenMetrics.
    pub fn render(&self, openmetrics: bool) -> Result<String, fmt::Error> {
        // Sized from the last body: growing a 100 MiB string by doubling
        // copies it again and again.
        let last = self.last_len.load(std::sync::atomic::Ordering::Relaxed);
        let mut body = String::with_capacity((last + last / 16).max(1 << 16));
        crate::os::prefer_huge_pages(&mut body);
        // The per-election families (most of a large body) are written
        // straight into the body during the registry's encoding; the
        // library's families follow them.
        let elections = Arc::new(std::sync::Mutex::new(body));
        let roster = self.clusters.now();
        let registry = self.registry(roster.clone(), openmetrics, elections.clone());
        let mut rest = String::with_capacity(1 << 16);
        if openmetrics {
            prometheus_client::encoding::text::encode_registry(&mut rest, &registry)?;
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut rest, &registry)?;
        }
        drop(registry);
        let mut out = std::mem::take(&mut *elections.lock().unwrap_or_else(|p| p.into_inner()));
        out.push_str(&rest);
        drop(rest);
        let guards: Vec<_> = roster.iter().map(|c| c.read()).collect();
        let clusters: Vec<&ClusterState> = guards.iter().map(|g| &**g).collect();
        let generations: Vec<(usize, u64)> = roster
            .iter()
            .zip(&clusters)
            .map(|(shared, c)| {
                let generation = c.ensemble.as_ref().map_or(0, |e| e.generation());
                (shared.identity(), generation)
            })
            .collect();
        let mut cache = self.mntr_cache.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut cache[usize::from(openmetrics)];
        match slot {
            Some((g, text)) if *g == generations => out.push_str(text),
            _ => {
                let mut text = String::new();
                let mut typings = self.typings.lock().unwrap_or_else(|p| p.into_inner());
                let mut layouts = self.layouts.lock().unwrap_or_else(|p| p.into_inner());
                encode_mntr_section(
                    &mut text,
                    &clusters,
                    openmetrics,
                    &mut typings,
                    &mut layouts[usize::from(openmetrics)],
                )?;
                out.push_str(&text);
                *slot = Some((generations, text));
            }
        }
        if openmetrics {
            prometheus_client::encoding::text::encode_eof(&mut out)?;
        }
        self.last_len
            .store(out.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(out)
    }
}

/// What every encoder reads: each cluster's models (under its read lock
/// for the whole scrape), the scrape's instant, and each cluster's survey
/// of its elections (which get per-election series; the tree aggregates).
pub(crate) struct Scrape<'a> {
    pub clusters: &'a [&'a ClusterState],
    pub now: Instant,
    pub surveys: Vec<Survey<'a>>,
}

impl<'a> Scrape<'a> {
    pub fn new(clusters: &'a [&'a ClusterState], now: Instant) -> Self {
        Self {
            clusters,
            now,
            surveys: clusters
                .iter()
                .map(|c| {
                    let survey = c.survey(now);
                    c.remember_export(&survey);
                    survey
                })
                .collect(),
        }
    }
}

/// One model's families.
type Encode = fn(&mut DescriptorEncoder, &Scrape) -> fmt::Result;

/// Every encoder, in exposition order. The per-election families (first in
/// the body, see [`text`]) and the `mntr` section (last) are written apart
/// (see [`Exposition::render`]).
const ENCODERS: [Encode; 16] = [
    lease::encode_leases,
    ghost::encode_ghosts,
    probe::encode_probe,
    trees::encode_trees,
    groups::encode_groups,
    locks::encode_locks,
    session::encode_sessions,
    kerberos::encode_kerberos,
    ensemble::encode_ensembles,
    ensemble::encode_optional_commands,
    fourlw::encode_fourlw_health,
    ensemble::encode_ensemble_totals,
    discovery::encode_discovery,
    exporter::encode_series_dropped,
    exporter::encode_timeline,
    exporter::encode_build_info,
];

impl PromCollector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let guards: Vec<_> = self.clusters.iter().map(|c| c.read()).collect();
        let clusters: Vec<&ClusterState> = guards.iter().map(|g| &**g).collect();
        let scrape = Scrape::new(&clusters, Instant::now());
        {
            let mut out = self.elections.lock().unwrap_or_else(|p| p.into_inner());
            elections::write_elections(&mut out, &scrape, self.openmetrics)?;
        }
        ENCODERS
            .iter()
            .try_for_each(|encode| encode(&mut encoder, &scrape))
    }
}
