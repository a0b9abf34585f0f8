//! An election set's lease source: `lease = { dsn_file = …, … }`, the table
//! where the application's master renews its lease (see
//! [`crate::model::lease`]).

use std::path::PathBuf;
use std::time::Duration;

use super::ConfigError;
use super::raw::RawLease;
use super::validate::{Bounds, bounded_duration};
use crate::model::lease::{KeyPaths, LeaseKey, LeaseSpec};

/// The database a DSN names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    /// MySQL and MariaDB.
    MySql,
}

impl Dialect {
    /// The dialect of a DSN's scheme.
    pub fn of_dsn(dsn: &str) -> Result<Self, String> {
        let scheme = dsn.split_once("://").map(|(s, _)| s).unwrap_or("");
        match scheme {
            "postgres" | "postgresql" => Ok(Dialect::Postgres),
            "mysql" | "mariadb" => Ok(Dialect::MySql),
            _ => Err(
                "the DSN must start with postgres://, postgresql://, mysql:// or mariadb://".into(),
            ),
        }
    }
}

/// Where and how the lease table is read. The DSN and password are read
/// from their files at every connection (a rotated password is taken up
/// without a reload) and never logged: errors name the file, and the
/// database by host and port only.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseSource {
    pub dsn_file: PathBuf,
    pub password_file: Option<PathBuf>,
    /// Table and columns, checked to be plain identifiers (quoted in the
    /// query), so no configuration can inject SQL.
    pub table: String,
    pub key: String,
    pub holder: String,
    pub lease_until: String,
    pub last_seen: String,
    /// One query per interval; a query that takes longer delays the next
    /// (queries never overlap).
    pub interval: Duration,
    /// Connection plus query, enforced by the agent and by the database
    /// (statement timeout).
    pub timeout: Duration,
    /// Most rows read per query.
    pub max_rows: u64,
    /// How often every row is read; the readings between read only the
    /// rows written since (`ZERO`: every reading reads every row).
    pub full_every: Duration,
    /// Rows per query of a pass over every row.
    pub page_rows: u64,
    /// The session time zone: the zone the application's timestamps
    /// without time zone are written in (UTC by default).
    pub time_zone: Option<String>,
}

/// A plain SQL identifier (`schema.table` for the table).
fn identifier(
    key: &str,
    value: Option<&str>,
    default: &str,
    dotted: bool,
) -> Result<String, ConfigError> {
    let value = value.unwrap_or(default);
    let plain = |part: &str| {
        let mut chars = part.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && part.len() <= 64
    };
    let ok = if dotted {
        value.split('.').count() <= 2 && value.split('.').all(plain)
    } else {
        plain(value)
    };
    if ok {
        Ok(value.to_owned())
    } else {
        Err(ConfigError::new(
            key,
            format!(
                "`{value}` is not a plain SQL identifier (letters, digits and `_`, at most 64{}): the agent quotes it, and refuses anything it would have to escape",
                if dotted {
                    "; `schema.table` for another schema"
                } else {
                    ""
                }
            ),
        ))
    }
}

const INTERVAL: Bounds = Bounds {
    min: Duration::from_millis(100),
    max: Duration::from_secs(3600),
    says: "must be between 100ms and 1h",
};

const HOLD: Bounds = Bounds {
    min: Duration::ZERO,
    max: Duration::from_secs(86_400),
    says: "must be between 0s and 24h",
};

/// A count of rows: 1 to 10,000,000, `default` when not given.
fn rows(key: &str, value: Option<u64>, default: u64) -> Result<u64, ConfigError> {
    let n = value.unwrap_or(default);
    if (1..=10_000_000).contains(&n) {
        Ok(n)
    } else {
        Err(ConfigError::new(key, "must be between 1 and 10000000"))
    }
}

/// Validates `lease` of election set `ekey`: the source, and the
/// settings the model judges with.
pub(super) fn validate_lease(
    ekey: &str,
    raw: &RawLease,
    pattern: &crate::model::pattern::TreePattern,
) -> Result<(LeaseSource, LeaseSpec), ConfigError> {
    let key = |field: &str| format!("{ekey}.lease.{field}");
    let dsn_file = dsn_file(ekey, raw)?;
    let interval = bounded_duration(
        &key("interval"),
        raw.interval.as_deref(),
        Duration::from_secs(5),
        &INTERVAL,
    )?;
    let timeout = bounded_duration(
        &key("timeout"),
        raw.timeout.as_deref(),
        Duration::from_secs(2),
        &INTERVAL,
    )?;
    let max_rows = rows(&key("max_rows"), raw.max_rows, 1_000_000)?;
    let full_every = bounded_duration(
        &key("full_every"),
        raw.full_every.as_deref(),
        Duration::from_secs(60),
        &HOLD,
    )?;
    let page_rows = rows(&key("page_rows"), raw.page_rows, 20_000)?;
    let time_zone = time_zone(&key("time_zone"), raw.time_zone.as_ref())?;
    let key_from = key_from(&key("key_from"), raw.key_from.as_deref(), pattern)?;
    let source = LeaseSource {
        dsn_file,
        password_file: raw.password_file.clone(),
        table: identifier(&key("table"), raw.table.as_deref(), "master_lease", true)?,
        key: identifier(&key("key"), raw.key.as_deref(), "bot_id", false)?,
        holder: identifier(&key("holder"), raw.holder.as_deref(), "instance_id", false)?,
        lease_until: identifier(
            &key("lease_until"),
            raw.lease_until.as_deref(),
            "lease_until",
            false,
        )?,
        last_seen: identifier(
            &key("last_seen"),
            raw.last_seen.as_deref(),
            "last_seen",
            false,
        )?,
        interval,
        timeout,
        max_rows,
        full_every,
        page_rows,
        time_zone,
    };
    let paths = KeyPaths::of(&key_from, pattern.segments(), pattern.node());
    let spec = LeaseSpec {
        paths,
        key: key_from,
        split_brain_for: bounded_duration(
            &key("split_brain_for"),
            raw.split_brain_for.as_deref(),
            Duration::from_secs(60),
            &HOLD,
        )?,
        expired_for: bounded_duration(
            &key("expired_for"),
            raw.expired_for.as_deref(),
            Duration::from_secs(120),
            &HOLD,
        )?,
    };
    Ok((source, spec))
}

/// `dsn_file` (required, readable, a DSN of a known database) and
/// `password_file` (readable) of the lease at `ekey`.
fn dsn_file(ekey: &str, raw: &RawLease) -> Result<std::path::PathBuf, ConfigError> {
    let key = |field: &str| format!("{ekey}.lease.{field}");
    let dsn_file = raw.dsn_file.clone().ok_or_else(|| {
        ConfigError::new(
            key("dsn_file"),
            "is required: a file holding the database's DSN, e.g. postgres://agent@db:5432/app?sslmode=verify-full",
        )
    })?;
    let dsn = std::fs::read_to_string(&dsn_file).map_err(|e| {
        ConfigError::new(
            key("dsn_file"),
            format!("cannot read {}: {e}", dsn_file.display()),
        )
    })?;
    Dialect::of_dsn(dsn.trim()).map_err(|m| ConfigError::new(key("dsn_file"), m))?;
    if let Some(p) = &raw.password_file {
        std::fs::metadata(p).map_err(|e| {
            ConfigError::new(
                key("password_file"),
                format!("cannot read {}: {e}", p.display()),
            )
        })?;
    }
    Ok(dsn_file)
}

/// `time_zone`: a zone name or offset the database understands, passed to
/// it as given, so only characters such names hold.
fn time_zone(key: &str, tz: Option<&String>) -> Result<Option<String>, ConfigError> {
    Ok(match tz {
        None => None,
        Some(tz)
            if !tz.is_empty()
                && tz.len() <= 64
                && tz
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_/+-:".contains(c)) =>
        {
            Some(tz.clone())
        }
        Some(tz) => {
            return Err(ConfigError::new(
                key,
                format!(
                    "`{tz}` is not a time zone name or offset (e.g. \"Asia/Shanghai\", \"+08:00\")"
                ),
            ));
        }
    })
}

/// `key_from`: which part of an election's path is its row's key.
fn key_from(
    key: &str,
    key_from: Option<&str>,
    pattern: &crate::model::pattern::TreePattern,
) -> Result<LeaseKey, ConfigError> {
    Ok(match key_from {
        None | Some("name") => LeaseKey::Name,
        Some("path") => LeaseKey::Path,
        Some("capture") => {
            let at: Box<[usize]> = pattern
                .segments()
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_none())
                .map(|(i, _)| i)
                .collect();
            if at.is_empty() {
                return Err(ConfigError::new(
                    key,
                    "\"capture\" takes what the glob's `*` matched, and this path has none: use \"name\" or \"path\"",
                ));
            }
            LeaseKey::Capture(at)
        }
        Some(other) => {
            return Err(ConfigError::new(
                key,
                format!(
                    "`{other}` is not \"name\" (the election node's name), \"capture\" (what the glob's `*` matched) or \"path\" (its whole path)"
                ),
            ));
        }
    })
}
