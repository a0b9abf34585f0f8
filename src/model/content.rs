//! What a watched tree holds under each node matching its glob, behind one
//! trait: the tree feeds every content type the same events.

use std::collections::BTreeSet;

use super::child::ChildNode;
use super::now::Now;

/// The kinds of tree content; the `kind` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContentKind {
    Election,
    Group,
    Lock,
}

impl ContentKind {
    pub const ALL: [ContentKind; 3] = [Self::Election, Self::Group, Self::Lock];

    pub fn label(self) -> &'static str {
        match self {
            Self::Election => "election",
            Self::Group => "group",
            Self::Lock => "lock",
        }
    }
}

/// A content model: the matching nodes ("parents") and their children.
/// Events carry the time they were applied (`now`); models that keep no
/// history ignore it.
pub trait TreeContent {
    fn kind(&self) -> ContentKind;

    /// A full listing; `resync` when it follows an earlier one (changes
    /// since then count as joins and leaves). Parents it does not hold are
    /// gone.
    fn apply_listing(&mut self, listing: Vec<(String, Vec<ChildNode>)>, now: Now, resync: bool) {
        let listed: std::collections::HashSet<String> =
            listing.iter().map(|(p, _)| p.clone()).collect();
        self.apply_listing_part(listing, now, resync);
        self.retain_parents(&|p| listed.contains(p), now);
    }
    /// Part of a full listing (large trees are listed in slices, so the
    /// listing is never held whole); [`retain_parents`](Self::retain_parents)
    /// ends it.
    fn apply_listing_part(&mut self, part: Vec<(String, Vec<ChildNode>)>, now: Now, resync: bool);
    /// Drops every parent (matching node) for which `keep` is false.
    fn retain_parents(&mut self, keep: &dyn Fn(&str) -> bool, now: Now);
    /// A matching node appeared (or was found). No-op if known.
    fn parent_created(&mut self, path: &str, now: Now);
    fn parent_deleted(&mut self, path: &str, now: Now);
    /// A child of a matching node was created or its data changed.
    fn child_upserted(&mut self, parent: &str, child: ChildNode, now: Now);
    fn child_deleted(&mut self, parent: &str, name: &str, now: Now);

    /// Names of all known children of a matching node.
    fn child_names(&self, parent: &str) -> BTreeSet<String>;
    fn has_parent(&self, path: &str) -> bool;
    /// Matching nodes.
    fn parent_count(&self) -> usize;
    /// Its nodes, counted in one walk (a scrape needs all three, and at a
    /// million elections each walk is a tenth of a render).
    fn node_counts(&self) -> NodeCounts;
    /// Owner sessions of the tracked ephemeral children (one per node).
    fn owners(&self) -> Vec<i64>;
}

/// What a tree holds, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// Matching nodes plus all their children.
    pub nodes: usize,
    /// Ephemeral children.
    pub ephemeral: usize,
    /// Children the content does not track (neither candidates nor members).
    pub ignored: usize,
}

impl std::ops::Add for NodeCounts {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            nodes: self.nodes + o.nodes,
            ephemeral: self.ephemeral + o.ephemeral,
            ignored: self.ignored + o.ignored,
        }
    }
}

impl std::iter::Sum for NodeCounts {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |a, b| a + b)
    }
}
