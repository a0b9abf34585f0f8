//! What tells two loads of a cluster's configuration apart, for a reload:
//! equal fingerprints keep the running cluster, different ones rebuild it.
//! `Debug` covers every setting but hides secrets (credentials, certificate
//! and key contents), so their contents are hashed in as well: a rotated
//! password or certificate rebuilds the session that uses it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::model::tree::TreeId;

use super::alerting::AlertingConfig;
use super::{ClusterConfig, DiscoveryConfig, ElectionConfig, GroupConfig, LockConfig, WebConfig};

fn of(debug: &impl std::fmt::Debug, secrets: impl FnOnce(&mut DefaultHasher)) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{debug:?}").hash(&mut h);
    secrets(&mut h);
    h.finish()
}

impl ClusterConfig {
    pub fn fingerprint(&self) -> u64 {
        of(self, |h| {
            if let Some(super::Auth::Password(p)) = &self.auth {
                p.credentials.expose().hash(h);
            }
            if let Some(tls) = &self.tls {
                tls.hash_material(h);
            }
        })
    }

    /// The fingerprint without the configured trees: equal when a reload
    /// changed only trees, which the running session can take up.
    ///
    /// The lease sources run beside the session, one per leased tree: a
    /// changed source, or a leased tree whose id changed, starts the
    /// cluster's sources anew (its trees still keep their state).
    pub fn session_fingerprint(&self) -> u64 {
        let leases: Vec<_> = self
            .elections
            .iter()
            .zip(self.tree_ids())
            .filter(|(e, _)| e.lease.is_some())
            .map(|(e, id)| (id, e.lease.clone()))
            .collect();
        let mut bare = self.clone();
        bare.elections.clear();
        bare.groups.clear();
        bare.locks.clear();
        of(&(bare.fingerprint(), leases), |_| ())
    }

    /// One id per configured tree, in the order the cluster's models hold
    /// them (elections, groups, locks), made from the tree's configuration:
    /// a tree a reload did not change keeps its id, and with it its model
    /// (see [`TreeId`]).
    pub fn tree_ids(&self) -> Vec<TreeId> {
        let e = self
            .elections
            .iter()
            // The lease source is not the tree: changing where the lease
            // is read keeps the tree's model.
            .map(|t: &ElectionConfig| of(&(&t.pattern, &t.spec), |_| ()));
        let g = self.groups.iter().map(|t: &GroupConfig| of(t, |_| ()));
        let l = self.locks.iter().map(|t: &LockConfig| of(t, |_| ()));
        let mut seen: HashMap<u64, usize> = HashMap::new();
        e.chain(g)
            .chain(l)
            .map(|fingerprint| {
                let nth = seen.entry(fingerprint).or_insert(0);
                let id = TreeId::configured(fingerprint, *nth);
                *nth += 1;
                id
            })
            .collect()
    }
}

impl DiscoveryConfig {
    pub fn fingerprint(&self) -> u64 {
        of(self, |_| ())
    }
}

impl AlertingConfig {
    /// Equal when a reload left `[alerting]` as it was (credentials are
    /// files read at each send: a rotated one needs no new pusher).
    pub fn fingerprint(&self) -> u64 {
        of(self, |_| ())
    }
}

impl WebConfig {
    /// What of `[web]` a reload cannot change without a new listener:
    /// address, path, limits, the web config file's path and whether the
    /// lifecycle endpoint reloads.
    pub fn listener_fingerprint(&self) -> u64 {
        let listener = (
            &self.listen_addresses,
            &self.telemetry_path,
            &self.limits,
            self.config_file.as_ref().map(|(p, _)| p),
            self.enable_lifecycle,
        );
        of(&listener, |_| ())
    }
}
