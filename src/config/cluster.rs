//! Validation of one `[[clusters]]` table.

use std::time::Duration;

use super::raw::{
    RawCluster, RawElection, RawFourLetterWords, RawGhostCheck, RawGroup, RawLock, RawProbe,
    RawSystem,
};
use super::validate::*;
use super::*;
use crate::model::Limits;
use crate::model::candidate::IdentityMode;
use crate::model::election_tree::{ElectionSpec, NodeSpec, Standbys, Style};
use crate::model::groups::GroupSpec;
use crate::model::locks::LockSpec;
use crate::model::outer_record::OuterRecord;
use crate::model::tree::TreePattern;

/// `session_timeout` and `latency_read_interval`.
fn validate_timings(key: &str, c: &RawCluster) -> Result<(Duration, Duration), ConfigError> {
    let session_timeout = bounded_duration(
        &format!("{key}.session_timeout"),
        c.session_timeout.as_deref(),
        DEFAULT_SESSION_TIMEOUT,
        &Bounds {
            min: Duration::from_millis(100),
            max: Duration::from_secs(3600),
            says: "must be between 100ms and 1h (the server further bounds it by 2..20 × tickTime)",
        },
    )?;
    let latency_read_interval = bounded_duration(
        &format!("{key}.latency_read_interval"),
        c.latency_read_interval.as_deref(),
        DEFAULT_LATENCY_READ_INTERVAL,
        &AT_LEAST_100MS,
    )?;
    Ok((session_timeout, latency_read_interval))
}

/// `[clusters.four_letter_words]`, which asks over the cluster's TLS when
/// it has one: an https:// AdminServer needs it.
fn validate_words_over_tls(
    key: &str,
    raw: RawFourLetterWords,
    servers: &[String],
    tls: Option<&super::zktls::ZkTls>,
) -> Result<FourLetterWordsConfig, ConfigError> {
    let mut words = validate_four_letter_words(&format!("{key}.four_letter_words"), raw, servers)?;
    let https = words
        .admin_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"));
    if tls.is_none() && https {
        return Err(ConfigError::new(
            format!("{key}.four_letter_words.admin_url"),
            "an https:// AdminServer needs [clusters.tls] (its ca_file verifies the AdminServer too)",
        ));
    }
    words.tls = tls.cloned();
    Ok(words)
}

pub(super) fn validate_cluster(key: &str, mut c: RawCluster) -> Result<ClusterConfig, ConfigError> {
    let limits = validate_limits(key, &c)?;
    let name = c.name.take().unwrap_or_else(|| "default".to_owned());
    if name.trim().is_empty() {
        return Err(ConfigError::new(format!("{key}.name"), "must not be empty"));
    }
    if c.servers.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.servers"),
            "is empty: list at least one \"host:port\"",
        ));
    }
    let servers = c
        .servers
        .iter()
        .enumerate()
        .map(|(j, s)| validate_server(&format!("{key}.servers[{j}]"), s))
        .collect::<Result<Vec<_>, _>>()?;
    let (session_timeout, latency_read_interval) = validate_timings(key, &c)?;
    let tls = c
        .tls
        .map(|t| super::zktls::validate_tls(&format!("{key}.tls"), t))
        .transpose()?;
    let raw_words = c.four_letter_words.take().unwrap_or_default();
    let four_letter_words = validate_words_over_tls(key, raw_words, &servers, tls.as_ref())?;
    let (system_elections, system_groups) = super::systems::expand(key, c.systems)?;
    let (elections, groups) = validate_trees(
        key,
        c.elections.into_iter().chain(system_elections).collect(),
        c.groups.into_iter().chain(system_groups).collect(),
    )?;
    let locks = validate_locks(key, c.locks)?;
    let ghost_check = validate_ghost_check(
        &format!("{key}.ghost_check"),
        c.ghost_check.unwrap_or_default(),
        four_letter_words.enabled,
    )?;
    if let Some(e) = elections
        .iter()
        .find(|e| e.spec.identity.owner_part().is_some())
        .filter(|_| !ghost_check.enabled)
    {
        return Err(ConfigError::new(
            format!("{key}.ghost_check.enabled"),
            format!(
                "the election `{}` names its candidates by their owner session's address (identity \"{}\"), which only the ghost check's cons rounds tell; enable four_letter_words and the ghost check, or choose another identity",
                e.pattern.as_str(),
                e.spec.identity.spec()
            ),
        ));
    }
    let discovery = validate_discovery(
        &format!("{key}.discovery"),
        c.discovery.unwrap_or_default(),
        elections.is_empty() && groups.is_empty() && locks.is_empty(),
    )?;
    Ok(ClusterConfig {
        name,
        servers,
        chroot: validate_chroot(key, c.chroot.as_deref())?,
        session_timeout,
        latency_read_interval,
        watch_mode: validate_watch_mode(key, c.watch_mode.as_deref())?,
        auth: c
            .auth
            .map(|a| validate_auth(&format!("{key}.auth"), a))
            .transpose()?,
        tls,
        timeline_size: c.timeline_size.unwrap_or(10_000).max(1),
        elections,
        groups,
        locks,
        four_letter_words,
        limits,
        discovery,
        ghost_check,
        probe: validate_probe(&format!("{key}.probe"), c.probe)?,
    })
}

fn validate_chroot(key: &str, chroot: Option<&str>) -> Result<Option<String>, ConfigError> {
    match chroot {
        None | Some("/") | Some("") => Ok(None),
        Some(p) if !p.starts_with('/') || p.ends_with('/') || p.contains("//") => {
            Err(ConfigError::new(
                format!("{key}.chroot"),
                format!(
                    "`{p}` must be an absolute path like \"/apps/prod\" without a trailing `/`"
                ),
            ))
        }
        Some(p) => Ok(Some(p.to_owned())),
    }
}

/// The export cap, the memory guard and the attention window.
fn validate_limits(key: &str, c: &RawCluster) -> Result<Limits, ConfigError> {
    let default = Limits::default();
    let max_tracked_elections = c
        .max_tracked_elections
        .unwrap_or(default.max_tracked_elections);
    if max_tracked_elections == 0 {
        return Err(ConfigError::new(
            format!("{key}.max_tracked_elections"),
            "must be at least 1 (it bounds memory: about 0.6 KiB per election with three candidates)",
        ));
    }
    Ok(Limits {
        max_elections: c.max_elections.unwrap_or(default.max_elections),
        max_tracked_elections,
        attention_window: bounded_duration(
            &format!("{key}.attention_window"),
            c.attention_window.as_deref(),
            default.attention_window,
            &Bounds {
                min: Duration::ZERO,
                max: Duration::from_secs(24 * 3600),
                says: "must be between 0s and 24h",
            },
        )?,
        max_groups: c.max_groups.unwrap_or(default.max_groups),
        max_locks: c.max_locks.unwrap_or(default.max_locks),
    })
}

fn validate_watch_mode(key: &str, mode: Option<&str>) -> Result<WatchMode, ConfigError> {
    match mode {
        None | Some("auto") => Ok(WatchMode::Auto),
        Some("persistent") => Ok(WatchMode::Persistent),
        Some("oneshot") => Ok(WatchMode::Oneshot),
        Some(other) => Err(ConfigError::new(
            format!("{key}.watch_mode"),
            format!("`{other}` is not a watch mode; use \"auto\", \"persistent\" or \"oneshot\""),
        )),
    }
}

/// Elections and groups, plus the group each node election's standby
/// registry is watched as.
pub(super) fn validate_trees(
    key: &str,
    elections: Vec<RawElection>,
    groups: Vec<RawGroup>,
) -> Result<(Vec<ElectionConfig>, Vec<GroupConfig>), ConfigError> {
    let elections = validate_elections(key, elections)?;
    let mut groups = validate_groups(key, groups)?;
    for e in &elections {
        if let Style::Node(NodeSpec {
            standbys: Some(standbys),
            ..
        }) = &e.spec.style
            && let path = standbys.registry_of(e.pattern.as_str())
            && !groups.iter().any(|g| g.pattern.as_str() == path)
        {
            groups.push(GroupConfig {
                pattern: TreePattern::parse(&path)
                    .map_err(|m| ConfigError::new(format!("{key}.elections"), m))?,
                spec: GroupSpec::discovered(),
            });
        }
    }
    Ok((elections, groups))
}

/// `pattern` without the paths of `exclude` (the tree's `exclude` key).
fn with_exclude(
    tkey: &str,
    pattern: TreePattern,
    exclude: Option<&Vec<String>>,
) -> Result<TreePattern, ConfigError> {
    match exclude {
        None => Ok(pattern),
        Some(globs) => pattern
            .excluding(globs)
            .map_err(|(i, m)| ConfigError::new(format!("{tkey}.exclude[{i}]"), m)),
    }
}

fn validate_elections(
    key: &str,
    raw: Vec<RawElection>,
) -> Result<Vec<ElectionConfig>, ConfigError> {
    let mut elections = Vec::new();
    for (j, e) in raw.into_iter().enumerate() {
        let ekey = format!("{key}.elections[{j}]");
        let path_error = |m| ConfigError::new(format!("{ekey}.path"), m);
        let (pattern, style, record) = match e.style.as_deref() {
            None | Some("sequential") => {
                let pattern = TreePattern::parse(&e.path).map_err(path_error)?;
                let record = e
                    .record
                    .as_ref()
                    .map(|r| outer_record(&ekey, r, &pattern))
                    .transpose()?;
                (pattern, Style::Sequential, record)
            }
            Some("node") => {
                let (pattern, name) = TreePattern::split_node(&e.path).map_err(path_error)?;
                let record = e
                    .record
                    .as_ref()
                    .map(|r| record_sibling(&ekey, r, &pattern, &e.path))
                    .transpose()?;
                let style = node_style(&ekey, &e, &pattern, name)?;
                (pattern, style, record)
            }
            Some(other) => {
                return Err(ConfigError::new(
                    format!("{ekey}.style"),
                    format!(
                        "`{other}` is not an election style; use \"sequential\" (candidates are sequential children) or \"node\" (the election is one ephemeral node)"
                    ),
                ));
            }
        };
        if style.is_sequential() {
            for (set, field) in [
                (e.standbys.is_some(), "standbys"),
                (e.epoch.is_some(), "epoch"),
            ] {
                if set {
                    return Err(ConfigError::new(
                        format!("{ekey}.{field}"),
                        "only applies to style = \"node\" (a sequential election's candidates are its children)",
                    ));
                }
            }
        }
        let identity = IdentityMode::parse(e.identity.as_deref().unwrap_or("data"))
            .map_err(|m| ConfigError::new(format!("{ekey}.identity"), m))?;
        if matches!(identity, IdentityMode::OwnerRecord)
            && !(style.is_sequential() && record.is_some())
        {
            return Err(ConfigError::new(
                format!("{ekey}.identity"),
                "\"owner-record\" names a candidate by the election's record its session wrote: give a sequential election a `record`",
            ));
        }
        if e.min_candidates == Some(0) {
            return Err(ConfigError::new(
                format!("{ekey}.min_candidates"),
                "must be at least 1 (leave it out for no standby alert)",
            ));
        }
        let no_master_for = e
            .no_master_for
            .as_deref()
            .map(|d| {
                super::validate::bounded_duration(
                    &format!("{ekey}.no_master_for"),
                    Some(d),
                    std::time::Duration::ZERO,
                    &super::validate::AT_LEAST_100MS,
                )
            })
            .transpose()?;
        let pattern = with_exclude(&ekey, pattern, e.exclude.as_ref())?;
        let slo = e.slo.as_ref().map(|s| validate_slo(&ekey, s)).transpose()?;
        let (lease, lease_spec) = match &e.lease {
            Some(raw) => {
                let (source, spec) = super::lease::validate_lease(&ekey, raw, &pattern)?;
                (Some(source), Some(spec))
            }
            None => (None, None),
        };
        let spec = ElectionSpec {
            identity,
            style,
            min_candidates: e.min_candidates,
            record,
            no_master_for,
            slo,
            lease: lease_spec,
        };
        elections.push(ElectionConfig {
            pattern,
            spec,
            lease,
        });
    }
    Ok(elections)
}

/// An election set's `slo`: an availability strictly between 0 and 1 (1
/// leaves no error budget to burn), over a window of an hour to a year.
fn validate_slo(
    ekey: &str,
    s: &super::raw::RawSlo,
) -> Result<crate::model::election_tree::Slo, ConfigError> {
    if !(s.availability > 0.0 && s.availability < 1.0) {
        return Err(ConfigError::new(
            format!("{ekey}.slo.availability"),
            format!(
                "{} is not a share of time: give one between 0 and 1, such as 0.999 (1 would leave no error budget)",
                s.availability
            ),
        ));
    }
    let window = super::validate::bounded_duration(
        &format!("{ekey}.slo.window"),
        s.window.as_deref(),
        Duration::from_secs(30 * 86_400),
        &super::validate::Bounds {
            min: Duration::from_secs(3600),
            max: Duration::from_secs(400 * 86_400),
            says: "must be between 1h and 400d (an SLO window, such as \"30d\")",
        },
    )?;
    Ok(crate::model::election_tree::Slo {
        availability: s.availability,
        window,
    })
}

/// A sequential election's record: beside the election node or below a
/// sibling of it (`/flink/*/leader/rest_server/connection_info` for the
/// elections `/flink/*/leader/latch`), as a path from the election's
/// parent without `*`. A glob of elections needs a literal last segment:
/// a record's path must tell its election.
fn outer_record(
    ekey: &str,
    r: &super::raw::RawRecord,
    pattern: &TreePattern,
) -> Result<(String, IdentityMode), ConfigError> {
    let key = format!("{ekey}.record.path");
    if OuterRecord::new(pattern.clone(), "record").is_none() {
        return Err(ConfigError::new(
            key,
            "a record of every election a glob matches needs the election node named (a last segment that is not `*`), so that a record's path tells its election",
        ));
    }
    let prefix = match parent_text(pattern.as_str()) {
        "" => "/".to_owned(),
        parent => format!("{parent}/"),
    };
    let relative = r.path.strip_prefix(&prefix).unwrap_or_default();
    if relative.is_empty() || relative.split('/').any(|s| s.is_empty() || s == "*") {
        return Err(ConfigError::new(
            key,
            format!(
                "`{}` must be beside the election node `{}` or below a sibling of it (under `{prefix}`, without `*`)",
                r.path,
                pattern.as_str()
            ),
        ));
    }
    let mode = record_mode(ekey, r)?;
    Ok((relative.to_owned(), mode))
}

fn parent_text(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "",
        Some(cut) => &path[..cut],
    }
}

/// The name of `path`, which must be a sibling of the election node
/// `election` (whose parents `parent` matches).
fn sibling(
    key: String,
    path: &str,
    parent: &TreePattern,
    election: &str,
) -> Result<String, ConfigError> {
    let (its_parent, name) =
        TreePattern::split_node(path).map_err(|m| ConfigError::new(&key, m))?;
    if !its_parent.same_nodes(parent) {
        return Err(ConfigError::new(
            key,
            format!("`{path}` must be a sibling of the election node `{election}`"),
        ));
    }
    Ok(name)
}

/// An election's record: a sibling of the election node, read with its own
/// identity mode.
fn record_sibling(
    ekey: &str,
    r: &super::raw::RawRecord,
    parent: &TreePattern,
    election: &str,
) -> Result<(String, IdentityMode), ConfigError> {
    let mode = record_mode(ekey, r)?;
    let name = sibling(format!("{ekey}.record.path"), &r.path, parent, election)?;
    Ok((name, mode))
}

fn record_mode(ekey: &str, r: &super::raw::RawRecord) -> Result<IdentityMode, ConfigError> {
    let mode = IdentityMode::parse(r.identity.as_deref().unwrap_or("data"))
        .map_err(|m| ConfigError::new(format!("{ekey}.record.identity"), m))?;
    if mode.named_by_owner() {
        return Err(ConfigError::new(
            format!("{ekey}.record.identity"),
            "a record names who the application says is master, from its own data; owner-* names election candidates only",
        ));
    }
    Ok(mode)
}

/// The node style of election `e` (`pattern` holds its node `name`): its
/// epoch must be a sibling of the node, its standbys a single registry of a
/// single election.
fn node_style(
    ekey: &str,
    e: &RawElection,
    pattern: &TreePattern,
    name: String,
) -> Result<Style, ConfigError> {
    let epoch = e
        .epoch
        .as_deref()
        .map(|p| sibling(format!("{ekey}.epoch"), p, pattern, &e.path))
        .transpose()?;
    let standbys = match &e.standbys {
        None => None,
        // Beside each election's node: every election has its own.
        Some(path)
            if TreePattern::split_node(path)
                .is_ok_and(|(parent, _)| parent.same_nodes(pattern)) =>
        {
            let name = sibling(format!("{ekey}.standbys"), path, pattern, &e.path)?;
            Some(Standbys::Sibling(name))
        }
        Some(path) => {
            let key = format!("{ekey}.standbys");
            let registry = TreePattern::parse(path).map_err(|m| ConfigError::new(&key, m))?;
            if !registry.is_single() || !pattern.is_single() {
                return Err(ConfigError::new(
                    key,
                    "names a sibling of the election node, or one registry (no `*`) of a single election (no `*` in path)",
                ));
            }
            Some(Standbys::Registry(path.clone()))
        }
    };
    Ok(Style::Node(NodeSpec {
        name,
        epoch,
        standbys,
    }))
}

fn validate_groups(key: &str, raw: Vec<RawGroup>) -> Result<Vec<GroupConfig>, ConfigError> {
    let mut groups = Vec::new();
    for (j, g) in raw.into_iter().enumerate() {
        let gkey = format!("{key}.groups[{j}]");
        let pattern =
            TreePattern::parse(&g.path).map_err(|m| ConfigError::new(format!("{gkey}.path"), m))?;
        let pattern = with_exclude(&gkey, pattern, g.exclude.as_ref())?;
        let member = IdentityMode::parse(g.member.as_deref().unwrap_or("node")).map_err(|m| {
            ConfigError::new(
                format!("{gkey}.member"),
                m.replace("identity mode", "member mode"),
            )
        })?;
        if member.named_by_owner() {
            return Err(ConfigError::new(
                format!("{gkey}.member"),
                "a member is named from its own node; owner-* names election candidates only",
            ));
        }
        let alive = match g.alive {
            Some(name) if name.is_empty() || name.contains('/') || name == "." || name == ".." => {
                return Err(ConfigError::new(
                    format!("{gkey}.alive"),
                    format!(
                        "`{name}` is not a node name: give the child that marks a member live (\"is_active\")"
                    ),
                ));
            }
            alive => alive,
        };
        groups.push(GroupConfig {
            pattern,
            spec: GroupSpec {
                member,
                min_members: g.min_members,
                export_members: g.export_members.unwrap_or(false),
                alive,
            },
        });
    }
    Ok(groups)
}

fn validate_locks(key: &str, raw: Vec<RawLock>) -> Result<Vec<LockConfig>, ConfigError> {
    let mut locks = Vec::new();
    for (j, l) in raw.into_iter().enumerate() {
        let lkey = format!("{key}.locks[{j}]");
        let pattern =
            TreePattern::parse(&l.path).map_err(|m| ConfigError::new(format!("{lkey}.path"), m))?;
        let pattern = with_exclude(&lkey, pattern, l.exclude.as_ref())?;
        let max_hold = l
            .max_hold
            .as_deref()
            .map(|text| {
                bounded_duration(
                    &format!("{lkey}.max_hold"),
                    Some(text),
                    Duration::ZERO,
                    &Bounds::at_least(Duration::from_secs(1), "must be at least 1s"),
                )
            })
            .transpose()?;
        locks.push(LockConfig {
            pattern,
            spec: LockSpec { max_hold },
        });
    }
    Ok(locks)
}

/// `[clusters.ghost_check]`: the ghost-master check.
fn validate_ghost_check(
    key: &str,
    raw: RawGhostCheck,
    four_letter_words: bool,
) -> Result<GhostCheckConfig, ConfigError> {
    let cons_key = format!("{key}.cons_interval");
    let cons_interval = match raw.cons_interval.as_deref() {
        None | Some("auto") => ConsInterval::Auto,
        text => {
            let interval = bounded_duration(&cons_key, text, Duration::ZERO, &AT_LEAST_100MS)
                .map_err(|e| match text.map(humantime::parse_duration) {
                    Some(Err(_)) => {
                        ConfigError::new(&cons_key, format!("{}, or \"auto\"", e.message))
                    }
                    _ => e,
                })?;
            ConsInterval::Every(interval)
        }
    };
    Ok(GhostCheckConfig {
        enabled: raw.enabled.unwrap_or(four_letter_words),
        cons_interval,
        watches: raw.watches.unwrap_or(false),
    })
}

/// `[clusters.probe]`: the failover probe, when present and enabled.
fn validate_probe(key: &str, raw: Option<RawProbe>) -> Result<Option<ProbeConfig>, ConfigError> {
    let Some(raw) = raw.filter(|r| r.enabled.unwrap_or(true)) else {
        return Ok(None);
    };
    let path = raw
        .path
        .unwrap_or_else(|| "/zk-election-exporter/probe".to_owned());
    TreePattern::parse(&path)
        .ok()
        .filter(|p| p.segments().iter().all(Option::is_some))
        .ok_or_else(|| {
            ConfigError::new(
                format!("{key}.path"),
                format!("`{path}` must be an absolute path without `*`"),
            )
        })?;
    let interval = bounded_duration(
        &format!("{key}.interval"),
        raw.interval.as_deref(),
        Duration::from_secs(30),
        &AT_LEAST_100MS,
    )?;
    Ok(Some(ProbeConfig {
        path,
        interval,
        write: raw.write.unwrap_or(true),
    }))
}

/// The elections and groups of known system `kind` at `root`, validated:
/// what discovery watches when it recognises the system's layout.
pub fn system_trees(
    kind: &str,
    root: &str,
) -> Result<(Vec<ElectionConfig>, Vec<GroupConfig>), ConfigError> {
    let system = RawSystem {
        kind: kind.to_owned(),
        root: Some(root.to_owned()),
    };
    let (elections, groups) = super::systems::expand("system", vec![system])?;
    validate_trees("system", elections, groups)
}
