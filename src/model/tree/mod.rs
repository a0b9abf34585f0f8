//! A watched tree: one glob, its sync state, and what it holds under each
//! matching node: elections ([`ElectionTree`]) or groups ([`GroupTree`]).
//!
//! The watcher feeds every tree the same way (listings, parent and child
//! events); what a tree holds is a [`TreeContent`], so the session code
//! never needs to know which kind it is following. A new election style is
//! one more content type and one more [`TreeKind`] variant.

use std::collections::BTreeSet;

use super::outer_record::OuterRecord;
pub use super::pattern::{PathKind, TreePattern, join};

pub use super::child::ChildNode;
use super::content::{ContentKind, TreeContent};
use super::election_tree::{ElectionSpec, ElectionTree, Style};
use super::groups::{GroupSpec, GroupTree};
use super::locks::{LockSpec, LockTree};
use super::now::Now;

/// What the matched nodes are.
#[derive(Debug, Clone)]
pub enum TreeKind {
    Elections(Box<ElectionTree>),
    Groups(GroupTree),
    Locks(LockTree),
}

/// Where a tree came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeSource {
    Configured,
    /// Found by the discovery walk from what its nodes look like: a guess,
    /// whose alerts never page.
    Discovered,
    /// A known system's layout (Kafka, HBase, HDFS, Solr) the discovery
    /// walk recognised: as good as configured.
    Recognised,
}

impl TreeSource {
    pub fn label(self) -> &'static str {
        match self {
            Self::Configured => "configured",
            Self::Discovered => "discovered",
            Self::Recognised => "recognised",
        }
    }
}

/// A tree's identity for as long as it is watched: what the session's
/// watches, the models' verbs and a reload's carry-over address it by,
/// instead of a position in a list that would have to stay in step
/// elsewhere (positions move when a discovered tree goes or a reload
/// changes the set; an id does not).
///
/// A configured tree's id comes from its configuration's fingerprint
/// ([`TreeId::configured`]): an unchanged tree keeps its id across a
/// reload, and so its model; a changed one is a new tree. A tree found by
/// discovery is known by its kind and glob ([`TreeId::found`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeId(u64);

impl TreeId {
    /// The `nth` configured tree (0 for the first) whose configuration has
    /// `fingerprint`: two identical entries are two trees.
    pub fn configured(fingerprint: u64, nth: usize) -> Self {
        Self(hash_of(&("configured", fingerprint, nth)))
    }

    /// A tree of `kind` over `pattern` from `source`: one discovery found
    /// (or one made in a test or by `simulate`).
    pub fn found(source: TreeSource, kind: ContentKind, pattern: &TreePattern) -> Self {
        Self(hash_of(&(source.label(), kind, pattern.as_str())))
    }
}

impl std::fmt::Display for TreeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

fn hash_of(value: &impl std::hash::Hash) -> u64 {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// Which persistent watches follow a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchScope {
    /// One recursive watch on this path: every event below it, in
    /// ZooKeeper's order.
    Recursive(String),
    /// One non-recursive watch on `parent`, on its election `node` and
    /// on each of its `siblings` the tree reads (the epoch). Each watch
    /// delivers its events in order, but not in order with the others':
    /// the parent's creation or deletion is therefore checked by a read,
    /// never applied as told.
    Nodes {
        parent: String,
        node: String,
        siblings: Vec<String>,
    },
}

/// One watched tree.
#[derive(Debug, Clone)]
pub struct Tree {
    id: TreeId,
    pattern: TreePattern,
    kind: TreeKind,
    source: TreeSource,
    synced: bool,
    /// The first full listing has been applied (later ones are resyncs).
    loaded: bool,
    sync_error: Option<String>,
    sync_failures: u64,
    /// Node events its watches delivered, whether they changed anything.
    watch_events: u64,
    /// Changes with every change of its content or sync state (see
    /// [`Tree::stamp`]).
    stamp: u64,
}

impl Tree {
    fn new(pattern: TreePattern, kind: TreeKind) -> Self {
        let content = match &kind {
            TreeKind::Elections(_) => ContentKind::Election,
            TreeKind::Groups(_) => ContentKind::Group,
            TreeKind::Locks(_) => ContentKind::Lock,
        };
        Self {
            id: TreeId::found(TreeSource::Configured, content, &pattern),
            pattern,
            kind,
            source: TreeSource::Configured,
            synced: false,
            loaded: false,
            sync_error: None,
            sync_failures: 0,
            watch_events: 0,
            stamp: super::journal::new_stamp(),
        }
    }

    /// A value that changes whenever the tree's content or sync state may
    /// have changed, and no other tree ever has: a reading of the tree
    /// taken at one stamp still holds while the stamp is the same, so an
    /// output that keeps it walks the tree again only after a change.
    /// Timeline entries taken, events counted and lock holds noted leave it.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    pub fn elections(pattern: TreePattern, spec: impl Into<ElectionSpec>) -> Self {
        Self::new(
            pattern,
            TreeKind::Elections(Box::new(ElectionTree::new(spec))),
        )
    }

    pub fn groups(pattern: TreePattern, spec: GroupSpec) -> Self {
        Self::new(pattern, TreeKind::Groups(GroupTree::new(spec)))
    }

    pub fn locks(pattern: TreePattern, spec: LockSpec) -> Self {
        Self::new(pattern, TreeKind::Locks(LockTree::new(spec)))
    }

    /// The tree as `source` found it; its id says so (see
    /// [`TreeId::found`]).
    pub fn with_source(mut self, source: TreeSource) -> Self {
        self.source = source;
        self.id = TreeId::found(source, self.content_kind(), &self.pattern);
        self
    }

    /// Gives the tree the id its configuration makes (see [`TreeId`]).
    pub fn with_id(mut self, id: TreeId) -> Self {
        self.id = id;
        self
    }

    pub fn id(&self) -> TreeId {
        self.id
    }

    pub fn pattern(&self) -> &TreePattern {
        &self.pattern
    }

    pub fn source(&self) -> TreeSource {
        self.source
    }

    pub fn kind(&self) -> &TreeKind {
        &self.kind
    }

    /// What the tree holds.
    pub fn content_kind(&self) -> ContentKind {
        self.content().kind()
    }

    fn content(&self) -> &dyn TreeContent {
        match &self.kind {
            TreeKind::Elections(e) => &**e,
            TreeKind::Groups(g) => g,
            TreeKind::Locks(l) => l,
        }
    }

    fn content_mut(&mut self) -> &mut dyn TreeContent {
        self.stamp = super::journal::new_stamp();
        match &mut self.kind {
            TreeKind::Elections(e) => &mut **e,
            TreeKind::Groups(g) => g,
            TreeKind::Locks(l) => l,
        }
    }

    /// Lock trees: records holds that passed `max_hold`.
    pub fn note_long_holds(&mut self, now: std::time::Instant) {
        if let TreeKind::Locks(l) = &mut self.kind {
            l.note_long_holds(now);
        }
    }

    /// When a hold of this lock tree passes `max_hold` next (see
    /// [`LockTree::next_long_hold`]); `None` for other trees.
    pub fn next_long_hold(&self) -> Option<std::time::Instant> {
        match &self.kind {
            TreeKind::Locks(l) => l.next_long_hold(),
            _ => None,
        }
    }

    /// Timeline entries of the tree since the last call.
    pub fn take_events(&mut self) -> Vec<(String, super::timeline::What)> {
        match &mut self.kind {
            TreeKind::Elections(e) => e.take_events(),
            TreeKind::Groups(g) => g.take_events(),
            TreeKind::Locks(l) => l.take_events(),
        }
    }

    /// Election trees with an `owner-*` identity: names candidates by
    /// their owner session's address (see [`ElectionTree::name_owners`]).
    pub fn name_owners<'a>(&mut self, address_of: impl Fn(i64) -> Option<&'a str>) {
        if let TreeKind::Elections(e) = &mut self.kind
            && e.name_owners(address_of)
        {
            self.stamp = super::journal::new_stamp();
        }
    }

    pub fn as_elections(&self) -> Option<&ElectionTree> {
        match &self.kind {
            TreeKind::Elections(e) => Some(e),
            _ => None,
        }
    }

    /// What the lease says of election `path` now, for the outputs: only
    /// while the tree reflects ZooKeeper (a stale master against a fresh
    /// lease would read as split brain) and the lease source reads.
    pub fn lease_verdict(
        &self,
        path: &str,
        election: &super::election::Election,
    ) -> Option<super::lease::Verdict> {
        if !self.synced() {
            return None;
        }
        self.as_elections()?.fresh_lease_verdict(path, election)
    }

    pub fn as_elections_mut(&mut self) -> Option<&mut ElectionTree> {
        self.stamp = super::journal::new_stamp();
        match &mut self.kind {
            TreeKind::Elections(e) => Some(e),
            _ => None,
        }
    }

    /// Where a sequential tree's elections keep their records, outside
    /// what the tree lists (see [`OuterRecord`]).
    pub fn outer_record(&self) -> Option<OuterRecord> {
        let spec = self.as_elections()?.spec();
        let (relative, _) = spec.record.as_ref()?;
        if !spec.style.is_sequential() {
            return None;
        }
        OuterRecord::new(self.pattern.clone(), relative)
    }

    /// Where the tree's recursive watch is placed: the glob's literal
    /// prefix, or the election's parent when an outer record must be seen.
    pub fn watch_root(&self) -> String {
        match self.outer_record() {
            Some(record) => record.watch_root(),
            None => self.pattern.root(),
        }
    }

    /// How the tree is watched. A node election with no `*` (Kafka's
    /// `/controller`, HBase's `/hbase/master`) watches its parent, its node
    /// and its epoch one by one: a recursive watch on the parent would
    /// deliver every event of everything beside it (for `/controller`, the
    /// whole chroot). Not with a record (HDFS's breadcrumb): a handover is
    /// timed from the node's deletion to the record's write, an order that
    /// only one watch keeps.
    pub fn watch_scope(&self) -> WatchScope {
        if let Some(spec) = self.as_elections().map(|e| e.spec())
            && let Style::Node(node) = &spec.style
            && self.pattern.is_single()
            && spec.record.is_none()
        {
            let parent = self.pattern.root();
            return WatchScope::Nodes {
                node: join(&parent, &node.name),
                siblings: node.epoch.iter().map(|e| join(&parent, e)).collect(),
                parent,
            };
        }
        WatchScope::Recursive(self.watch_root())
    }

    /// The record of sequential election `election` was read: its data
    /// and owner session, `None` when it does not exist.
    pub fn outer_record_read(&mut self, election: &str, read: Option<(&[u8], i64)>, now: Now) {
        self.stamp = super::journal::new_stamp();
        if let TreeKind::Elections(e) = &mut self.kind {
            e.outer_record_read(election, read, now);
        }
    }

    pub fn as_groups(&self) -> Option<&GroupTree> {
        match &self.kind {
            TreeKind::Groups(g) => Some(g),
            _ => None,
        }
    }

    pub fn as_locks(&self) -> Option<&LockTree> {
        match &self.kind {
            TreeKind::Locks(l) => Some(l),
            _ => None,
        }
    }

    /// Whether the tree reflects ZooKeeper right now. False from a disconnect
    /// until the resync after the reconnect; values stay, but are stale.
    pub fn synced(&self) -> bool {
        self.synced
    }

    /// Node events its watches delivered: what following it costs (a
    /// recursive watch on a busy subtree delivers events it reads no
    /// further).
    pub fn watch_events(&self) -> u64 {
        self.watch_events
    }

    /// `n` more events of its watches arrived.
    pub fn events_delivered(&mut self, n: u64) {
        self.watch_events += n;
    }

    /// Marks the tree stale (session lost); the last values are kept.
    pub fn mark_unsynced(&mut self) {
        self.stamp = super::journal::new_stamp();
        self.synced = false;
        self.restart_journal();
    }

    /// The tree's standing changed, not one election: readers that follow
    /// its journal read every election again.
    fn restart_journal(&mut self) {
        if let TreeKind::Elections(e) = &mut self.kind {
            e.restart_journal();
        }
    }

    /// A watch or listing of the tree failed; it stays unsynced until a
    /// later listing succeeds.
    pub fn sync_failed(&mut self, error: String) {
        self.stamp = super::journal::new_stamp();
        self.synced = false;
        self.sync_failures += 1;
        self.sync_error = Some(error);
        self.restart_journal();
    }

    /// Why the tree is not synced, if a listing failed.
    pub fn sync_error(&self) -> Option<&str> {
        self.sync_error.as_deref()
    }

    pub fn sync_failures(&self) -> u64 {
        self.sync_failures
    }

    /// Applies a full listing: every matching node with its children. The
    /// first loads; later ones (resyncs) count what changed meanwhile.
    pub fn apply_listing(&mut self, listing: Vec<(String, Vec<ChildNode>)>, now: Now) {
        let resync = self.loaded;
        self.content_mut().apply_listing(listing, now, resync);
        self.listing_done();
    }

    /// Part of a full listing, which [`finish_listing`](Self::finish_listing)
    /// ends: a tree of a million elections is listed in slices, never held
    /// whole.
    pub fn apply_listing_part(&mut self, part: Vec<(String, Vec<ChildNode>)>, now: Now) {
        let resync = self.loaded;
        self.content_mut().apply_listing_part(part, now, resync);
    }

    /// Ends a listing given in parts: parents for which `listed` is false
    /// are gone.
    pub fn finish_listing(&mut self, listed: &dyn Fn(&str) -> bool, now: Now) {
        self.content_mut().retain_parents(listed, now);
        self.listing_done();
    }

    fn listing_done(&mut self) {
        self.stamp = super::journal::new_stamp();
        self.loaded = true;
        self.synced = true;
        self.sync_error = None;
        self.restart_journal();
    }

    /// A node matching the glob was created (or found). No-op if known.
    pub fn parent_created(&mut self, path: &str, now: Now) {
        self.content_mut().parent_created(path, now);
    }

    pub fn parent_deleted(&mut self, path: &str, now: Now) {
        self.content_mut().parent_deleted(path, now);
    }

    /// A child of a matching node was created or its data changed.
    pub fn child_upserted(&mut self, parent: &str, child: ChildNode, now: Now) {
        self.content_mut().child_upserted(parent, child, now);
    }

    pub fn child_deleted(&mut self, parent: &str, name: &str, now: Now) {
        self.content_mut().child_deleted(parent, name, now);
    }

    /// Names of all known children of a matching node.
    pub fn child_names(&self, parent: &str) -> BTreeSet<String> {
        self.content().child_names(parent)
    }

    pub fn has_parent(&self, path: &str) -> bool {
        self.content().has_parent(path)
    }

    /// Matching nodes (elections or groups).
    pub fn parent_count(&self) -> usize {
        self.content().parent_count()
    }

    /// Its nodes, ephemeral children and ignored children, in one walk.
    pub fn node_counts(&self) -> super::content::NodeCounts {
        self.content().node_counts()
    }

    /// Owner sessions of the tracked ephemeral children (one per node).
    pub fn owners(&self) -> Vec<i64> {
        self.content().owners()
    }

    /// Each owner session of the tracked ephemeral children, and how many
    /// it owns: kept as they change for elections, counted for groups and
    /// locks (bounded by `max_groups` and `max_locks`).
    pub fn owner_counts(&self) -> Vec<(i64, usize)> {
        match &self.kind {
            TreeKind::Elections(e) => e.owner_counts().collect(),
            _ => {
                let mut counts = std::collections::HashMap::new();
                for owner in self.owners() {
                    *counts.entry(owner).or_insert(0) += 1;
                }
                counts.into_iter().collect()
            }
        }
    }
}

#[cfg(test)]
mod tests;
