//! Globs over ZooKeeper paths: which nodes are elections (or groups), which
//! are their children, and where the recursive watch goes.

/// A glob over ZooKeeper paths where `*` matches exactly one path segment,
/// minus the paths its exclusions name.
/// `parent/child`, without doubling the slash under `/`.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreePattern {
    text: String,
    segments: Vec<Option<String>>,
    literal_prefix: usize,
    /// For a node election (`split_node`): the name of the election node
    /// below each matched parent, which completes the `election` label.
    node: Option<String>,
    /// Paths (as labelled: the election, group or lock) never watched: a
    /// retired account whose parent stays, a test tenant. Shell-style
    /// globs within a segment (`*`, `?`, `[ab]`), never across `/`.
    exclude: Vec<glob::Pattern>,
}

/// How exclusions match: `*` stays within one path segment.
const EXCLUDE_MATCH: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// What a path is to a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathKind<'a> {
    /// The path matches the pattern: an election or group node.
    Parent,
    /// A direct child of such a node: a candidate or member.
    Child { parent: &'a str, name: &'a str },
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
            node: None,
            exclude: Vec::new(),
        })
    }

    /// The pattern without the paths `globs` match (each an absolute path
    /// as labelled, of as many segments). Errors name the glob at fault.
    pub fn excluding(mut self, globs: &[String]) -> Result<Self, (usize, String)> {
        let depth = self.segments.len() + usize::from(self.node.is_some());
        for (i, text) in globs.iter().enumerate() {
            if !text.starts_with('/') || text.len() < 2 || text.ends_with('/') {
                return Err((
                    i,
                    format!("`{text}` must be an absolute path such as \"/wechat/bots/bot_9\""),
                ));
            }
            let segments = text[1..].split('/').count();
            if segments != depth {
                return Err((
                    i,
                    format!(
                        "`{text}` has {segments} path segments but every path `{}` watches has {depth}: it would never exclude anything",
                        self.text
                    ),
                ));
            }
            let glob = glob::Pattern::new(text).map_err(|e| (i, format!("`{text}`: {e}")))?;
            self.exclude.push(glob);
        }
        Ok(self)
    }

    /// The exclusion globs, as configured.
    pub fn exclusions(&self) -> impl Iterator<Item = &str> {
        self.exclude.iter().map(glob::Pattern::as_str)
    }

    /// Whether the node `parent` (a path this pattern matches) is excluded.
    pub fn excludes(&self, parent: &str) -> bool {
        if self.exclude.is_empty() {
            return false;
        }
        let labelled = match &self.node {
            Some(name) => join(parent, name),
            None => parent.to_owned(),
        };
        self.exclude
            .iter()
            .any(|g| g.matches_with(&labelled, EXCLUDE_MATCH))
    }

    /// For an election that is one node (`style = "node"`): the pattern of
    /// the nodes holding it, and its name. `/hadoop-ha/*/ActiveStandbyElectorLock`
    /// becomes `/hadoop-ha/*` and `ActiveStandbyElectorLock`; `/controller`
    /// becomes `/` and `controller`. The pattern keeps `text` as the `tree`
    /// label. The last segment must be literal.
    pub fn split_node(text: &str) -> Result<(Self, String), String> {
        let full = Self::parse(text)?;
        let Some(Some(name)) = full.segments.last().cloned() else {
            return Err(format!(
                "`{text}`: the last segment names the election node and must not be `*`"
            ));
        };
        let segments = full.segments[..full.segments.len() - 1].to_vec();
        let literal_prefix = segments.iter().take_while(|s| s.is_some()).count();
        Ok((
            Self {
                text: full.text,
                segments,
                literal_prefix,
                node: Some(name.clone()),
                exclude: Vec::new(),
            },
            name,
        ))
    }

    /// Whether both match the same nodes (their texts may differ, as for
    /// node elections split from different paths).
    pub fn same_nodes(&self, other: &Self) -> bool {
        self.segments == other.segments
    }

    /// Whether the glob has no `*`: it names exactly one node.
    pub fn is_single(&self) -> bool {
        self.segments.iter().all(Option::is_some)
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

    /// For a node election: the election node's name below each matched
    /// parent.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
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

    /// Whether `path` is one of this tree's nodes, excluded or not: an
    /// excluded election is still the user's, never discovery's to take.
    pub fn claims(&self, path: &str) -> bool {
        let Some(rest) = path.strip_prefix('/') else {
            return false;
        };
        let segments: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('/').collect()
        };
        self.matches_segments(&segments)
    }

    /// Classifies an absolute path (relative to the chroot).
    pub fn classify<'a>(&self, path: &'a str) -> PathKind<'a> {
        let Some(rest) = path.strip_prefix('/') else {
            return PathKind::Other;
        };
        // `/` has no segments (it is the parent of a top-level node election).
        let segments: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('/').collect()
        };
        if self.matches_segments(&segments) {
            if self.excludes(path) {
                return PathKind::Other;
            }
            return PathKind::Parent;
        }
        if segments.len() == self.segments.len() + 1
            && self.matches_segments(&segments[..self.segments.len()])
        {
            let cut = path.rfind('/').unwrap_or(0);
            let parent = if cut == 0 { "/" } else { &path[..cut] };
            if self.excludes(parent) {
                return PathKind::Other;
            }
            return PathKind::Child {
                parent,
                name: &path[cut + 1..],
            };
        }
        PathKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn node_elections_split_into_their_parents() {
        let (p, name) = TreePattern::split_node("/hadoop-ha/*/ActiveStandbyElectorLock").unwrap();
        assert_eq!(
            (p.as_str(), p.root().as_str(), name.as_str()),
            (
                "/hadoop-ha/*/ActiveStandbyElectorLock",
                "/hadoop-ha",
                "ActiveStandbyElectorLock"
            )
        );
        assert_eq!(p.classify("/hadoop-ha/ns1"), PathKind::Parent);
        let (root, name) = TreePattern::split_node("/controller").unwrap();
        assert_eq!((root.root().as_str(), name.as_str()), ("/", "controller"));
        assert_eq!(root.classify("/"), PathKind::Parent);
        assert_eq!(
            root.classify("/controller"),
            PathKind::Child {
                parent: "/",
                name: "controller"
            }
        );
        assert_eq!(root.classify("/brokers/ids"), PathKind::Other);
        assert!(TreePattern::split_node("/a/*").is_err());
    }

    #[test]
    fn classify_paths() {
        let p = TreePattern::parse("/a/*/b/*").unwrap();
        assert_eq!(p.classify("/a/x/b/e1"), PathKind::Parent);
        assert_eq!(
            p.classify("/a/x/b/e1/c_0000000001"),
            PathKind::Child {
                parent: "/a/x/b/e1",
                name: "c_0000000001"
            }
        );
        assert_eq!(p.classify("/a/x/b"), PathKind::Other);
        assert_eq!(p.classify("/a/x/c/e1"), PathKind::Other);
        assert_eq!(p.classify("/a/x/b/e1/c/d"), PathKind::Other);
        assert_eq!(p.classify("relative"), PathKind::Other);
        let single = TreePattern::parse("/leader").unwrap();
        assert_eq!(single.classify("/leader"), PathKind::Parent);
        assert!(matches!(
            single.classify("/leader/n_0000000001"),
            PathKind::Child { .. }
        ));
    }

    #[test]
    fn exclusions_hide_parents_and_their_children() {
        let p = TreePattern::parse("/wechat/bots/*")
            .unwrap()
            .excluding(&[
                "/wechat/bots/bot_orphan".into(),
                "/wechat/bots/test_*".into(),
            ])
            .unwrap();
        assert_eq!(p.classify("/wechat/bots/bot_1"), PathKind::Parent);
        assert_eq!(p.classify("/wechat/bots/bot_orphan"), PathKind::Other);
        assert_eq!(
            p.classify("/wechat/bots/bot_orphan/instance_0000000001"),
            PathKind::Other
        );
        assert_eq!(p.classify("/wechat/bots/test_7"), PathKind::Other);
        assert!(matches!(
            p.classify("/wechat/bots/bot_1/instance_0000000001"),
            PathKind::Child { .. }
        ));
        // `*` never crosses a segment; a glob of another depth is refused.
        let err = TreePattern::parse("/wechat/bots/*")
            .unwrap()
            .excluding(&["/wechat/*".into()])
            .unwrap_err();
        assert_eq!(err.0, 0);
        assert!(err.1.contains("never exclude"), "{}", err.1);
        assert!(
            TreePattern::parse("/a/*")
                .unwrap()
                .excluding(&["a/b".into()])
                .is_err()
        );
        assert!(
            TreePattern::parse("/a/*")
                .unwrap()
                .excluding(&["/a/[".into()])
                .is_err()
        );
    }

    #[test]
    fn node_elections_are_excluded_by_their_election_path() {
        let (p, _) = TreePattern::split_node("/hadoop-ha/*/ActiveStandbyElectorLock").unwrap();
        let p = p
            .excluding(&["/hadoop-ha/retired/ActiveStandbyElectorLock".into()])
            .unwrap();
        assert_eq!(p.classify("/hadoop-ha/ns1"), PathKind::Parent);
        assert_eq!(p.classify("/hadoop-ha/retired"), PathKind::Other);
        assert_eq!(
            p.classify("/hadoop-ha/retired/ActiveStandbyElectorLock"),
            PathKind::Other
        );
    }
}
