//! How an election tree is configured: its identity, style and the
//! siblings a node election reads.

use super::super::candidate::IdentityMode;

/// How an election tree is read and exported.
#[derive(Debug, Clone)]
pub struct ElectionSpec {
    /// How a candidate's identity is read from its node.
    pub identity: IdentityMode,
    pub style: Style,
    /// Fewest candidates (master plus standbys) each election should have;
    /// exported as `zookeeper_election_min_candidates` so one alert rule
    /// covers every election, and absent (no alert) when not configured:
    /// exclusive designs keep only the master's node.
    pub min_candidates: Option<u32>,
    /// A sibling of the election node where the application writes who it
    /// believes is master (HDFS's `ActiveBreadCrumb` beside a node election,
    /// Solr's `leader` beside its sequential `election`), read with its own
    /// identity mode.
    pub record: Option<(String, IdentityMode)>,
    /// Overrides `alerting.no_master_for` for these elections.
    pub no_master_for: Option<std::time::Duration>,
    /// The set's availability objective, exported so that one set of
    /// burn-rate rules covers every set that has one.
    pub slo: Option<Slo>,
    /// The application's lease table, when one is read for these
    /// elections (the source's settings live in the configuration).
    pub lease: Option<crate::model::lease::LeaseSpec>,
}

/// An availability objective: the share of time each election of the set
/// has a master, over `window`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    pub availability: f64,
    pub window: std::time::Duration,
}

impl From<IdentityMode> for ElectionSpec {
    fn from(identity: IdentityMode) -> Self {
        Self {
            identity,
            style: Style::Sequential,
            min_candidates: None,
            record: None,
            no_master_for: None,
            slo: None,
            lease: None,
        }
    }
}

/// How an election's master is found (see the module doc).
#[derive(Debug, Clone)]
pub enum Style {
    Sequential,
    /// The election is one child of each node the tree matches.
    Node(NodeSpec),
}

impl Style {
    /// A node election of `name` with nothing else configured.
    pub fn node(name: impl Into<String>) -> Self {
        Style::Node(NodeSpec {
            name: name.into(),
            epoch: None,
            standbys: None,
        })
    }

    pub fn is_sequential(&self) -> bool {
        matches!(self, Style::Sequential)
    }
}

/// A node election: its node and the siblings that tell more about it.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// Name of the election node under each matched parent.
    pub name: String,
    /// A sibling holding the fencing epoch as an integer (Kafka's
    /// `controller_epoch`).
    pub epoch: Option<String>,
    /// A registry whose ephemeral children are the standbys; watched as a
    /// group tree of its own.
    pub standbys: Option<Standbys>,
}

/// Where a node election's standbys register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standbys {
    /// One registry for one election (Kafka's `/brokers/ids`).
    Registry(String),
    /// A sibling of each election's node (Patroni's `members` beside each
    /// scope's `leader`): every election of a glob has its own.
    Sibling(String),
}

impl Standbys {
    /// The registry of the election whose node is at `election`.
    pub fn registry_of(&self, election: &str) -> String {
        match self {
            Standbys::Registry(path) => path.clone(),
            Standbys::Sibling(name) => match election.rfind('/') {
                Some(0) | None => format!("/{name}"),
                Some(cut) => format!("{}/{name}", &election[..cut]),
            },
        }
    }
}
