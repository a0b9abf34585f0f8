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
            ensemble: "<b>x</b>".into(),
            election: Some("/e\"'".into()),
            since: "t".into(),
        }],
        pushing: true,
        telemetry_path: "/metrics".into(),
    }
}

#[test]
fn times_read_as_how_long_ago() {
    let now = humantime::parse_rfc3339("2026-12-01T03:12:00Z").unwrap();
    let ago = |t| ago(t, now);
    assert_eq!(ago("2026-12-01T03:11:48Z").as_deref(), Some("12 s ago"));
    assert_eq!(
        ago("2026-12-01T03:09:00.250Z").as_deref(),
        Some("2 min ago")
    );
    assert_eq!(
        ago("2026-12-01T01:07:00Z").as_deref(),
        Some("2 h 5 min ago")
    );
    assert_eq!(ago("2026-12-01T01:12:00Z").as_deref(), Some("2 h ago"));
    assert_eq!(ago("2026-11-28T03:12:00Z").as_deref(), Some("3 d ago"));
    assert_eq!(ago("2026-12-01T03:12:05Z").as_deref(), Some("in 5 s"));
    assert_eq!(ago("t"), None);
}

#[test]
fn rows_needing_attention_are_marked_in_colour_and_in_text() {
    let mut status = hostile();
    status.generated = "2026-12-01T03:12:00Z".into();
    let c = &mut status.clusters[0];
    c.elections[0].since = Some("2026-12-01T03:09:00Z".into());
    let mut masterless = c.elections[0].clone();
    masterless.election = "/bots/gone".into();
    masterless.state = "masterless";
    let mut flapping = c.elections[0].clone();
    flapping.state = "flapping";
    c.elections.extend([masterless, flapping]);
    c.members[0].up = "down";
    c.session = "disconnected";
    let html = render(&status);
    assert!(
        html.contains("<tr class=\"alert\"><td><span class=\"mark\">\u{26a0} ATTENTION</span> /bots/gone</td><td>masterless</td>"),
        "{html}"
    );
    assert!(html.contains("<tr class=\"warn\"><td><span class=\"mark\">\u{25b3} check</span> "));
    assert!(
        html.contains("<tr><td>/bots/&lt;img"),
        "an ok row is plain: {html}"
    );
    assert!(html.contains(
        "<tr class=\"alert\"><td><span class=\"mark\">\u{26a0} ATTENTION</span> 127.0.0.1:2181"
    ));
    assert!(html.contains(
        "<p class=\"alert\"><span class=\"mark\">\u{26a0} ATTENTION</span> Session: disconnected"
    ));
    assert!(
        html.contains("<time datetime=\"2026-12-01T03:09:00Z\">2026-12-01T03:09:00Z</time> <span class=\"ago\">(3 min ago)</span>"),
        "{html}"
    );
    // A lease source failing is trouble too.
    assert!(html.contains(
        "<tr class=\"alert\"><td><span class=\"mark\">\u{26a0} ATTENTION</span> /bots/&lt;*&gt;"
    ));
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
