//! The lease source: one task per election set with a `lease`, reading the
//! application's lease table once per interval and handing each reading
//! (or failure) to the set's model.
//!
//! One query per set per interval, on one connection kept between
//! readings and dropped after any failure. Every `full_every` (and first)
//! the query reads every row; in between only the rows whose `last_seen`
//! is recent, which the model lays over the rows it has: a heartbeat
//! table of a million rows costs what its writers changed, and a deleted
//! row or one written with an old `last_seen` is seen at the next reading
//! of every row. The database computes the
//! times (`lease_until - now()`, `now() - last_seen`), so no clock of
//! another host enters; it cuts the strings (a huge holder costs the agent
//! no more than the identity cap); the row cap is a `LIMIT`. The timeout
//! is the agent's (connection plus query) and the database's own
//! statement timeout, so a hung query ends on both sides.
//!
//! The DSN and password come from files read at every connection, and
//! never reach a log, an error or `/api`: messages name the database by
//! scheme, host, port and name only.

use futures::TryStreamExt;
use sqlx::AnyConnection;
use sqlx::any::AnyConnectOptions;
use sqlx::{ConnectOptions, Connection, Row};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use crate::config::{Dialect, LeaseSource};
use crate::model::lease::{Failure, LeaseReading};
use crate::model::tree::TreeId;
use crate::model::{Now, SharedCluster};

/// Characters of a key the query returns: one more than the longest key
/// kept, so a longer one is seen to be longer.
pub const KEY_CHARS: usize = 512;

/// Characters of a holder the query returns: twice the identity cap, room
/// for the whitespace the cleaning trims.
const HOLDER_CHARS: usize = 2 * crate::model::candidate::MAX_IDENTITY_CHARS;

/// One set's lease source.
#[derive(Debug, Clone)]
pub struct LeaseJob {
    pub cluster: String,
    pub tree: TreeId,
    /// The set's glob, for logs.
    pub pattern: String,
    pub source: LeaseSource,
}

/// A failure with what to tell the operator.
type Failed = (Failure, String);

/// Quotes a checked identifier (`schema.table` per part).
fn quoted(dialect: Dialect, ident: &str) -> String {
    let q = match dialect {
        Dialect::Postgres => '"',
        Dialect::MySql => '`',
    };
    ident
        .split('.')
        .map(|p| format!("{q}{p}{q}"))
        .collect::<Vec<_>>()
        .join(".")
}

/// How far before the last reading a reading of what changed looks back,
/// beyond the time between the two and the timeout: room for a write whose
/// transaction committed after the last reading's snapshot, and for an
/// application writing `last_seen` by a clock somewhat behind the
/// database's. A write older than this when it commits is seen at the next
/// reading of every row.
pub const CHANGED_MARGIN: Duration = Duration::from_secs(10);

/// The one query of a set: key, holder, seconds until the lease ends and
/// seconds since the holder wrote, all computed by the database. With
/// `since`, only the rows whose `last_seen` lies less than that before the
/// database's `now()` (an index on `last_seen` makes it a range scan).
pub fn query(dialect: Dialect, s: &LeaseSource, since: Option<Duration>) -> String {
    let q = |i: &str| quoted(dialect, i);
    let (key, holder, until, seen, table) = (
        q(&s.key),
        q(&s.holder),
        q(&s.lease_until),
        q(&s.last_seen),
        q(&s.table),
    );
    let limit = s.max_rows + 1;
    let key_chars = KEY_CHARS + 1;
    // Whole microseconds: a number, never text, goes into the statement.
    let micros = since.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    match dialect {
        Dialect::Postgres => format!(
            "SELECT SUBSTRING(CAST({key} AS TEXT) FROM 1 FOR {key_chars}), \
             SUBSTRING(CAST({holder} AS TEXT) FROM 1 FOR {HOLDER_CHARS}), \
             CAST(EXTRACT(EPOCH FROM ({until} - now())) AS DOUBLE PRECISION), \
             CAST(EXTRACT(EPOCH FROM (now() - {seen})) AS DOUBLE PRECISION) \
             FROM {table}{} LIMIT {limit}",
            micros.map_or(String::new(), |us| format!(
                " WHERE {seen} >= now() - {us} * interval '1 microsecond'"
            ))
        ),
        Dialect::MySql => format!(
            "SELECT SUBSTRING(CAST({key} AS CHAR), 1, {key_chars}), \
             SUBSTRING(CAST({holder} AS CHAR), 1, {HOLDER_CHARS}), \
             TIMESTAMPDIFF(MICROSECOND, NOW(6), {until}) / 1e6, \
             TIMESTAMPDIFF(MICROSECOND, {seen}, NOW(6)) / 1e6 \
             FROM {table}{} LIMIT {limit}",
            micros.map_or(String::new(), |us| format!(
                " WHERE {seen} >= NOW(6) - INTERVAL {us} MICROSECOND"
            ))
        ),
    }
}

/// When the source last read, and last read every row.
#[derive(Debug, Default)]
struct Readings {
    last: Option<std::time::Instant>,
    last_full: Option<std::time::Instant>,
}

impl Readings {
    /// How far back the reading starting `now` looks: `None` for every
    /// row (the first reading, the periodic one, and after a reading of
    /// what changed that hit the row cap).
    fn since(&self, s: &LeaseSource, now: std::time::Instant) -> Option<Duration> {
        let (last, full) = (self.last?, self.last_full?);
        if s.full_every.is_zero() || now.saturating_duration_since(full) >= s.full_every {
            return None;
        }
        Some(now.saturating_duration_since(last) + s.timeout + CHANGED_MARGIN)
    }

    fn read(&mut self, reading: &LeaseReading, started: std::time::Instant) {
        self.last = Some(started);
        if reading.full {
            self.last_full = Some(started);
        } else if !reading.complete() {
            self.last_full = None;
        }
    }
}

/// What the session runs once after connecting: the statement timeout
/// and the time zone. MariaDB and MySQL name the timeout differently; each
/// refuses the other's, so both are tried.
fn session_setup(dialect: Dialect, s: &LeaseSource) -> Vec<Vec<String>> {
    let ms = s.timeout.as_millis().max(1);
    let mut steps = match dialect {
        Dialect::Postgres => vec![vec![format!("SET statement_timeout = {ms}")]],
        Dialect::MySql => vec![vec![
            format!("SET SESSION max_statement_time = {:.3}", ms as f64 / 1000.0),
            format!("SET SESSION max_execution_time = {ms}"),
        ]],
    };
    if let Some(tz) = &s.time_zone {
        steps.push(vec![match dialect {
            Dialect::Postgres => format!("SET TIME ZONE '{tz}'"),
            Dialect::MySql => format!("SET time_zone = '{tz}'"),
        }]);
    }
    steps
}

/// The database a DSN names, without user or password: for messages.
pub fn redacted(dsn: &str) -> String {
    match url::Url::parse(dsn) {
        Ok(u) => format!(
            "{}://{}{}{}",
            u.scheme(),
            u.host_str().unwrap_or("localhost"),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "the configured database".into(),
    }
}

/// Reads the DSN (and password) files into connection options.
fn options(s: &LeaseSource) -> Result<(Dialect, AnyConnectOptions, String), Failed> {
    let config = |m: String| (Failure::Config, m);
    let dsn = std::fs::read_to_string(&s.dsn_file).map_err(|e| {
        config(format!(
            "cannot read the DSN file {}: {e}",
            s.dsn_file.display()
        ))
    })?;
    let dsn = dsn.trim();
    let dialect =
        Dialect::of_dsn(dsn).map_err(|m| config(format!("{}: {m}", s.dsn_file.display())))?;
    let mut url = url::Url::parse(dsn).map_err(|e| {
        config(format!(
            "the DSN in {} does not parse: {e}",
            s.dsn_file.display()
        ))
    })?;
    let target = redacted(dsn);
    if let Some(p) = &s.password_file {
        let password = std::fs::read_to_string(p).map_err(|e| {
            config(format!(
                "cannot read the password file {}: {e}",
                p.display()
            ))
        })?;
        let password = password.trim_end_matches(['\n', '\r']);
        url.set_password(Some(password)).map_err(|()| {
            config(format!(
                "the DSN in {} cannot carry a password",
                s.dsn_file.display()
            ))
        })?;
    }
    let options = AnyConnectOptions::from_url(&url)
        .map_err(|e| {
            config(format!(
                "the DSN in {} is not usable: {}",
                s.dsn_file.display(),
                scrub(&e.to_string(), &url)
            ))
        })?
        .disable_statement_logging();
    Ok((dialect, options, target))
}

/// An error's text without the DSN's password, should a driver quote it.
fn scrub(message: &str, url: &url::Url) -> String {
    match url.password() {
        Some(p) if !p.is_empty() => message.replace(p, "***"),
        _ => message.to_owned(),
    }
}

/// One connection and the dialect it speaks.
struct Open {
    dialect: Dialect,
    conn: AnyConnection,
    target: String,
}

async fn connect(s: &LeaseSource) -> Result<Open, Failed> {
    let (dialect, options, target) = options(s)?;
    let mut conn = AnyConnection::connect_with(&options).await.map_err(|e| {
        (
            Failure::Connect,
            format!("cannot connect to {target}: {}", first_line(&e)),
        )
    })?;
    for alternatives in session_setup(dialect, s) {
        let mut last = None;
        for statement in &alternatives {
            match sqlx::raw_sql(sqlx::AssertSqlSafe(statement.as_str()))
                .execute(&mut conn)
                .await
            {
                Ok(_) => {
                    last = None;
                    break;
                }
                Err(e) => last = Some(first_line(&e)),
            }
        }
        if let Some(e) = last {
            return Err((
                Failure::Query,
                format!("{target} refused `{}`: {e}", alternatives.join("` and `")),
            ));
        }
    }
    Ok(Open {
        dialect,
        conn,
        target,
    })
}

fn first_line(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or("").to_owned();
    line.chars().take(300).collect()
}

/// Runs the set's query on `open` (of the rows written within `since`
/// when given), turning rows into a reading.
async fn read(
    open: &mut Open,
    s: &LeaseSource,
    now: Now,
    since: Option<Duration>,
) -> Result<LeaseReading, Failed> {
    let sql = query(open.dialect, s, since);
    let mut reading = match since {
        None => LeaseReading::at(now),
        Some(_) => LeaseReading::changed_at(now),
    };
    let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(&mut open.conn);
    let mut seen: u64 = 0;
    while let Some(row) = rows.try_next().await.map_err(|e| {
        (
            failure_of(&e),
            format!(
                "the lease query on {} failed: {}",
                open.target,
                first_line(&e)
            ),
        )
    })? {
        seen += 1;
        if seen > s.max_rows {
            reading.reject(crate::model::lease::Reject::OverCap);
            break;
        }
        let key = row.try_get::<Option<String>, _>(0).ok().flatten().map(|k| {
            let cut = k.chars().count() > KEY_CHARS;
            (k, cut)
        });
        let holder = row.try_get::<Option<String>, _>(1).ok().flatten();
        let remaining = row.try_get::<Option<f64>, _>(2).ok().flatten();
        let age = row.try_get::<Option<f64>, _>(3).ok().flatten();
        reading.add(key, holder, remaining, age);
    }
    drop(rows);
    reading.returned = seen;
    reading.took = now.mono.elapsed();
    Ok(reading)
}

/// Reads the lease table of `job` every interval until `stop`.
pub async fn run(job: LeaseJob, state: SharedCluster, mut stop: watch::Receiver<bool>) {
    sqlx::any::install_default_drivers();
    let s = &job.source;
    let mut open: Option<Open> = None;
    let mut failing = false;
    let mut readings = Readings::default();
    let mut ticks = tokio::time::interval(s.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        let now = Now::current();
        let since = readings.since(s, now.mono);
        let attempt = async {
            if open.is_none() {
                open = Some(connect(s).await?);
            }
            let conn = open.as_mut().expect("connected above");
            read(conn, s, now, since).await
        };
        let result = match tokio::time::timeout(s.timeout, attempt).await {
            Ok(r) => r,
            Err(_) => Err((
                Failure::Timeout,
                format!(
                    "the lease query did not complete within {} (lease.timeout)",
                    humantime::format_duration(s.timeout)
                ),
            )),
        };
        match result {
            Ok(reading) => {
                if failing {
                    info!(cluster = %job.cluster, tree = %job.pattern, "lease source reads again");
                    failing = false;
                }
                readings.read(&reading, now.mono);
                state.lease_succeeded(job.tree, reading, now);
            }
            Err((why, message)) => {
                // A connection that failed or timed out mid-query is in an
                // unknown state: the next attempt connects anew.
                open = None;
                failing = true;
                if state.lease_failed(job.tree, why, message.clone(), now) {
                    warn!(cluster = %job.cluster, tree = %job.pattern, reason = why.label(), "lease source gives no reading: {message}; {}; nothing is judged from it until it reads again", hint(why));
                }
            }
        }
    }
}

/// What a failed query was: the connection breaking (the server gone, a
/// TLS or protocol error) is a connection failure, not the query's; the
/// database's statement timeout is a timeout; the database refusing the
/// statement is the query's.
fn failure_of(e: &sqlx::Error) -> Failure {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Failure::Connect,
        // The database's own statement timeout: PostgreSQL's
        // query_canceled, MariaDB's and MySQL's statement time limits.
        sqlx::Error::Database(db)
            if matches!(db.code().as_deref(), Some("57014" | "70100"))
                || db.message().contains("max_statement_time")
                || db.message().contains("maximum statement execution time") =>
        {
            Failure::Timeout
        }
        _ => Failure::Query,
    }
}

/// What to do about a failure, for the log line that reports it.
fn hint(why: Failure) -> &'static str {
    match why {
        Failure::Config => "fix lease.dsn_file or lease.password_file",
        Failure::Connect => {
            "check the DSN's host, port and TLS parameters, and the user's password and grants"
        }
        Failure::Query => {
            "check lease.table and its columns (lease_until and last_seen must be timestamps) and that the user may SELECT them"
        }
        Failure::Timeout => {
            "the database answers too slowly: check its load, or raise lease.timeout"
        }
    }
}

/// The lease sources of a cluster's election sets.
pub fn jobs(cluster: &crate::config::ClusterConfig) -> Vec<LeaseJob> {
    cluster
        .elections
        .iter()
        .zip(cluster.tree_ids())
        .filter_map(|(e, id)| {
            Some(LeaseJob {
                cluster: cluster.name.clone(),
                tree: id,
                pattern: e.pattern.as_str().to_owned(),
                source: e.lease.clone()?,
            })
        })
        .collect()
}
