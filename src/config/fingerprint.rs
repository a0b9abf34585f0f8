//! What tells two loads of a cluster's configuration apart, for a reload:
//! equal fingerprints keep the running cluster, different ones rebuild it.
//! `Debug` covers every setting but hides secrets (credentials, certificate
//! and key contents), so their contents are hashed in as well: a rotated
//! password or certificate rebuilds the session that uses it.

use std::hash::{DefaultHasher, Hash, Hasher};

use super::{ClusterConfig, DiscoveryConfig, ElectionConfig, GroupConfig, LockConfig};

fn of(debug: &impl std::fmt::Debug, secrets: impl FnOnce(&mut DefaultHasher)) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{debug:?}").hash(&mut h);
    secrets(&mut h);
    h.finish()
}

impl ClusterConfig {
    pub fn fingerprint(&self) -> u64 {
        of(self, |h| {
            if let Some(auth) = &self.auth {
                auth.credentials.expose().hash(h);
            }
            if let Some(tls) = &self.tls {
                tls.hash_material(h);
            }
        })
    }

    /// The fingerprint without the configured trees: equal when a reload
    /// changed only trees, which the running session can take up.
    pub fn session_fingerprint(&self) -> u64 {
        let mut bare = self.clone();
        bare.elections.clear();
        bare.groups.clear();
        bare.locks.clear();
        bare.fingerprint()
    }

    /// One fingerprint per configured tree, in the order the cluster's
    /// models hold them (elections, groups, locks).
    pub fn tree_fingerprints(&self) -> Vec<u64> {
        let e = self
            .elections
            .iter()
            .map(|t: &ElectionConfig| of(t, |_| ()));
        let g = self.groups.iter().map(|t: &GroupConfig| of(t, |_| ()));
        let l = self.locks.iter().map(|t: &LockConfig| of(t, |_| ()));
        e.chain(g).chain(l).collect()
    }
}

impl DiscoveryConfig {
    pub fn fingerprint(&self) -> u64 {
        of(self, |_| ())
    }
}
