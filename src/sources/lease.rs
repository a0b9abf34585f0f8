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

mod query;

use crate::model::lease::{Failure, LeaseReading, Page};
use crate::model::tree::TreeId;
use crate::model::{Now, SharedCluster};
pub use query::{Rows, query};

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

/// How far before the last reading a reading of what changed looks back,
/// beyond the time between the two and the timeout: room for a write whose
/// transaction committed after the last reading's snapshot, and for an
/// application writing `last_seen` by a clock somewhat behind the
/// database's. A write older than this when it commits is seen at the next
/// reading of every row.
pub const CHANGED_MARGIN: Duration = Duration::from_secs(3);

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
        let full = self.last.and(self.last_full)?;
        if s.full_every.is_zero() || now.saturating_duration_since(full) >= s.full_every {
            return None;
        }
        Some(self.window(s, now))
    }

    /// How far back a reading of what changed starting at `now` looks:
    /// the time since the last reading, the timeout and the margin.
    fn window(&self, s: &LeaseSource, now: std::time::Instant) -> Duration {
        let since = self
            .last
            .map_or(Duration::ZERO, |l| now.saturating_duration_since(l));
        since + s.timeout + CHANGED_MARGIN
    }

    /// A reading of what changed started at `started` succeeded; one that
    /// hit the row cap missed rows, so the next reading reads every row.
    fn changed(&mut self, reading: &LeaseReading, started: std::time::Instant) {
        self.last = Some(started);
        if reading
            .rejected
            .contains_key(&crate::model::lease::Reject::OverCap)
        {
            self.last_full = None;
        }
    }

    /// A pass over every row begun at `started` ended: what changed since
    /// is read from there (a row written during the pass after its page
    /// was read is newer than the pass's start).
    fn passed(&mut self, started: std::time::Instant) {
        self.last = Some(started);
        self.last_full = Some(started);
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

/// Runs the set's query for `rows` on `open`, turning rows into a
/// reading; also the last key read (a page's bound for the next). At most
/// `room` rows are taken; past it the reading is marked over the cap.
async fn read(
    open: &mut Open,
    s: &LeaseSource,
    now: Now,
    rows: &Rows<'_>,
    room: u64,
) -> Result<(LeaseReading, Option<String>), Failed> {
    let sql = query(open.dialect, s, rows);
    let mut reading = match rows {
        Rows::Page(..) => LeaseReading::page_at(now, Page::default()),
        Rows::Changed(_) => LeaseReading::changed_at(now),
    };
    let mut statement = sqlx::query(sqlx::AssertSqlSafe(sql));
    if let Rows::Page(Some(after), _) = rows {
        statement = statement.bind(after.to_string());
    }
    let mut stream = statement.fetch(&mut open.conn);
    let mut seen: u64 = 0;
    let mut last_key = None;
    while let Some(row) = stream.try_next().await.map_err(|e| {
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
        if seen > room {
            reading.reject(crate::model::lease::Reject::OverCap);
            break;
        }
        let key = row.try_get::<Option<String>, _>(0).ok().flatten();
        last_key.clone_from(&key);
        let key = key.map(|k| {
            let cut = k.chars().count() > KEY_CHARS;
            (k, cut)
        });
        let holder = row.try_get::<Option<String>, _>(1).ok().flatten();
        let remaining = row.try_get::<Option<f64>, _>(2).ok().flatten();
        let age = row.try_get::<Option<f64>, _>(3).ok().flatten();
        reading.add(key, holder, remaining, age);
    }
    drop(stream);
    reading.returned = seen.min(room);
    reading.took = now.mono.elapsed();
    Ok((reading, last_key))
}

/// One set's source between its queries.
struct Source<'a> {
    job: &'a LeaseJob,
    state: &'a SharedCluster,
    open: Option<Open>,
    failing: bool,
    readings: Readings,
}

impl Source<'_> {
    /// One query for `rows` within the timeout; a failure is reported
    /// (logged when new) and `None` returned.
    async fn query(
        &mut self,
        now: Now,
        rows: &Rows<'_>,
        room: u64,
    ) -> Option<(LeaseReading, Option<String>)> {
        let s = &self.job.source;
        let open = &mut self.open;
        let attempt = async {
            if open.is_none() {
                *open = Some(connect(s).await?);
            }
            let conn = open.as_mut().expect("connected above");
            read(conn, s, now, rows, room).await
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
            Ok(read) => {
                if self.failing {
                    info!(cluster = %self.job.cluster, tree = %self.job.pattern, "lease source reads again");
                    self.failing = false;
                }
                Some(read)
            }
            Err((why, message)) => {
                // A connection that failed or timed out mid-query is in an
                // unknown state: the next attempt connects anew.
                self.open = None;
                self.failing = true;
                if self
                    .state
                    .lease_failed(self.job.tree, why, message.clone(), now)
                {
                    warn!(cluster = %self.job.cluster, tree = %self.job.pattern, reason = why.label(), "lease source gives no reading: {message}; {}; nothing is judged from it until it reads again", hint(why));
                }
                None
            }
        }
    }

    /// A reading of the rows written since the last reading; false when
    /// it failed.
    async fn changed(&mut self, at: std::time::Instant) -> bool {
        let s = &self.job.source;
        let now = Now::current();
        let since = self.readings.window(s, at);
        match self.query(now, &Rows::Changed(since), s.max_rows).await {
            Some((reading, _)) => {
                self.readings.changed(&reading, now.mono);
                self.state.lease_succeeded(self.job.tree, reading, now);
                true
            }
            None => false,
        }
    }

    /// A pass over every row, a page per query, each handed to the model
    /// as it arrives; a failed page ends the pass (the next begins anew).
    async fn pass(&mut self, stop: &watch::Receiver<bool>) {
        let s = &self.job.source;
        let began = Now::current().mono;
        // What changed since the last reading first: while the pages come,
        // the rows of the pages not yet read are as current as between
        // any two readings.
        if self.readings.last.is_some() && !self.changed(began).await {
            return;
        }
        let (mut after, mut first, mut total) = (None::<String>, true, 0u64);
        loop {
            let now = Now::current();
            // A page of `page_rows` (each read in key order after the
            // last key of the one before, so that no single query reads a
            // table of a million rows against the timeout); the one that
            // may reach the cap asks
            // for one row more, to see that the table goes past it.
            let left = s.max_rows - total;
            let (ask, rows) = if left <= s.page_rows {
                (left, Rows::Page(after.as_deref(), left + 1))
            } else {
                (s.page_rows, Rows::Page(after.as_deref(), s.page_rows))
            };
            let Some((mut reading, last_key)) = self.query(now, &rows, left).await else {
                return;
            };
            total += reading.returned;
            let over = reading
                .rejected
                .contains_key(&crate::model::lease::Reject::OverCap);
            // The last page: fewer rows than asked, the cap, or a bound
            // that did not move (a key cut to its limit read again).
            let last = reading.returned < ask || over || last_key.is_none() || last_key == after;
            reading.page = Some(Page { first, last });
            self.state.lease_succeeded(self.job.tree, reading, now);
            if last {
                self.readings.passed(began);
                return;
            }
            if *stop.borrow() {
                return;
            }
            after = last_key;
            first = false;
        }
    }
}

/// Reads the lease table of `job` every interval until `stop`.
pub async fn run(job: LeaseJob, state: SharedCluster, mut stop: watch::Receiver<bool>) {
    sqlx::any::install_default_drivers();
    let s = &job.source;
    let mut source = Source {
        job: &job,
        state: &state,
        open: None,
        failing: false,
        readings: Readings::default(),
    };
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
        if source.readings.since(s, now.mono).is_some() {
            source.changed(now.mono).await;
        } else {
            source.pass(&stop).await;
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
