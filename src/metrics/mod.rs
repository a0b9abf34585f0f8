//! `/metrics`: a `prometheus-client` collector that encodes the models at
//! scrape time, one encoder per model (`ENCODERS`), every family name in
//! [`names`].
//!
//! Nothing here is updated by event handlers; each scrape takes a read lock
//! on each cluster, reads the models and writes the exposition, in the
//! Prometheus text format or OpenMetrics as the scraper asks.

mod alerting;
pub(crate) mod body;
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
pub(crate) mod mntr;
mod mntr_section;
pub(crate) mod names;
mod probe;
mod process;
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

use crate::model::survey::Survey;
use crate::model::{ClusterState, Roster, SharedCluster};
use body::Body;
pub use body::Encoded;
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
    elections: Arc<std::sync::Mutex<Body>>,
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
    /// Where the `process_*` families come from: /proc for the agent,
    /// fixed figures for the golden exposition, none for bare models.
    process: Option<process::Reader>,
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
    /// Per format: how long the last render took, and how many elections
    /// and groups the clusters held then (see [`Exposition::is_cheap`]).
    last_render: std::sync::Mutex<[Option<(std::time::Duration, usize)>; 2]>,
    /// [`ZIP_PAST`], or less in tests.
    zip_past: usize,
}

/// A render that took less than this last time, of a model that has not
/// grown since, is cheap enough to run on the runtime's own thread.
const CHEAP_RENDER: std::time::Duration = std::time::Duration::from_millis(1);

/// Elections a model may have gained since a cheap render and still count
/// as the size that render had.
const CHEAP_GROWTH: usize = 1_000;

/// A body is compressed while it is written once it grows past this:
/// beyond the default cap's (about 12 MiB at 10,000 elections), where the
/// text alone would outgrow the memory the model is allowed beside it
/// (docs/benchmarks.md).
pub const ZIP_PAST: usize = 32 << 20;

/// The decision of [`Exposition::is_cheap`]: the last render (its time and
/// the elections then) and the elections now (`None`: a writer holds them).
fn cheap(last: Option<(std::time::Duration, usize)>, now: Option<usize>) -> bool {
    match (last, now) {
        (Some((took, then)), Some(now)) => took < CHEAP_RENDER && now <= then + CHEAP_GROWTH,
        _ => false,
    }
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
        exposition.process = Some(crate::os::process_stats);
        exposition
    }

    /// With the `process_*` families, read by `read` at each scrape.
    pub fn with_process(mut self, read: process::Reader) -> Self {
        self.process = Some(read);
        self
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
            process: None,
            mntr_cache: std::sync::Mutex::new([None, None]),
            typings: std::sync::Mutex::new(mntr::Typings::default()),
            layouts: std::sync::Mutex::default(),
            last_len: std::sync::atomic::AtomicUsize::new(0),
            last_render: std::sync::Mutex::default(),
            zip_past: ZIP_PAST,
        }
    }

    /// Compresses bodies past `bytes` instead of
    /// [`ZIP_PAST`]: for tests, whose models are small.
    pub fn zipping_past(mut self, bytes: usize) -> Self {
        self.zip_past = bytes;
        self
    }

    /// Elections and groups of every cluster, or `None` when a writer holds
    /// one of them now.
    fn parents(&self) -> Option<usize> {
        self.clusters.now().iter().try_fold(0, |sum, c| {
            c.try_view(|c| {
                c.trees()
                    .iter()
                    .map(crate::model::tree::Tree::parent_count)
                    .sum::<usize>()
            })
            .map(|n| sum + n)
        })
    }

    /// Whether a render in this format can be expected to take well under a
    /// millisecond: the last one did, and the model has not grown since (a
    /// first sync of a million elections between two scrapes) and no
    /// writer holds it now (a render would wait for it). Never before a
    /// first render.
    pub fn is_cheap(&self, openmetrics: bool) -> bool {
        let last =
            self.last_render.lock().unwrap_or_else(|p| p.into_inner())[usize::from(openmetrics)];
        // The models are looked at only when the last render was quick.
        last.is_some_and(|(took, _)| took < CHEAP_RENDER) && cheap(last, self.parents())
    }

    /// The body `/metrics` serves, remembering how long it took for
    /// [`is_cheap`](Self::is_cheap). A body that grows past [`ZIP_PAST`]
    /// is compressed while it is written, and kept only so, whether its
    /// scraper asked for gzip or not (see [`body`]).
    pub fn render_timed(&self, openmetrics: bool) -> Result<Encoded, fmt::Error> {
        let parents = self.parents();
        let began = std::time::Instant::now();
        let last = self.last_len.load(std::sync::atomic::Ordering::Relaxed);
        let body = Body::zipping_past(self.zip_past, (last + last / 16).max(1 << 16));
        let body = self.encode(openmetrics, body);
        let took = began.elapsed();
        self.last_render.lock().unwrap_or_else(|p| p.into_inner())[usize::from(openmetrics)] =
            parents.map(|parents| (took, parents));
        body
    }

    /// The registry of one scrape: the clusters of `roster`, then the
    /// agent's own counters, in exposition order; the per-election
    /// families go to `elections`.
    fn registry(
        &self,
        roster: Arc<Vec<SharedCluster>>,
        openmetrics: bool,
        elections: Arc<std::sync::Mutex<Body>>,
    ) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Collector {
            clusters: roster.clone(),
            openmetrics,
            elections,
        }));
        if let Some(stats) = &self.web {
            registry.register_collector(Box::new(web::WebCollector {
                stats: stats.clone(),
            }));
        }
        if let Some(read) = self.process {
            registry.register_collector(Box::new(process::ProcessCollector { read }));
        }
        if let Some(stats) = &self.push {
            let clusters = roster.iter().map(|c| c.read().name().to_owned()).collect();
            registry.register_collector(Box::new(alerting::PushCollector {
                stats: stats.clone(),
                clusters,
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
        match self.encode(openmetrics, Body::plain((last + last / 16).max(1 << 16)))? {
            Encoded::Plain(text) => Ok(text),
            Encoded::Gzip { .. } => Err(fmt::Error),
        }
    }

    /// Writes everything into `body`.
    fn encode(&self, openmetrics: bool, body: Body) -> Result<Encoded, fmt::Error> {
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
        let mut out = Arc::into_inner(elections)
            .ok_or(fmt::Error)?
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        out.text().push_str(&rest);
        out.written()?;
        drop(rest);
        let guards: Vec<_> = roster.iter().map(|c| c.read()).collect();
        let clusters: Vec<&ClusterState> = guards.iter().map(|g| &**g).collect();
        let polled = ensemble::Polled::of(&clusters);
        let generations: Vec<(usize, u64)> = roster
            .iter()
            .zip(&polled)
            .map(|(shared, p)| (shared.identity(), p.readings.generation()))
            .collect();
        let mut cache = self.mntr_cache.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut cache[usize::from(openmetrics)];
        match slot {
            Some((g, text)) if *g == generations => out.text().push_str(text),
            _ => {
                let mut text = String::new();
                let mut typings = self.typings.lock().unwrap_or_else(|p| p.into_inner());
                let mut layouts = self.layouts.lock().unwrap_or_else(|p| p.into_inner());
                encode_mntr_section(
                    &mut text,
                    &polled,
                    openmetrics,
                    &mut typings,
                    &mut layouts[usize::from(openmetrics)],
                )?;
                out.text().push_str(&text);
                *slot = Some((generations, text));
            }
        }
        drop(cache);
        drop(polled);
        drop(clusters);
        drop(guards);
        if openmetrics {
            prometheus_client::encoding::text::encode_eof(out.text())?;
        }
        let out = out.finish()?;
        self.last_len
            .store(out.plain_len(), std::sync::atomic::Ordering::Relaxed);
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
    /// Each cluster's ensemble readings, one snapshot for every family.
    pub polled: Vec<ensemble::Polled<'a>>,
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
            polled: ensemble::Polled::of(clusters),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::bots;

    /// Renders on the runtime's thread only after a render showed the
    /// model cheap, per format, and not once the model grew past what
    /// that render had or while a writer holds it.
    #[test]
    fn a_render_is_cheap_only_after_a_quick_one_of_a_model_that_did_not_grow() {
        let quick = Some((CHEAP_RENDER / 2, 10));
        assert!(cheap(quick, Some(10)));
        assert!(cheap(quick, Some(0)), "shrunk");
        assert!(cheap(quick, Some(10 + CHEAP_GROWTH)), "a little growth");
        assert!(!cheap(quick, Some(11 + CHEAP_GROWTH)), "grown");
        assert!(!cheap(quick, None), "a writer holds a cluster");
        assert!(!cheap(None, Some(10)), "no render yet");
        assert!(
            !cheap(Some((CHEAP_RENDER, 10)), Some(10)),
            "the last was slow"
        );
    }

    /// What the decision is given: nothing before a first render in that
    /// format, then that render's election count; grown past it, a render
    /// goes to the blocking pool whatever the last one took.
    #[test]
    fn renders_are_remembered_per_format_with_their_model_size() {
        let shared = SharedCluster::new(bots(10));
        let exposition = Exposition::new(vec![shared.clone()]);
        assert!(!exposition.is_cheap(false), "never before a first render");
        exposition.render_timed(false).unwrap();
        let last = |om: bool| exposition.last_render.lock().unwrap()[usize::from(om)];
        assert_eq!(last(false).map(|(_, n)| n), Some(10));
        assert_eq!(last(true), None, "each format on its own");
        assert!(!exposition.is_cheap(true));
        assert_eq!(exposition.parents(), Some(10));
        shared.rebuild(|_| bots(11 + CHEAP_GROWTH));
        assert!(!exposition.is_cheap(false), "grown since the last render");
        exposition.render_timed(false).unwrap();
        assert_eq!(last(false).map(|(_, n)| n), Some(11 + CHEAP_GROWTH));
    }
}
