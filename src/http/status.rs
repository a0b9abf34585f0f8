//! The status page at `/`: per cluster the agent's session, the ensemble
//! members, the elections (those needing attention first), the locks
//! held, the latest events and the alerts being pushed. Server-rendered,
//! no external assets, refreshing itself; every name and identity escaped.
//! `/api/v1/status` is its JSON twin: both come from one
//! [`StatusBody`], so the two cannot disagree, and each table's columns
//! name the JSON fields they show (a test holds them to it).

use std::fmt::Write as _;
use std::time::{Instant, SystemTime};

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};

use super::AppState;
use crate::api::events::EventBody;
use crate::api::status::{
    ClusterStatus, ElectionRow, LeaseStatus, LockRow, MemberRow, PushedAlert, ROWS, StatusBody,
};

/// Everything the page shows.
fn status(state: &AppState) -> StatusBody {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let clusters = state
        .clusters
        .now()
        .iter()
        .map(|c| c.view(|c| ClusterStatus::of(c, now, wall)))
        .collect();
    StatusBody::new(clusters, state.push.snapshot(), &state.telemetry_path, wall)
}

pub(super) async fn json_status(State(state): State<AppState>) -> Response {
    axum::Json(status(&state)).into_response()
}

pub(super) async fn page(State(state): State<AppState>) -> Html<String> {
    Html(render(&status(&state)))
}

/// One cell: what the JSON holds, as the page writes it.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    /// `null` in the JSON.
    Missing,
    Text(String),
    Flag(bool),
    /// An RFC 3339 time: shown with how long ago it was.
    Time(String),
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Missing => "—".to_owned(),
            Cell::Text(s) | Cell::Time(s) => s.clone(),
            Cell::Flag(b) => if *b { "yes" } else { "no" }.to_owned(),
        }
    }
}

fn time(t: Option<&String>) -> Cell {
    t.map_or(Cell::Missing, |t| Cell::Time(t.clone()))
}

/// How much a row needs the reader's eye: a class (colour) and a marker
/// (text, for a reader without colour: a screen reader, a print-out, a
/// colour-blind engineer at 3 a.m.).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attention {
    None,
    /// Trouble now: masterless, a ghost master, a member down, a failing source.
    Alert,
    /// Worth a look: flapping, no standby, a member unverified.
    Warn,
}

impl Attention {
    fn class(self) -> &'static str {
        match self {
            Attention::None => "",
            Attention::Alert => " class=\"alert\"",
            Attention::Warn => " class=\"warn\"",
        }
    }

    fn marker(self) -> &'static str {
        match self {
            Attention::None => "",
            Attention::Alert => "<span class=\"mark\">\u{26a0} ATTENTION</span> ",
            Attention::Warn => "<span class=\"mark\">\u{25b3} check</span> ",
        }
    }
}

/// `t` (RFC 3339) relative to `now`: "12 s ago", "3 min ago", "2 h 5 min ago".
fn ago(t: &str, now: SystemTime) -> Option<String> {
    let at = humantime::parse_rfc3339_weak(t).ok()?;
    let (secs, future) = match now.duration_since(at) {
        Ok(d) => (d.as_secs(), false),
        Err(e) => (e.duration().as_secs(), true),
    };
    let span = match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86400 => match secs % 3600 / 60 {
            0 => format!("{} h", secs / 3600),
            m => format!("{} h {m} min", secs / 3600),
        },
        _ => format!("{} d", secs / 86400),
    };
    Some(if future {
        format!("in {span}")
    } else {
        format!("{span} ago")
    })
}

impl<T: ToString> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Missing, |v| Cell::Text(v.to_string()))
    }
}

/// A row of one of the page's tables. `COLUMNS` pairs each title with the
/// JSON field (a dotted path for nested ones) the cell shows.
trait Row {
    const COLUMNS: &'static [(&'static str, &'static str)];
    fn cells(&self) -> Vec<Cell>;
    fn attention(&self) -> Attention {
        Attention::None
    }
}

fn text(s: &str) -> Cell {
    Cell::Text(s.to_owned())
}

impl Row for PushedAlert {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("alert", "alertname"),
        ("ensemble", "ensemble"),
        ("election", "election"),
        ("since", "since"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            text(self.alertname),
            text(&self.ensemble),
            self.election.as_ref().into(),
            Cell::Time(self.since.clone()),
        ]
    }
}

impl Row for MemberRow {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("server", "server"),
        ("role", "role"),
        ("up", "up"),
        ("zxid lag", "zxid_lag"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            text(&self.server),
            self.role.into(),
            text(self.up),
            self.zxid_lag.into(),
        ]
    }
    fn attention(&self) -> Attention {
        match self.up {
            "up" => Attention::None,
            "unverified" => Attention::Warn,
            _ => Attention::Alert,
        }
    }
}

impl Row for ElectionRow {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("election", "election"),
        ("state", "state"),
        ("master", "master"),
        ("node", "node"),
        ("since", "since"),
        ("switches (1 h)", "switches_last_hour"),
        ("switches", "switches"),
        ("candidates", "candidates"),
        ("ghost", "ghost"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            text(&self.election),
            text(self.state),
            self.master.as_ref().into(),
            self.node.as_ref().into(),
            time(self.since.as_ref()),
            Some(self.switches_last_hour).into(),
            Some(self.switches).into(),
            self.candidates.into(),
            Cell::Flag(self.ghost),
        ]
    }
    fn attention(&self) -> Attention {
        match self.state {
            "ok" => Attention::None,
            "flapping" | "no_standby" => Attention::Warn,
            _ => Attention::Alert,
        }
    }
}

impl Row for LockRow {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("lock", "lock"),
        ("holders", "holders"),
        ("waiters", "waiters"),
        ("held (s)", "held_seconds"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            text(&self.lock),
            Some(self.holders).into(),
            Some(self.waiters).into(),
            self.held_seconds.into(),
        ]
    }
}

impl Row for EventBody {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("at", "at"),
        ("election", "election"),
        ("event", "kind"),
        ("from", "from.identity"),
        ("to", "to.identity"),
        ("cause", "cause"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::Time(self.at.clone()),
            self.election.as_ref().into(),
            text(self.kind),
            self.previous_identity().into(),
            self.to_identity().into(),
            self.cause_label().into(),
        ]
    }
    fn attention(&self) -> Attention {
        match (self.kind, self.state) {
            ("masterless_started" | "ghost_flagged" | "session_lost", _) => Attention::Alert,
            ("lease_verdict", Some("split_brain")) => Attention::Alert,
            ("lease_verdict", Some("expired")) => Attention::Warn,
            _ => Attention::None,
        }
    }
}

impl Row for LeaseStatus {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("tree", "tree"),
        ("last reading", "last_reading"),
        ("rows", "rows"),
        ("unmatched", "unmatched"),
        ("failing", "reason"),
        ("since", "failing_since"),
        ("error", "error"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            text(&self.tree),
            time(self.last_reading.as_ref()),
            self.rows.into(),
            self.unmatched.into(),
            self.reason.into(),
            time(self.failing_since.as_ref()),
            self.error.as_ref().into(),
        ]
    }
    fn attention(&self) -> Attention {
        if self.reason.is_some() {
            Attention::Alert
        } else {
            Attention::None
        }
    }
}

/// Escapes text for HTML element content and attribute values.
fn esc(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// One table of `rows`; times also as how long before `now` they were.
fn table<R: Row>(out: &mut String, id: &str, rows: &[R], now: Option<SystemTime>) {
    let _ = write!(out, "<table id=\"{id}\"><tr>");
    for (title, _) in R::COLUMNS {
        let _ = write!(out, "<th>{title}</th>");
    }
    out.push_str("</tr>");
    for row in rows {
        let attention = row.attention();
        let _ = write!(out, "<tr{}>", attention.class());
        for (i, cell) in row.cells().into_iter().enumerate() {
            out.push_str("<td>");
            if i == 0 {
                out.push_str(attention.marker());
            }
            match &cell {
                Cell::Time(t) => {
                    out.push_str("<time datetime=\"");
                    esc(out, t);
                    out.push_str("\">");
                    esc(out, t);
                    out.push_str("</time>");
                    if let Some(ago) = now.and_then(|now| ago(t, now)) {
                        let _ = write!(out, " <span class=\"ago\">({ago})</span>");
                    }
                }
                cell => esc(out, &cell.text()),
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:90%}th{background:#f2f2f2}\
h2{margin-top:2em}.muted,.ago{color:#777}tr.alert td{background:#fde0dc}tr.warn td{background:#fff3cd}\
.mark{font-weight:bold}tr.alert .mark,p.alert .mark{color:#b3261e}tr.warn .mark{color:#7a5a00}";

fn render(status: &StatusBody) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"5\">");
    let _ = write!(
        out,
        "<title>zk-election-exporter</title><style>{STYLE}</style></head><body>"
    );
    out.push_str("<h1>zk-election-exporter</h1><p class=\"muted\">Who is master of every ZooKeeper election, and how often it moves. Refreshes every 5 s; generated ");
    esc(&mut out, &status.generated);
    out.push_str(".</p>");
    let now = humantime::parse_rfc3339_weak(&status.generated).ok();
    if status.pushing {
        out.push_str("<h2>Alerts pushed to Alertmanager</h2>");
        table(&mut out, "alerts", &status.pushed_alerts, now);
    }
    for c in &status.clusters {
        render_cluster(&mut out, c, now);
    }
    render_endpoints(&mut out, &status.telemetry_path);
    out
}

fn render_cluster(out: &mut String, c: &ClusterStatus, now: Option<SystemTime>) {
    out.push_str("<h2>Cluster ");
    esc(out, &c.cluster);
    let attention = if c.session == "connected" {
        Attention::None
    } else {
        Attention::Alert
    };
    let _ = write!(
        out,
        "</h2><p{}>{}Session: ",
        attention.class(),
        attention.marker()
    );
    esc(out, c.session);
    if let Some(error) = &c.session_error {
        out.push_str(" (");
        esc(out, error);
        out.push(')');
    }
    out.push_str("</p><h3>Ensemble</h3>");
    table(out, "members", &c.members, now);
    let _ = write!(
        out,
        "<h3>Elections</h3><p class=\"muted\">{} shown of {} watched, those needing attention first.</p>",
        c.elections_shown_of.min(ROWS),
        c.elections_watched
    );
    table(out, "elections", &c.elections, now);
    if !c.leases.is_empty() {
        out.push_str("<h3>Lease tables</h3>");
        table(out, "leases", &c.leases, now);
    }
    out.push_str("<h3>Locks held</h3>");
    table(out, "locks", &c.locks_held, now);
    out.push_str("<h3>Latest events</h3><p class=\"muted\">Elections and the session; lock hand-overs and group members are in <a href=\"/api/v1/events?kind=lock_acquired,lock_held_long,member_joined,member_left\">/api/v1/events</a>.</p>");
    table(out, "events", &c.events, now);
}

fn render_endpoints(out: &mut String, metrics: &str) {
    out.push_str("<h2>Endpoints</h2><ul><li><a href=\"");
    esc(out, metrics);
    out.push_str("\">");
    esc(out, metrics);
    out.push_str("</a>: Prometheus metrics</li>\
<li><a href=\"/ready\">/ready</a>: 200 when every session is connected and every tree synced</li>\
<li><a href=\"/healthz\">/healthz</a>: process is alive</li>\
<li><a href=\"/api/v1/status\">/api/v1/status</a>: this page as JSON</li>\
<li><a href=\"/api/v1/trees\">/api/v1/trees</a>: watched elections and groups (JSON)</li>\
<li><code>/api/v1/elections/PATH</code>: one election, exported or not: master, since when, switches (JSON)</li>\
<li><a href=\"/api/v1/events\">/api/v1/events</a>: the timeline, newest first (<code>?cluster=&amp;election=&amp;kind=&amp;since=&amp;until=&amp;limit=</code>)</li>\
</ul></body></html>");
}

#[cfg(test)]
mod tests;
