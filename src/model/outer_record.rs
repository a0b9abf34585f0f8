//! Where a sequential election's record lives: beside the election node
//! (Solr's `overseer_elect/leader` beside `overseer_elect/election`) or
//! below a sibling of it (Flink's `leader/rest_server/connection_info`
//! beside `leader/latch`), so outside what the tree lists. A glob of
//! elections has one record per election, at the same place relative to
//! each; the election's node must then be named literally, so that a
//! record's path tells its election.

use super::pattern::{PathKind, TreePattern, join};

/// The record of each election a sequential glob matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OuterRecord {
    /// The elections' glob.
    pattern: TreePattern,
    /// The election node's name (its glob's last segment), or `None` when
    /// it is `*` (a single election only).
    election_name: Option<String>,
    /// The record's path from the election's parent (`leader`,
    /// `rest_server/connection_info`).
    relative: String,
}

impl OuterRecord {
    /// The record at `relative` from the parent of each election of
    /// `pattern`; `None` for a glob whose last segment is `*` (no path
    /// could tell which election a record belongs to).
    pub fn new(pattern: TreePattern, relative: &str) -> Option<Self> {
        let election_name = pattern.segments().last().cloned().flatten();
        if election_name.is_none() && !pattern.is_single() {
            return None;
        }
        Some(Self {
            pattern,
            election_name,
            relative: relative.trim_matches('/').to_owned(),
        })
    }

    /// The record of election `election`.
    pub fn record_of(&self, election: &str) -> String {
        join(parent_of(election), &self.relative)
    }

    /// The election whose record is at `path`, if `path` is one.
    pub fn election_of(&self, path: &str) -> Option<String> {
        if self.pattern.is_single() {
            let election = self.pattern.as_str();
            return (self.record_of(election) == path).then(|| election.to_owned());
        }
        let parent = path.strip_suffix(&self.relative)?.strip_suffix('/')?;
        let name = self.election_name.as_deref()?;
        let election = match parent {
            "" => format!("/{name}"),
            p => format!("{p}/{name}"),
        };
        (self.pattern.classify(&election) == PathKind::Parent).then_some(election)
    }

    /// Where a recursive watch must be placed to see every record: the
    /// glob's root covers the records of a glob (its elections' parents
    /// are at or below it); a single election's parent covers its record.
    pub fn watch_root(&self) -> String {
        if self.pattern.is_single() {
            parent_of(self.pattern.as_str()).to_owned()
        } else {
            self.pattern.root()
        }
    }
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(cut) => &path[..cut],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(glob: &str, relative: &str) -> OuterRecord {
        OuterRecord::new(TreePattern::parse(glob).unwrap(), relative).unwrap()
    }

    #[test]
    fn a_single_elections_record_beside_it() {
        let r = record("/solr/overseer_elect/election", "leader");
        let e = "/solr/overseer_elect/election";
        assert_eq!(r.record_of(e), "/solr/overseer_elect/leader");
        assert_eq!(
            r.election_of("/solr/overseer_elect/leader").as_deref(),
            Some(e)
        );
        assert_eq!(r.election_of("/solr/overseer_elect/other"), None);
        assert_eq!(r.watch_root(), "/solr/overseer_elect");
        let top = record("/election", "leader");
        assert_eq!(top.record_of("/election"), "/leader");
        assert_eq!(top.watch_root(), "/");
    }

    #[test]
    fn every_elections_record_below_a_sibling() {
        let r = record("/flink/*/leader/latch", "rest_server/connection_info");
        assert_eq!(
            r.record_of("/flink/default/leader/latch"),
            "/flink/default/leader/rest_server/connection_info"
        );
        assert_eq!(
            r.election_of("/flink/app-1/leader/rest_server/connection_info")
                .as_deref(),
            Some("/flink/app-1/leader/latch")
        );
        for foreign in [
            "/flink/app-1/leader/dispatcher/connection_info",
            "/flink/a/b/leader/rest_server/connection_info",
            "/other/app-1/leader/rest_server/connection_info",
            "rest_server/connection_info",
        ] {
            assert_eq!(r.election_of(foreign), None, "{foreign}");
        }
        assert_eq!(r.watch_root(), "/flink");
    }

    #[test]
    fn a_glob_ending_in_a_star_has_no_record() {
        assert!(OuterRecord::new(TreePattern::parse("/bots/*").unwrap(), "leader").is_none());
        assert!(OuterRecord::new(TreePattern::parse("/a/*/e").unwrap(), "leader").is_some());
    }
}
