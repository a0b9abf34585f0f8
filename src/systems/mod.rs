//! Known systems, one file each: what `--system KIND[:ROOT]` (or
//! `[[clusters.systems]]`) stands for, where discovery recognises the
//! system, and how its identities are decoded. Each file below this one
//! defines `SYSTEM`, a [`KnownSystem`]; build.rs lists every file here in
//! [`all`], so a system is added by adding its file (and its test). A file
//! that starts with `#![cfg(test)]` is a system of the unit tests only.
//!
//! Pure: the trees come back as plain descriptions that the configuration
//! validates like any configured tree, and recognition reads only which
//! paths a walk listed.

/// One known system.
pub trait KnownSystem: Sync {
    /// The kind `--system` and `[[clusters.systems]] kind` name it by.
    fn name(&self) -> &'static str;

    /// Where its znodes live when no root is configured: its usual chroot
    /// or namespace.
    fn default_root(&self) -> &'static str;

    /// The elections and groups it writes under `root`.
    fn trees(&self, root: &Root<'_>) -> Vec<SystemTree>;

    /// The system's root when `spot` is the node its layout is known by
    /// (Kafka's `controller` beside `controller_epoch` and `brokers/ids`).
    fn recognise(&self, spot: &Spot<'_>) -> Option<String>;

    /// A layout it writes, as paths below its root (`/controller`, …):
    /// where a walk lists these, discovery recognises the system. What
    /// [`recognise`](Self::recognise) looks for, shown once. The
    /// registry's tests build walks from it, so that each system's
    /// recognition is held to what the system writes.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the registry's tests only")
    )]
    fn layout(&self) -> &'static [&'static str];

    /// Globs below the root of nodes it writes that none of its trees
    /// watches and that discovery must not take for generic trees.
    fn claimed(&self) -> &'static [&'static str] {
        &[]
    }

    /// Identity modes for the binary payloads it writes, named as the
    /// configuration spells them (`identity = "hbase"`).
    fn decoders(&self) -> &'static [Decoder] {
        &[]
    }
}

/// An identity mode a known system brings: its payload decoded to the
/// name of the process that wrote it.
#[derive(Debug)]
pub struct Decoder {
    pub name: &'static str,
    /// `None` when the payload is not the system's: the candidate is then
    /// named by its node.
    pub decode: fn(&[u8]) -> Option<String>,
}

include!(concat!(env!("OUT_DIR"), "/systems.rs"));

/// Every known system, by name (with the unit tests' own in a test build).
pub fn all() -> impl Iterator<Item = &'static dyn KnownSystem> {
    SHIPPED.iter().chain(TEST_ONLY).copied()
}

/// The systems a release knows: what `--help` and the documentation
/// list, and what the tests hold them to.
#[cfg(test)]
pub fn shipped() -> impl Iterator<Item = &'static dyn KnownSystem> {
    SHIPPED.iter().copied()
}

/// The known system called `name`.
pub fn find(name: &str) -> Option<&'static dyn KnownSystem> {
    all().find(|s| s.name() == name)
}

/// The names of every known system, for messages that list them.
pub fn names() -> Vec<&'static str> {
    all().map(|s| s.name()).collect()
}

/// Every identity mode the known systems bring.
pub fn decoders() -> impl Iterator<Item = &'static Decoder> {
    all().flat_map(|s| s.decoders().iter())
}

/// The identity mode called `name` that a known system brings.
pub fn decoder(name: &str) -> Option<&'static Decoder> {
    decoders().find(|d| d.name == name)
}

/// A system's root, an absolute path (`/` or `/kafka`).
#[derive(Debug, Clone, Copy)]
pub struct Root<'a>(pub &'a str);

impl Root<'_> {
    /// `rest` (which starts with `/`) below the root.
    pub fn at(&self, rest: &str) -> String {
        if self.0 == "/" {
            rest.to_owned()
        } else {
            format!("{}{rest}", self.0)
        }
    }
}

/// A tree a known system writes, as the configuration would spell it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemTree {
    Election(Election),
    Group(Group),
}

/// An election (`[[clusters.elections]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Election {
    pub path: String,
    /// One node whose owner is master (`style = "node"`), rather than a
    /// queue of sequential candidates.
    pub node: bool,
    pub identity: &'static str,
    pub standbys: Option<String>,
    pub epoch: Option<String>,
    pub record: Option<Record>,
}

/// Where the master writes down who leads, and how to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub path: String,
    pub identity: &'static str,
}

/// A group (`[[clusters.groups]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub path: String,
    /// The ephemeral child whose presence makes a persistent member live.
    pub alive: Option<&'static str>,
}

impl Election {
    /// A queue of EPHEMERAL_SEQUENTIAL candidates, lowest is master.
    pub fn sequential(path: String, identity: &'static str) -> Self {
        Self {
            path,
            node: false,
            identity,
            standbys: None,
            epoch: None,
            record: None,
        }
    }

    /// One EPHEMERAL node whose owner is master.
    pub fn node(path: String, identity: &'static str) -> Self {
        Self {
            node: true,
            ..Self::sequential(path, identity)
        }
    }

    pub fn standbys(self, path: String) -> Self {
        Self {
            standbys: Some(path),
            ..self
        }
    }

    pub fn epoch(self, path: String) -> Self {
        Self {
            epoch: Some(path),
            ..self
        }
    }

    pub fn record(self, path: String, identity: &'static str) -> Self {
        Self {
            record: Some(Record { path, identity }),
            ..self
        }
    }
}

impl From<Election> for SystemTree {
    fn from(e: Election) -> Self {
        Self::Election(e)
    }
}

impl Group {
    pub fn new(path: String) -> Self {
        Self { path, alive: None }
    }

    pub fn alive(self, child: &'static str) -> Self {
        Self {
            alive: Some(child),
            ..self
        }
    }
}

impl From<Group> for SystemTree {
    fn from(g: Group) -> Self {
        Self::Group(g)
    }
}

/// One node a discovery walk listed, with what else the walk listed.
pub struct Spot<'a> {
    path: &'a str,
    listed: &'a dyn Fn(&str) -> bool,
}

impl<'a> Spot<'a> {
    pub fn new(path: &'a str, listed: &'a dyn Fn(&str) -> bool) -> Self {
        Self { path, listed }
    }

    /// The node's own name (`controller`).
    pub fn name(&self) -> &'a str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// The node `levels` above it (1: its parent); never above `/`.
    pub fn up(&self, levels: usize) -> &'a str {
        (0..levels).fold(self.path, |p, _| parent_of(p))
    }

    /// Whether the walk listed `rest` (a relative path) beside the node.
    pub fn sibling(&self, rest: &str) -> bool {
        let dir = self.up(1);
        let path = if dir == "/" {
            format!("/{rest}")
        } else {
            format!("{dir}/{rest}")
        };
        (self.listed)(&path)
    }
}

/// `path`'s parent (`/` for a top-level node and for `/`).
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// `/tables` → `/`, `/ch/tables` → `/ch`: the root `dir` is found in as
/// `suffix`, if it ends so.
pub fn root_above<'a>(dir: &'a str, suffix: &str) -> Option<&'a str> {
    if dir == suffix {
        return Some("/");
    }
    dir.strip_suffix(suffix)
        .filter(|r| r.starts_with('/') || r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spot_reads_its_name_ancestors_and_siblings() {
        let listed = |p: &str| p == "/a/b/sib" || p == "/top";
        let spot = Spot::new("/a/b/c", &listed);
        assert_eq!(spot.name(), "c");
        assert_eq!(spot.up(1), "/a/b");
        assert_eq!(spot.up(2), "/a");
        assert_eq!(spot.up(5), "/");
        assert!(spot.sibling("sib"));
        assert!(!spot.sibling("c2"));
        assert!(Spot::new("/x", &listed).sibling("top"));
    }

    #[test]
    fn roots_join_and_are_found_above_a_suffix() {
        assert_eq!(Root("/").at("/controller"), "/controller");
        assert_eq!(Root("/k").at("/controller"), "/k/controller");
        assert_eq!(root_above("/tables", "/tables"), Some("/"));
        assert_eq!(root_above("/ch/tables", "/tables"), Some("/ch"));
        assert_eq!(root_above("/chtables", "/tables"), None);
    }

    #[test]
    fn every_system_has_one_name_and_an_absolute_default_root() {
        let names = names();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for s in all() {
            let root = s.default_root();
            assert!(
                root == "/" || (root.starts_with('/') && !root.ends_with('/')),
                "{}: {root}",
                s.name()
            );
            assert!(!s.trees(&Root(root)).is_empty(), "{}", s.name());
        }
        let decoders: Vec<&str> = decoders().map(|d| d.name).collect();
        assert!(decoders.contains(&"hbase"), "{decoders:?}");
    }
}
