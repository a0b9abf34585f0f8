//! An election tree: every election matched by one configured glob, plus the
//! per-tree figures (node counts, masterless histogram, sync state).
//!
//! The watcher turns ZooKeeper events into calls on [`ElectionTree`]; the
//! tree decides, from the path alone, whether an event concerns an election,
//! a candidate or nothing it tracks.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use super::candidate::{IdentityMode, parse_sequence};
use super::election::{Candidate, Election, Now};
use super::histogram::{Histogram, PERIOD_BUCKETS};

/// A glob over ZooKeeper paths where `*` matches exactly one path segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreePattern {
    text: String,
    segments: Vec<Option<String>>,
    literal_prefix: usize,
}

/// What a path is to a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathKind<'a> {
    /// The path matches the pattern: an election node.
    Election,
    /// A direct child of an election node.
    Child { election: &'a str, name: &'a str },
    /// Anything else (ancestors, deeper nodes, unrelated branches).
    Other,
}

impl TreePattern {
    /// Parses `/a/*/b`-style globs; `*` must be a whole segment.
    pub fn parse(text: &str) -> Result<Self, String> {
        if !text.starts_with('/') {
            return Err(format!(
                "`{text}` must be an absolute path starting with `/`"
            ));
        }
        if text == "/" {
            return Err("`/` cannot be an election; use `/*` for every top-level node".into());
        }
        if text.ends_with('/') {
            return Err(format!("`{text}` must not end with `/`"));
        }
        let mut segments = Vec::new();
        for segment in text[1..].split('/') {
            match segment {
                "" => return Err(format!("`{text}` has an empty path segment (`//`)")),
                "*" => segments.push(None),
                "." | ".." => {
                    return Err(format!(
                        "`{text}`: `{segment}` is not allowed in ZooKeeper paths"
                    ));
                }
                s if s.contains(['*', '?', '[', ']', '{', '}']) => {
                    return Err(format!(
                        "`{text}`: segment `{s}` mixes glob characters with text; only a whole-segment `*` is supported"
                    ));
                }
                s => segments.push(Some(s.to_owned())),
            }
        }
        let literal_prefix = segments.iter().take_while(|s| s.is_some()).count();
        Ok(Self {
            text: text.to_owned(),
            segments,
            literal_prefix,
        })
    }

    /// The pattern as configured; used as the `tree` label.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The literal prefix of the glob: where the recursive watch is placed.
    pub fn root(&self) -> String {
        if self.literal_prefix == 0 {
            return "/".into();
        }
        let mut root = String::new();
        for s in self.segments[..self.literal_prefix].iter().flatten() {
            root.push('/');
            root.push_str(s);
        }
        root
    }

    /// All segments of the glob: `None` means "every child".
    pub fn segments(&self) -> &[Option<String>] {
        &self.segments
    }

    /// Segments below the root, for walking the tree level by level: `None`
    /// means "every child".
    pub fn segments_below_root(&self) -> &[Option<String>] {
        &self.segments[self.literal_prefix..]
    }

    fn matches_segments(&self, segments: &[&str]) -> bool {
        segments.len() == self.segments.len()
            && self
                .segments
                .iter()
                .zip(segments)
                .all(|(p, s)| p.as_deref().is_none_or(|p| p == *s))
    }

    /// Classifies an absolute path (relative to the chroot).
    pub fn classify<'a>(&self, path: &'a str) -> PathKind<'a> {
        let Some(rest) = path.strip_prefix('/') else {
            return PathKind::Other;
        };
        let segments: Vec<&str> = rest.split('/').collect();
        if self.matches_segments(&segments) {
            return PathKind::Election;
        }
        if segments.len() == self.segments.len() + 1
            && self.matches_segments(&segments[..self.segments.len()])
        {
            let cut = path.rfind('/').unwrap_or(0);
            return PathKind::Child {
                election: &path[..cut],
                name: &path[cut + 1..],
            };
        }
        PathKind::Other
    }
}

/// A child node as read from ZooKeeper: name, data and the stat fields used.
#[derive(Debug, Clone)]
pub struct ChildNode {
    pub name: String,
    pub data: Vec<u8>,
    pub ephemeral_owner: i64,
    /// Creation time in milliseconds since the epoch.
    pub ctime_ms: i64,
}

/// Children of one election that carry no sequence suffix; not candidates,
/// but counted so a misconfigured glob is visible.
#[derive(Debug, Clone, Default)]
struct Others {
    ephemeral: BTreeSet<String>,
    persistent: BTreeSet<String>,
}

impl Others {
    fn len(&self) -> usize {
        self.ephemeral.len() + self.persistent.len()
    }
    fn remove(&mut self, name: &str) {
        self.ephemeral.remove(name);
        self.persistent.remove(name);
    }
}

#[derive(Debug, Clone)]
struct Entry {
    election: Election,
    others: Others,
}

/// All elections under one glob.
#[derive(Debug, Clone)]
pub struct ElectionTree {
    pattern: TreePattern,
    identity: IdentityMode,
    elections: BTreeMap<String, Entry>,
    synced: bool,
    /// The first full listing has been applied (later ones are resyncs).
    loaded: bool,
    masterless: Histogram,
    sync_error: Option<String>,
    sync_failures: u64,
}

impl ElectionTree {
    pub fn new(pattern: TreePattern, identity: IdentityMode) -> Self {
        Self {
            pattern,
            identity,
            elections: BTreeMap::new(),
            synced: false,
            loaded: false,
            masterless: Histogram::new(PERIOD_BUCKETS),
            sync_error: None,
            sync_failures: 0,
        }
    }

    /// A watch or listing of the tree failed; it stays unsynced until a
    /// later listing succeeds.
    pub fn sync_failed(&mut self, error: String) {
        self.synced = false;
        self.sync_failures += 1;
        self.sync_error = Some(error);
    }

    /// Why the tree is not synced, if a listing failed.
    pub fn sync_error(&self) -> Option<&str> {
        self.sync_error.as_deref()
    }

    pub fn sync_failures(&self) -> u64 {
        self.sync_failures
    }

    pub fn pattern(&self) -> &TreePattern {
        &self.pattern
    }

    /// Whether the tree reflects ZooKeeper right now. False from a disconnect
    /// until the resync after the reconnect; values stay, but are stale.
    pub fn synced(&self) -> bool {
        self.synced
    }

    /// Marks the tree stale (session lost); the last values are kept.
    pub fn mark_unsynced(&mut self) {
        self.synced = false;
    }

    fn candidate(&self, child: &ChildNode) -> Option<Candidate> {
        let sequence = parse_sequence(&child.name)?;
        Some(Candidate {
            identity: self.identity.extract(&child.name, &child.data),
            name: child.name.clone(),
            sequence,
            ephemeral: child.ephemeral_owner != 0,
            ctime: SystemTime::UNIX_EPOCH
                + Duration::from_millis(u64::try_from(child.ctime_ms).unwrap_or(0)),
        })
    }

    fn split(&self, children: Vec<ChildNode>) -> (Vec<Candidate>, Others) {
        let mut candidates = Vec::with_capacity(children.len());
        let mut others = Others::default();
        for child in children {
            match self.candidate(&child) {
                Some(c) => candidates.push(c),
                None if child.ephemeral_owner != 0 => {
                    others.ephemeral.insert(child.name);
                }
                None => {
                    others.persistent.insert(child.name);
                }
            }
        }
        (candidates, others)
    }

    fn record(&mut self, outcome: super::election::Outcome) {
        if let Some(lasted) = outcome.masterless_ended {
            self.masterless.observe(lasted.as_secs_f64());
        }
    }

    /// Applies a full listing: every election that exists with its children.
    ///
    /// The first listing only loads state. Later ones (after a reconnect)
    /// count what changed during the outage, exactly once.
    pub fn apply_listing(&mut self, listing: Vec<(String, Vec<ChildNode>)>, now: Now) {
        let mut seen = BTreeSet::new();
        for (path, children) in listing {
            let (candidates, others) = self.split(children);
            seen.insert(path.clone());
            match self.elections.get_mut(&path) {
                Some(entry) => {
                    entry.others = others;
                    let outcome = entry.election.resync(candidates, now);
                    self.record(outcome);
                }
                None => {
                    let election = if self.loaded {
                        // Appeared during the outage: its candidates joined then.
                        let mut e = Election::new([], now);
                        // No masterless period of ours ends here.
                        let _ = e.resync(candidates, now);
                        e
                    } else {
                        Election::new(candidates, now)
                    };
                    self.elections.insert(path, Entry { election, others });
                }
            }
        }
        self.elections.retain(|path, _| seen.contains(path));
        self.loaded = true;
        self.synced = true;
        self.sync_error = None;
    }

    /// A node matching the glob was created (or found). No-op if known.
    pub fn election_created(&mut self, path: &str, now: Now) {
        if !self.elections.contains_key(path) {
            self.elections.insert(
                path.to_owned(),
                Entry {
                    election: Election::new([], now),
                    others: Others::default(),
                },
            );
        }
    }

    /// An election node was deleted; its state and any running masterless
    /// period are dropped with it.
    pub fn election_deleted(&mut self, path: &str) {
        self.elections.remove(path);
    }

    /// A child of an election was created or its data changed.
    pub fn child_upserted(&mut self, election: &str, child: ChildNode, now: Now) {
        if !self.elections.contains_key(election) {
            self.election_created(election, now);
        }
        let candidate = self.candidate(&child);
        let Some(entry) = self.elections.get_mut(election) else {
            return;
        };
        match candidate {
            Some(c) => {
                let outcome = entry.election.join(c, now);
                self.record(outcome);
            }
            None if child.ephemeral_owner != 0 => {
                entry.others.ephemeral.insert(child.name);
            }
            None => {
                entry.others.persistent.insert(child.name);
            }
        }
    }

    /// A child of an election was deleted.
    pub fn child_deleted(&mut self, election: &str, name: &str, now: Now) {
        let Some(entry) = self.elections.get_mut(election) else {
            return;
        };
        match parse_sequence(name) {
            Some(seq) => {
                let outcome = entry.election.leave(name, seq, now);
                self.record(outcome);
            }
            None => entry.others.remove(name),
        }
    }

    /// Elections by path, in path order.
    pub fn elections(&self) -> impl Iterator<Item = (&str, &Election)> {
        self.elections
            .iter()
            .map(|(p, e)| (p.as_str(), &e.election))
    }

    pub fn election(&self, path: &str) -> Option<&Election> {
        self.elections.get(path).map(|e| &e.election)
    }

    /// Names of all children of an election (candidates and ignored ones).
    pub fn child_names(&self, election: &str) -> BTreeSet<String> {
        self.elections
            .get(election)
            .map(|e| {
                e.election
                    .candidates()
                    .map(|(_, name, _)| name.to_owned())
                    .chain(e.others.ephemeral.iter().cloned())
                    .chain(e.others.persistent.iter().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn election_count(&self) -> usize {
        self.elections.len()
    }

    /// Election nodes plus all their children.
    pub fn node_count(&self) -> usize {
        self.elections
            .values()
            .map(|e| 1 + e.election.candidate_count() + e.others.len())
            .sum()
    }

    /// Ephemeral children (candidates or not) across all elections.
    pub fn ephemeral_count(&self) -> usize {
        self.elections
            .values()
            .map(|e| e.election.ephemeral_count() + e.others.ephemeral.len())
            .sum()
    }

    /// Children that are not candidates because they have no sequence suffix.
    pub fn ignored_count(&self) -> usize {
        self.elections.values().map(|e| e.others.len()).sum()
    }

    pub fn masterless_histogram(&self) -> &Histogram {
        &self.masterless
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn patterns_parse_and_name_their_root() {
        let p = TreePattern::parse("/wechat/bots/*").unwrap();
        assert_eq!(p.root(), "/wechat/bots");
        assert_eq!(TreePattern::parse("/*").unwrap().root(), "/");
        assert_eq!(TreePattern::parse("/a/*/b/*").unwrap().root(), "/a");
        assert_eq!(TreePattern::parse("/leader").unwrap().root(), "/leader");
        for bad in [
            "", "a/b", "/", "/a/", "/a//b", "/a/**", "/a/b*", "/a/../b", "/a/[ab]",
        ] {
            assert!(TreePattern::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn classify_paths() {
        let p = TreePattern::parse("/a/*/b/*").unwrap();
        assert_eq!(p.classify("/a/x/b/e1"), PathKind::Election);
        assert_eq!(
            p.classify("/a/x/b/e1/c_0000000001"),
            PathKind::Child {
                election: "/a/x/b/e1",
                name: "c_0000000001"
            }
        );
        assert_eq!(p.classify("/a/x/b"), PathKind::Other);
        assert_eq!(p.classify("/a/x/c/e1"), PathKind::Other);
        assert_eq!(p.classify("/a/x/b/e1/c/d"), PathKind::Other);
        assert_eq!(p.classify("relative"), PathKind::Other);
        let single = TreePattern::parse("/leader").unwrap();
        assert_eq!(single.classify("/leader"), PathKind::Election);
        assert!(matches!(
            single.classify("/leader/n_0000000001"),
            PathKind::Child { .. }
        ));
    }

    fn child(name: &str, ephemeral: bool) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: name.as_bytes().to_vec(),
            ephemeral_owner: i64::from(ephemeral),
            ctime_ms: 1_700_000_000_000,
        }
    }

    fn now(base: Instant, s: u64) -> Now {
        Now {
            mono: base + Duration::from_secs(s),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(s),
        }
    }

    #[test]
    fn counts_and_ignored_children() {
        let t = Instant::now();
        let mut tree =
            ElectionTree::new(TreePattern::parse("/bots/*").unwrap(), IdentityMode::Data);
        assert!(!tree.synced());
        tree.apply_listing(
            vec![
                (
                    "/bots/b1".into(),
                    vec![
                        child("i_0000000001", true),
                        child("i_0000000002", true),
                        child("config", false),
                    ],
                ),
                ("/bots/b2".into(), vec![]),
            ],
            now(t, 0),
        );
        assert!(tree.synced());
        assert_eq!(tree.election_count(), 2);
        assert_eq!(tree.node_count(), 5);
        assert_eq!(tree.ephemeral_count(), 2);
        assert_eq!(tree.ignored_count(), 1);
        tree.child_upserted("/bots/b2", child("i_0000000001", true), now(t, 3));
        assert_eq!(tree.masterless_histogram().count(), 1);
        assert_eq!(tree.masterless_histogram().sum(), 3.0);
        tree.child_deleted("/bots/b1", "config", now(t, 4));
        assert_eq!(tree.ignored_count(), 0);
        tree.child_deleted("/bots/b2", "i_0000000001", now(t, 5));
        tree.election_deleted("/bots/b2");
        assert_eq!(tree.election_count(), 1);
    }

    #[test]
    fn resync_listing_counts_changes_and_drops_vanished_elections() {
        let t = Instant::now();
        let mut tree =
            ElectionTree::new(TreePattern::parse("/bots/*").unwrap(), IdentityMode::Node);
        tree.apply_listing(
            vec![
                ("/bots/b1".into(), vec![child("i_0000000001", true)]),
                ("/bots/gone".into(), vec![]),
            ],
            now(t, 0),
        );
        tree.mark_unsynced();
        assert!(!tree.synced());
        tree.apply_listing(
            vec![
                ("/bots/b1".into(), vec![child("i_0000000002", true)]),
                ("/bots/new".into(), vec![child("i_0000000005", true)]),
            ],
            now(t, 10),
        );
        assert!(tree.synced());
        let b1 = tree.election("/bots/b1").unwrap();
        assert_eq!((b1.changes(), b1.joins(), b1.leaves()), (1, 1, 1));
        let new = tree.election("/bots/new").unwrap();
        assert_eq!((new.changes(), new.joins()), (0, 1));
        assert!(tree.election("/bots/gone").is_none());
    }
}
