//! Validation of the `[[clusters.elections]]` entries of a cluster: their
//! style (sequential or node), record, identity, lease and objective.

use super::raw::RawElection;
use super::validate::with_exclude;
use super::*;
use crate::model::candidate::IdentityMode;
use crate::model::election_tree::{ElectionSpec, NodeSpec, Standbys, Style};
use crate::model::outer_record::OuterRecord;
use crate::model::tree::TreePattern;

/// Every `[[clusters.elections]]` entry of the cluster at `key`.
pub(super) fn validate_elections(
    key: &str,
    raw: Vec<RawElection>,
) -> Result<Vec<ElectionConfig>, ConfigError> {
    raw.into_iter()
        .enumerate()
        .map(|(j, e)| validate_election(&format!("{key}.elections[{j}]"), e))
        .collect()
}

/// An election's `record`: the node's path and how its identity is read.
type Record = (String, IdentityMode);

/// The tree pattern, style and record of one election entry.
fn election_shape(
    ekey: &str,
    e: &RawElection,
) -> Result<(TreePattern, Style, Option<Record>), ConfigError> {
    let path_error = |m| ConfigError::new(format!("{ekey}.path"), m);
    Ok(match e.style.as_deref() {
        None | Some("sequential") => {
            let pattern = TreePattern::parse(&e.path).map_err(path_error)?;
            let record = e
                .record
                .as_ref()
                .map(|r| outer_record(ekey, r, &pattern))
                .transpose()?;
            (pattern, Style::Sequential, record)
        }
        Some("node") => {
            let (pattern, name) = TreePattern::split_node(&e.path).map_err(path_error)?;
            let record = e
                .record
                .as_ref()
                .map(|r| record_sibling(ekey, r, &pattern, &e.path))
                .transpose()?;
            let style = node_style(ekey, e, &pattern, name)?;
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
    })
}

/// One `[[clusters.elections]]` entry at `ekey`.
fn validate_election(ekey: &str, e: RawElection) -> Result<ElectionConfig, ConfigError> {
    let (pattern, style, record) = election_shape(ekey, &e)?;
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
    if matches!(identity, IdentityMode::OwnerRecord) && !(style.is_sequential() && record.is_some())
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
    let pattern = with_exclude(ekey, pattern, e.exclude.as_ref())?;
    let slo = e.slo.as_ref().map(|s| validate_slo(ekey, s)).transpose()?;
    let (lease, lease_spec) = match &e.lease {
        Some(raw) => {
            let (source, spec) = super::lease::validate_lease(ekey, raw, &pattern)?;
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
    Ok(ElectionConfig {
        pattern,
        spec,
        lease,
    })
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
