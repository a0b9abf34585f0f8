//! What the outputs read of a cluster: each part through a shared
//! reference, none writable from outside the cluster's own module.

use std::collections::BTreeMap;

use super::{ClusterState, DiscoveryFeed, EnsembleFeed, Limits, ProbeFeed};
use crate::model::content::ContentKind;
use crate::model::{ghost, kerberos, session, timeline, tree};

impl ClusterState {
    /// The cluster's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The timeline of switches, masterless periods and session losses.
    pub fn timeline(&self) -> &timeline::Timeline {
        &self.timeline
    }

    /// The agent's own session to the ensemble.
    pub fn session(&self) -> &session::Session {
        &self.session
    }

    /// The trees watched: those configured, then discovery's finds.
    pub fn trees(&self) -> &[tree::Tree] {
        &self.trees
    }

    /// Which elections the latest scrape gave series past the cap.
    pub(in crate::model) fn export(&self) -> &crate::model::export::ExportRecord {
        &self.export
    }

    /// The survey as the last scrape left it.
    pub(in crate::model) fn survey_cache(&self) -> &crate::model::survey::SurveyCache {
        &self.survey
    }

    /// The timeline, for tests that write entries of their own.
    #[cfg(test)]
    pub fn timeline_mut(&mut self) -> &mut timeline::Timeline {
        &mut self.timeline
    }

    /// The handle on what the members said and who they are.
    pub fn ensemble(&self) -> &EnsembleFeed {
        &self.ensemble
    }

    /// The cardinality guard.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Elections, groups and locks the guard declined, by kind.
    pub fn dropped(&self) -> &BTreeMap<ContentKind, u64> {
        &self.dropped
    }

    /// The discovery walks' outcome; `None` when discovery is off.
    pub fn discovery(&self) -> Option<&DiscoveryFeed> {
        self.discovery.as_ref()
    }

    /// The ghost check's view of the owner sessions; `None` when it is off.
    pub fn ghost(&self) -> Option<&ghost::SessionTracker> {
        self.ghost.as_ref()
    }

    /// Sessions other than the agent's watching each election node; `None`
    /// unless the ghost check asks `wchp`.
    pub fn parent_watchers(&self) -> Option<&BTreeMap<String, usize>> {
        self.parent_watchers.as_ref()
    }

    /// The failover probe's figures; `None` unless the probe runs.
    pub fn probe(&self) -> Option<&ProbeFeed> {
        self.probe.as_ref()
    }

    /// The agent's Kerberos ticket; `None` unless the cluster uses GSSAPI.
    pub fn kerberos(&self) -> Option<&kerberos::KerberosFeed> {
        self.kerberos.as_ref()
    }
}
