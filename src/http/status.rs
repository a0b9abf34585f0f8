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
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Missing => "—".to_owned(),
            Cell::Text(s) => s.clone(),
            Cell::Flag(b) => if *b { "yes" } else { "no" }.to_owned(),
        }
    }
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
}

fn text(s: &str) -> Cell {
    Cell::Text(s.to_owned())
}

impl Row for PushedAlert {
    const COLUMNS: &'static [(&'static str, &'static str)] = &[
        ("alert", "alertname"),
        ("cluster", "cluster"),
        ("election", "election"),
        ("since", "since"),
    ];
    fn cells(&self) -> Vec<Cell> {
        vec![
            text(self.alertname),
            text(&self.cluster),
            self.election.as_ref().into(),
            text(&self.since),
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
            self.since.as_ref().into(),
            Some(self.switches_last_hour).into(),
            Some(self.switches).into(),
            self.candidates.into(),
            Cell::Flag(self.ghost),
        ]
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
            text(&self.at),
            self.election.as_ref().into(),
            text(self.kind),
            self.from_identity().into(),
            self.to_identity().into(),
            self.cause_label().into(),
        ]
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
            self.last_reading.as_ref().into(),
            self.rows.into(),
            self.unmatched.into(),
            self.reason.into(),
            self.failing_since.as_ref().into(),
            self.error.as_ref().into(),
        ]
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

/// One table of `rows`.
fn table<R: Row>(out: &mut String, id: &str, rows: &[R]) {
    let _ = write!(out, "<table id=\"{id}\"><tr>");
    for (title, _) in R::COLUMNS {
        let _ = write!(out, "<th>{title}</th>");
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row.cells() {
            out.push_str("<td>");
            esc(out, &cell.text());
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:90%}th{background:#f2f2f2}\
h2{margin-top:2em}.muted{color:#777}";

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
    if status.pushing {
        out.push_str("<h2>Alerts pushed to Alertmanager</h2>");
        table(&mut out, "alerts", &status.pushed_alerts);
    }
    for c in &status.clusters {
        render_cluster(&mut out, c);
    }
    render_endpoints(&mut out, &status.telemetry_path);
    out
}

fn render_cluster(out: &mut String, c: &ClusterStatus) {
    out.push_str("<h2>Cluster ");
    esc(out, &c.cluster);
    out.push_str("</h2><p>Session: ");
    esc(out, c.session);
    if let Some(error) = &c.session_error {
        out.push_str(" (");
        esc(out, error);
        out.push(')');
    }
    out.push_str("</p><h3>Ensemble</h3>");
    table(out, "members", &c.members);
    let _ = write!(
        out,
        "<h3>Elections</h3><p class=\"muted\">{} shown of {} watched, those needing attention first.</p>",
        c.elections_shown_of.min(ROWS),
        c.elections_watched
    );
    table(out, "elections", &c.elections);
    if !c.leases.is_empty() {
        out.push_str("<h3>Lease tables</h3>");
        table(out, "leases", &c.leases);
    }
    out.push_str("<h3>Locks held</h3>");
    table(out, "locks", &c.locks_held);
    out.push_str("<h3>Latest events</h3>");
    table(out, "events", &c.events);
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
<li><a href=\"/api/v1/events\">/api/v1/events</a>: the timeline, newest first (<code>?cluster=&amp;election=&amp;since=&amp;limit=</code>)</li>\
</ul></body></html>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::events::MasterBody;

    fn hostile() -> StatusBody {
        let master = MasterBody {
            identity: "<script>document.title='pwned'</script>".into(),
            node: "n_0000000001".into(),
            session: "0x1".into(),
        };
        let event = EventBody {
            at: "t".into(),
            cause: Some(None),
            cluster: "c".into(),
            election: Some("/bots/<i>".into()),
            from: Some(None),
            held_seconds: None,
            holder: None,
            kind: "switch",
            master: None,
            masterless_seconds: None,
            reason: None,
            seq: 1,
            state: None,
            to: Some(master),
        };
        StatusBody {
            clusters: vec![ClusterStatus {
                cluster: "<script>alert(1)</script>".into(),
                elections: vec![ElectionRow {
                    candidates: Some(2),
                    election: "/bots/<img src=x onerror=alert(1)>".into(),
                    ghost: false,
                    master: Some("<script>document.title='pwned'</script>".into()),
                    node: Some("n_0000000001".into()),
                    since: None,
                    state: "ok",
                    switches: 7,
                    switches_last_hour: 3,
                }],
                elections_shown_of: 1,
                elections_watched: 1,
                events: vec![event],
                leases: vec![LeaseStatus {
                    error: Some("<b>refused</b>".into()),
                    failing_since: Some("t".into()),
                    last_reading: None,
                    reason: Some("connect"),
                    rows: None,
                    tree: "/bots/<*>".into(),
                    unmatched: Some(3),
                }],
                locks_held: vec![LockRow {
                    held_seconds: Some(12),
                    holders: 1,
                    lock: "/locks/<b>".into(),
                    waiters: 4,
                }],
                members: vec![MemberRow {
                    role: Some("leader"),
                    server: "127.0.0.1:2181".into(),
                    up: "up",
                    zxid_lag: None,
                }],
                session: "connected",
                session_error: None,
                session_id: Some("0x2".into()),
            }],
            generated: "now".into(),
            pushed_alerts: vec![PushedAlert {
                alertname: "ZooKeeperElectionNoMaster",
                cluster: "<b>x</b>".into(),
                election: Some("/e\"'".into()),
                since: "t".into(),
            }],
            pushing: true,
            telemetry_path: "/metrics".into(),
        }
    }

    #[test]
    fn hostile_text_is_escaped_everywhere() {
        let html = render(&hostile());
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>x"), "{html}");
        assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
        assert!(html.contains("/e&quot;&#39;"));
    }

    /// The JSON value at a dotted `path`, as the page would write it.
    fn json_text(row: &serde_json::Value, path: &str) -> Option<String> {
        // A null on the way (a switch `from` nobody) shows as null.
        let v = path
            .split('.')
            .try_fold(row, |v, k| if v.is_null() { Some(v) } else { v.get(k) })?;
        Some(match v {
            serde_json::Value::Null => "—".to_owned(),
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
            other => other.to_string(),
        })
    }

    /// Every cell shows the JSON field its column names: a field renamed in
    /// `/api/v1/status` (or a column pointed at the wrong one) fails here.
    fn cells_follow_their_json_fields<R: Row + serde::Serialize>(rows: &[R]) {
        assert!(!rows.is_empty());
        for row in rows {
            let json = serde_json::to_value(row).unwrap();
            for ((title, key), cell) in R::COLUMNS.iter().zip(row.cells()) {
                let shown = json_text(&json, key)
                    .unwrap_or_else(|| panic!("column {title:?}: no field {key:?} in {json}"));
                assert_eq!(shown, cell.text(), "column {title:?} ({key})");
            }
            assert_eq!(R::COLUMNS.len(), row.cells().len());
        }
    }

    #[test]
    fn every_column_shows_the_json_field_it_names() {
        let status = hostile();
        let c = &status.clusters[0];
        cells_follow_their_json_fields(&status.pushed_alerts);
        cells_follow_their_json_fields(&c.members);
        cells_follow_their_json_fields(&c.elections);
        cells_follow_their_json_fields(&c.locks_held);
        cells_follow_their_json_fields(&c.events);
        cells_follow_their_json_fields(&c.leases);
    }
}
