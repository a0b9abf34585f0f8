//! The status page at `/`: per cluster the agent's session, the ensemble
//! members, the elections (those needing attention first), the locks
//! held, the latest events and the alerts being pushed. Server-rendered,
//! no external assets, refreshing itself; every name and identity escaped.
//! `/api/v1/status` is its JSON twin: the page is rendered from that JSON,
//! so the two cannot disagree.

use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use serde_json::{Value, json};

use super::AppState;
use super::events::event_json;
use crate::model::ClusterState;
use crate::model::attention::State as ElectionState;

/// Rows per table: the page stays readable; the JSON API has the rest.
const ROWS: usize = 200;
const EVENTS: usize = 20;

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn cluster_status(c: &ClusterState, now: Instant, wall: SystemTime) -> Value {
    let members: Vec<Value> = c.ensemble.as_ref().map_or_else(Vec::new, |e| {
        let newest = e.servers().filter_map(|(_, h)| h.zxid()).max().unwrap_or(0);
        e.servers()
            .map(|(server, h)| {
                let up = if h.unverified() {
                    "unverified"
                } else if h.up() {
                    "up"
                } else {
                    "down"
                };
                let lag = h
                    .zxid()
                    .filter(|z| z >> 32 == newest >> 32)
                    .map(|z| (newest & 0xffff_ffff) - (z & 0xffff_ffff));
                json!({
                    "server": server,
                    "role": h.role().map(|r| r.label()),
                    "up": up,
                    "zxid_lag": lag,
                })
            })
            .collect()
    });
    let hour_ago = wall - Duration::from_secs(3600);
    let survey = c.survey(now);
    let mut elections: Vec<(ElectionState, Value)> = survey
        .exported
        .iter()
        .map(|(tree, path, election)| {
            let tree = tree.as_elections();
            let state = tree.map_or(ElectionState::Ok, |t| c.state_of(t, election, now));
            let switches_hour = c
                .events
                .newest_first()
                .take_while(|e| e.at >= hour_ago)
                .filter(|e| e.election == *path && e.what.kind() == "switch")
                .count();
            let master = election.master();
            (
                state,
                json!({
                    "election": path,
                    "state": state.label(),
                    "master": master.as_ref().map(|m| m.identity),
                    "node": master.as_ref().map(|m| m.node),
                    "since": master.as_ref().map(|m| rfc3339(m.since)),
                    "switches_last_hour": switches_hour,
                    "switches": election.changes(),
                    "candidates": tree.and_then(|t| c.candidates_of(t, election)),
                    "ghost": state == ElectionState::Ghost,
                }),
            )
        })
        .collect();
    // Those needing attention first, then path order.
    elections.sort_by_key(|(state, _)| *state);
    let total = elections.len();
    let locks: Vec<Value> = c
        .trees
        .iter()
        .filter_map(|t| t.as_locks())
        .flat_map(|l| l.locks())
        .filter(|(_, lock)| lock.held())
        .take(ROWS)
        .map(|(path, lock)| {
            json!({
                "lock": path,
                "holders": lock.holders(),
                "waiters": lock.waiters(),
                "held_seconds": lock.hold(now).map(|d| d.as_secs()),
            })
        })
        .collect();
    let events: Vec<Value> = c
        .events
        .newest_first()
        .take(EVENTS)
        .map(|e| event_json(&c.name, e))
        .collect();
    json!({
        "cluster": c.name,
        "session": c.session.state.label(),
        "session_id": c.session.id.map(|id| format!("0x{id:x}")),
        "session_error": c.session.last_error,
        "members": members,
        "elections": elections.into_iter().take(ROWS).map(|(_, v)| v).collect::<Vec<_>>(),
        "elections_shown_of": total,
        "elections_watched": survey.total,
        "locks_held": locks,
        "events": events,
    })
}

/// Everything the page shows.
fn status(state: &AppState) -> Value {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let clusters: Vec<Value> = state
        .clusters
        .now()
        .iter()
        .map(|c| cluster_status(&c.read(), now, wall))
        .collect();
    let push = state.push.snapshot();
    let alerts: Vec<Value> = {
        push.firing
            .into_iter()
            .map(|(alertname, cluster, election, since)| {
                json!({
                    "alertname": alertname,
                    "cluster": cluster,
                    "election": (!election.is_empty()).then_some(election),
                    "since": rfc3339(since),
                })
            })
            .collect()
    };
    json!({
        "generated": rfc3339(wall),
        "clusters": clusters,
        "pushed_alerts": alerts,
        "pushing": push.enabled,
        "telemetry_path": &*state.telemetry_path,
    })
}

pub(super) async fn json_status(State(state): State<AppState>) -> Response {
    axum::Json(status(&state)).into_response()
}

pub(super) async fn page(State(state): State<AppState>) -> Html<String> {
    Html(render(&status(&state)))
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

/// A JSON value as cell text.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "—".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        other => other.to_string(),
    }
}

/// One table: `columns` (title, key) over `rows`.
fn table(out: &mut String, id: &str, columns: &[(&str, &str)], rows: &[Value]) {
    let _ = write!(out, "<table id=\"{id}\"><tr>");
    for (title, _) in columns {
        let _ = write!(out, "<th>{title}</th>");
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for (_, key) in columns {
            out.push_str("<td>");
            esc(out, &text(&row[*key]));
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:90%}th{background:#f2f2f2}\
h2{margin-top:2em}.muted{color:#777}";

fn render(status: &Value) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"5\">");
    let _ = write!(
        out,
        "<title>zk-election-exporter</title><style>{STYLE}</style></head><body>"
    );
    out.push_str("<h1>zk-election-exporter</h1><p class=\"muted\">Who is master of every ZooKeeper election, and how often it moves. Refreshes every 5 s; generated ");
    esc(&mut out, &text(&status["generated"]));
    out.push_str(".</p>");
    if status["pushing"] == true {
        out.push_str("<h2>Alerts pushed to Alertmanager</h2>");
        let alerts = status["pushed_alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        table(
            &mut out,
            "alerts",
            &[
                ("alert", "alertname"),
                ("cluster", "cluster"),
                ("election", "election"),
                ("since", "since"),
            ],
            &alerts,
        );
    }
    for c in status["clusters"].as_array().into_iter().flatten() {
        out.push_str("<h2>Cluster ");
        esc(&mut out, &text(&c["cluster"]));
        out.push_str("</h2><p>Session: ");
        esc(&mut out, &text(&c["session"]));
        if !c["session_error"].is_null() {
            out.push_str(" (");
            esc(&mut out, &text(&c["session_error"]));
            out.push(')');
        }
        out.push_str("</p><h3>Ensemble</h3>");
        let rows = |k: &str| c[k].as_array().cloned().unwrap_or_default();
        table(
            &mut out,
            "members",
            &[
                ("server", "server"),
                ("role", "role"),
                ("up", "up"),
                ("zxid lag", "zxid_lag"),
            ],
            &rows("members"),
        );
        let _ = write!(
            out,
            "<h3>Elections</h3><p class=\"muted\">{} shown of {} watched, those needing attention first.</p>",
            text(&c["elections_shown_of"])
                .parse::<usize>()
                .unwrap_or(0)
                .min(ROWS),
            text(&c["elections_watched"])
        );
        table(
            &mut out,
            "elections",
            &[
                ("election", "election"),
                ("state", "state"),
                ("master", "master"),
                ("node", "node"),
                ("since", "since"),
                ("switches (1 h)", "switches_last_hour"),
                ("switches", "switches"),
                ("candidates", "candidates"),
                ("ghost", "ghost"),
            ],
            &rows("elections"),
        );
        out.push_str("<h3>Locks held</h3>");
        table(
            &mut out,
            "locks",
            &[
                ("lock", "lock"),
                ("holders", "holders"),
                ("waiters", "waiters"),
                ("held (s)", "held_seconds"),
            ],
            &rows("locks_held"),
        );
        out.push_str("<h3>Latest events</h3>");
        let events: Vec<Value> = rows("events")
            .into_iter()
            .map(|mut e| {
                e["from_identity"] = e["from"]["identity"].clone();
                e["to_identity"] = e["to"]["identity"].clone();
                e
            })
            .collect();
        table(
            &mut out,
            "events",
            &[
                ("at", "at"),
                ("election", "election"),
                ("event", "kind"),
                ("from", "from_identity"),
                ("to", "to_identity"),
                ("cause", "cause"),
            ],
            &events,
        );
    }
    let metrics = text(&status["telemetry_path"]);
    out.push_str("<h2>Endpoints</h2><ul><li><a href=\"");
    esc(&mut out, &metrics);
    out.push_str("\">");
    esc(&mut out, &metrics);
    out.push_str("</a>: Prometheus metrics</li>\
<li><a href=\"/ready\">/ready</a>: 200 when every session is connected and every tree synced</li>\
<li><a href=\"/healthz\">/healthz</a>: process is alive</li>\
<li><a href=\"/api/v1/status\">/api/v1/status</a>: this page as JSON</li>\
<li><a href=\"/api/v1/trees\">/api/v1/trees</a>: watched elections and groups (JSON)</li>\
<li><code>/api/v1/elections/PATH</code>: one election, exported or not: master, since when, switches (JSON)</li>\
<li><a href=\"/api/v1/events\">/api/v1/events</a>: the timeline, newest first (<code>?cluster=&amp;election=&amp;since=&amp;limit=</code>)</li>\
</ul></body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_everywhere() {
        let status = json!({
            "generated": "now",
            "pushing": true,
            "pushed_alerts": [{"alertname": "<b>x</b>", "cluster": "c", "election": "/e\"'", "since": "t"}],
            "clusters": [{
                "cluster": "<script>alert(1)</script>",
                "session": "connected",
                "session_error": null,
                "members": [],
                "elections": [{"election": "/bots/<img src=x onerror=alert(1)>", "master": "<script>document.title='pwned'</script>", "ghost": false}],
                "elections_shown_of": 1,
                "elections_watched": 1,
                "locks_held": [],
                "events": [],
            }],
        });
        let html = render(&status);
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>x"), "{html}");
        assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
        assert!(html.contains("/e&quot;&#39;"));
    }
}
