//! How an election's lease row key follows from its path, and back.

/// How an election's path follows from its row key: the inverse of
/// [`LeaseKey::of`], where the glob fixes every part of the path the key
/// does not carry. Where it does not (`key_from = "name"` under a glob with
/// a `*` above the election), finding a changed row's election takes a
/// walk over the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPaths {
    /// The key is the path.
    Same,
    /// The glob's segments, `None` where a part of the key goes (in order),
    /// and the election node below each matched parent (node style).
    Template {
        segments: Box<[Option<String>]>,
        node: Option<String>,
    },
    /// No one path follows from a key.
    Walk,
}

impl KeyPaths {
    /// The inverse of `key` over a glob's `segments` (`None` for `*`) and
    /// its election `node` (node style).
    pub fn of(key: &LeaseKey, segments: &[Option<String>], node: Option<&str>) -> Self {
        let holes: Vec<usize> = (0..segments.len())
            .filter(|&i| segments[i].is_none())
            .collect();
        let template = |fill: &[usize]| KeyPaths::Template {
            segments: segments
                .iter()
                .enumerate()
                .map(|(i, s)| if fill.contains(&i) { None } else { s.clone() })
                .collect(),
            node: node.map(str::to_owned),
        };
        match key {
            LeaseKey::Path => KeyPaths::Same,
            // The node's own name: the last `*` when it is the only one
            // and the election is the matched node itself.
            LeaseKey::Name if node.is_none() && holes == [segments.len().wrapping_sub(1)] => {
                template(&holes)
            }
            LeaseKey::Capture(at) if at.iter().copied().eq(holes.iter().copied()) => {
                template(&holes)
            }
            _ => KeyPaths::Walk,
        }
    }

    /// The election path of row `key`; `None` where no one path follows
    /// (walk the set) or the key cannot be any election's.
    pub fn path(&self, key: &str) -> Option<String> {
        match self {
            KeyPaths::Same => Some(key.to_owned()),
            KeyPaths::Walk => None,
            KeyPaths::Template { segments, node } => {
                let mut parts = key.split('/');
                let mut path = String::with_capacity(key.len() + 32);
                for s in segments.iter() {
                    let part = match s {
                        Some(fixed) => fixed.as_str(),
                        None => parts.next().filter(|p| !p.is_empty())?,
                    };
                    path.push('/');
                    path.push_str(part);
                }
                if parts.next().is_some() {
                    return None;
                }
                if let Some(node) = node {
                    path.push('/');
                    path.push_str(node);
                }
                Some(path)
            }
        }
    }

    /// Whether a changed row's election is found without a walk.
    pub fn direct(&self) -> bool {
        !matches!(self, KeyPaths::Walk)
    }
}

/// How an election's lease key follows from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseKey {
    /// The election node's own name (`/wechat/bots/bot_1234` → `bot_1234`).
    Name,
    /// The election's whole path.
    Path,
    /// What the glob's `*` segments matched, joined by `/`: the segment
    /// positions (0 for the first below `/`). `/flink/*/leader/latch` →
    /// the cluster id; `/apps/*/bots/*` → `app1/bot_7`.
    Capture(Box<[usize]>),
}

impl LeaseKey {
    pub fn of<'a>(&self, election: &'a str) -> std::borrow::Cow<'a, str> {
        use std::borrow::Cow;
        match self {
            LeaseKey::Name => Cow::Borrowed(election.rsplit('/').next().unwrap_or(election)),
            LeaseKey::Path => Cow::Borrowed(election),
            LeaseKey::Capture(at) => {
                let segments: Vec<&str> = election.trim_start_matches('/').split('/').collect();
                let mut parts = at.iter().filter_map(|&i| segments.get(i).copied());
                match at.len() {
                    1 => Cow::Borrowed(parts.next().unwrap_or("")),
                    _ => Cow::Owned(parts.collect::<Vec<_>>().join("/")),
                }
            }
        }
    }
}
