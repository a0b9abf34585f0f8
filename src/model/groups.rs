//! Membership trees (service registries, online agents): every node matched
//! by a glob is a group, and each of its ephemeral children is one live
//! member. Unlike elections there is no order and no master; what matters
//! is how many members are alive, which, and how often they come and go.

use super::timeline::{Master, What};
use std::collections::{BTreeMap, BTreeSet};

use super::candidate::IdentityMode;
use super::child::ChildNode;
use super::content::{ContentKind, NodeCounts, TreeContent};
use super::now::Now;

/// How a group tree is read and exported.
#[derive(Debug, Clone)]
pub struct GroupSpec {
    /// Member name: from the node name (default), data, JSON or regex.
    pub member: IdentityMode,
    /// Exported as `zookeeper_group_min_members` so one alert rule covers
    /// every group.
    pub min_members: Option<u32>,
    /// Export one series per member (`zookeeper_group_member`).
    pub export_members: bool,
    /// Members are persistent nodes that are live while a child of this
    /// name exists (ClickHouse's `replicas/<name>/is_active`): the child
    /// stands for the member, its owner session is the member's.
    pub alive: Option<String>,
}

impl GroupSpec {
    /// How a discovered group is followed: members by node name, no
    /// minimum, no per-member series.
    pub fn discovered() -> Self {
        Self {
            member: IdentityMode::Node,
            min_members: None,
            export_members: false,
            alive: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    name: String,
    /// Session owning the node: a new owner under the same node name is an
    /// instance that restarted (a leave and a join).
    owner: i64,
}

/// One group: its live members and the joins and leaves seen.
#[derive(Debug, Clone, Default)]
pub struct Group {
    members: BTreeMap<String, Member>,
    /// Persistent children: not members, counted as ignored.
    ignored: BTreeSet<String>,
    joins: u64,
    leaves: u64,
}

impl Group {
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn joins(&self) -> u64 {
        self.joins
    }

    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// Member names in node order.
    pub fn member_names(&self) -> impl Iterator<Item = &str> {
        self.members.values().map(|m| m.name.as_str())
    }

    /// Adds or refreshes a member; counts a join when the node is new or
    /// changed owner (and a leave for the previous owner).
    /// Returns the counted change: who left (a previous owner) and who
    /// joined, for the timeline.
    fn upsert(
        &mut self,
        node: String,
        member: Member,
        count: bool,
    ) -> (Option<Member>, Option<Member>) {
        match self.members.insert(node, member.clone()) {
            None if count => {
                self.joins += 1;
                (None, Some(member))
            }
            Some(old) if count && old.owner != member.owner => {
                self.leaves += 1;
                self.joins += 1;
                (Some(old), Some(member))
            }
            _ => (None, None),
        }
    }

    /// Returns the counted member that left.
    fn remove(&mut self, node: &str, count: bool) -> Option<Member> {
        self.ignored.remove(node);
        let gone = self.members.remove(node).filter(|_| count)?;
        self.leaves += 1;
        Some(gone)
    }
}

/// All groups under one glob.
#[derive(Debug, Clone)]
pub struct GroupTree {
    spec: GroupSpec,
    groups: BTreeMap<String, Group>,
    /// Timeline entries not yet taken (groups that export members only).
    events: Vec<(String, What)>,
}

impl GroupTree {
    pub fn new(spec: GroupSpec) -> Self {
        Self {
            spec,
            groups: BTreeMap::new(),
            events: Vec::new(),
        }
    }

    /// Timeline entries since the last call.
    pub fn take_events(&mut self) -> Vec<(String, What)> {
        std::mem::take(&mut self.events)
    }

    /// Records a counted change of `group` when members are exported.
    fn changed(&mut self, group: &str, left: Option<Member>, joined: Option<Member>) {
        if !self.spec.export_members {
            return;
        }
        let named = |m: Member| Master {
            node: m.name.clone(),
            identity: m.name,
            owner: m.owner,
        };
        if let Some(m) = left {
            let what = What::MemberLeft { member: named(m) };
            self.events.push((group.to_owned(), what));
        }
        if let Some(m) = joined {
            let what = What::MemberJoined { member: named(m) };
            self.events.push((group.to_owned(), what));
        }
    }

    pub fn spec(&self) -> &GroupSpec {
        &self.spec
    }

    fn member(&self, child: &ChildNode) -> Option<Member> {
        (child.ephemeral_owner != 0).then(|| Member {
            name: self.spec.member.extract(&child.name, &child.data),
            owner: child.ephemeral_owner,
        })
    }

    /// Groups by path, in path order.
    pub fn groups(&self) -> impl Iterator<Item = (&str, &Group)> {
        self.groups.iter().map(|(p, g)| (p.as_str(), g))
    }

    pub fn group(&self, path: &str) -> Option<&Group> {
        self.groups.get(path)
    }
}

impl TreeContent for GroupTree {
    fn kind(&self) -> ContentKind {
        ContentKind::Group
    }

    /// Applies a full listing. The first (`resync` false) loads without
    /// counting; later ones count joins and leaves of the outage once.
    fn apply_listing_part(
        &mut self,
        listing: Vec<(String, Vec<ChildNode>)>,
        _now: Now,
        resync: bool,
    ) {
        for (path, children) in listing {
            let live: BTreeMap<String, Option<Member>> = children
                .iter()
                .map(|c| (c.name.clone(), self.member(c)))
                .collect();
            let group = self.groups.entry(path.clone()).or_default();
            let gone: Vec<String> = group
                .members
                .keys()
                .filter(|n| !matches!(live.get(*n), Some(Some(_))))
                .cloned()
                .collect();
            let mut changes = Vec::new();
            for node in gone {
                changes.push((group.remove(&node, resync), None));
            }
            group.ignored.clear();
            for (node, member) in live {
                match member {
                    Some(m) => changes.push(group.upsert(node, m, resync)),
                    None => {
                        group.ignored.insert(node);
                    }
                }
            }
            for (left, joined) in changes {
                self.changed(&path, left, joined);
            }
        }
    }

    fn retain_parents(&mut self, keep: &dyn Fn(&str) -> bool, _now: Now) {
        self.groups.retain(|path, _| keep(path));
    }

    fn parent_created(&mut self, path: &str, _now: Now) {
        self.groups.entry(path.to_owned()).or_default();
    }

    fn parent_deleted(&mut self, path: &str, _now: Now) {
        self.groups.remove(path);
    }

    fn child_upserted(&mut self, parent: &str, child: ChildNode, _now: Now) {
        let member = self.member(&child);
        let group = self.groups.entry(parent.to_owned()).or_default();
        match member {
            Some(m) => {
                let (left, joined) = group.upsert(child.name, m, true);
                self.changed(parent, left, joined);
            }
            None => {
                group.ignored.insert(child.name);
            }
        }
    }

    fn child_deleted(&mut self, parent: &str, name: &str, _now: Now) {
        if let Some(group) = self.groups.get_mut(parent) {
            let left = group.remove(name, true);
            self.changed(parent, left, None);
        }
    }

    fn child_names(&self, parent: &str) -> BTreeSet<String> {
        self.groups
            .get(parent)
            .map(|g| g.members.keys().chain(g.ignored.iter()).cloned().collect())
            .unwrap_or_default()
    }

    fn has_parent(&self, path: &str) -> bool {
        self.groups.contains_key(path)
    }

    fn parent_count(&self) -> usize {
        self.groups.len()
    }

    fn node_counts(&self) -> NodeCounts {
        self.groups
            .values()
            .map(|g| NodeCounts {
                nodes: 1 + g.members.len() + g.ignored.len(),
                ephemeral: g.members.len(),
                ignored: g.ignored.len(),
            })
            .sum()
    }

    /// Owner sessions of every member.
    fn owners(&self) -> Vec<i64> {
        self.groups
            .values()
            .flat_map(|g| g.members.values().map(|m| m.owner))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Instant, SystemTime};

    fn node(name: &str, owner: i64, data: &str) -> ChildNode {
        ChildNode {
            name: name.into(),
            data: data.as_bytes().to_vec(),
            ephemeral_owner: owner,
            ctime_ms: 0,
        }
    }

    fn now() -> Now {
        Now {
            mono: Instant::now(),
            wall: SystemTime::UNIX_EPOCH,
        }
    }

    fn tree(member: IdentityMode) -> GroupTree {
        GroupTree::new(GroupSpec {
            member,
            min_members: Some(2),
            export_members: true,
            alive: None,
        })
    }

    #[test]
    fn members_join_and_leave() {
        let mut t = tree(IdentityMode::Node);
        t.apply_listing(
            vec![(
                "/p/services/api".into(),
                vec![node("10.0.0.1:80", 1, ""), node("conf", 0, "")],
            )],
            now(),
            false,
        );
        let g = t.group("/p/services/api").unwrap();
        assert_eq!(
            (g.len(), g.joins(), g.leaves()),
            (1, 0, 0),
            "loading counts nothing"
        );
        assert_eq!(t.node_counts().ignored, 1);
        t.child_upserted("/p/services/api", node("10.0.0.2:80", 2, ""), now());
        t.child_deleted("/p/services/api", "10.0.0.1:80", now());
        let g = t.group("/p/services/api").unwrap();
        assert_eq!((g.len(), g.joins(), g.leaves()), (1, 1, 1));
        assert_eq!(g.member_names().collect::<Vec<_>>(), vec!["10.0.0.2:80"]);
    }

    #[test]
    fn a_restart_under_the_same_name_is_a_leave_and_a_join() {
        let mut t = tree(IdentityMode::Node);
        t.apply_listing(vec![("/g".into(), vec![node("a", 1, "")])], now(), false);
        // Seen live: a new session re-created the node.
        t.child_upserted("/g", node("a", 2, ""), now());
        assert_eq!(
            (
                t.group("/g").unwrap().joins(),
                t.group("/g").unwrap().leaves()
            ),
            (1, 1)
        );
        // Seen only at a resync after an outage: the same.
        t.apply_listing(vec![("/g".into(), vec![node("a", 3, "")])], now(), true);
        assert_eq!(
            (
                t.group("/g").unwrap().joins(),
                t.group("/g").unwrap().leaves()
            ),
            (2, 2)
        );
        // A data change by the same session is neither.
        t.child_upserted("/g", node("a", 3, "new data"), now());
        assert_eq!(t.group("/g").unwrap().joins(), 2);
    }

    #[test]
    fn member_names_from_json() {
        let mut t = tree(IdentityMode::parse("json:/host").unwrap());
        t.apply_listing(
            vec![("/g".into(), vec![node("m1", 1, r#"{"host":"web-1"}"#)])],
            now(),
            false,
        );
        assert_eq!(
            t.group("/g").unwrap().member_names().collect::<Vec<_>>(),
            vec!["web-1"]
        );
    }

    #[test]
    fn resync_counts_outage_changes_and_drops_vanished_groups() {
        let mut t = tree(IdentityMode::Node);
        t.apply_listing(
            vec![
                ("/g".into(), vec![node("a", 1, ""), node("b", 1, "")]),
                ("/gone".into(), vec![]),
            ],
            now(),
            false,
        );
        t.apply_listing(
            vec![
                ("/g".into(), vec![node("b", 1, ""), node("c", 2, "")]),
                ("/new".into(), vec![node("x", 3, "")]),
            ],
            now(),
            true,
        );
        let g = t.group("/g").unwrap();
        assert_eq!((g.len(), g.joins(), g.leaves()), (2, 1, 1));
        assert_eq!(
            t.group("/new").unwrap().joins(),
            1,
            "members of a group found at resync joined during the outage"
        );
        assert!(t.group("/gone").is_none());
    }
}
