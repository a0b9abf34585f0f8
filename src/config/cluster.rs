//! Validation of one `[[clusters]]` table.

use std::time::Duration;

use super::elections::validate_elections;
use super::raw::{
    RawCluster, RawElection, RawFourLetterWords, RawGhostCheck, RawGroup, RawLock, RawProbe,
    RawSystem,
};
use super::validate::*;
use super::*;
use crate::model::Limits;
use crate::model::candidate::IdentityMode;
use crate::model::election_tree::{NodeSpec, Style};
use crate::model::groups::GroupSpec;
use crate::model::locks::LockSpec;
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
        timeline_size: c
            .timeline_size
            .unwrap_or(crate::model::timeline::DEFAULT_CAP)
            .max(1),
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
