//! The timeline against a real ZooKeeper: a scripted sequence of a close,
//! an abandoned session (expiry), a switch while the agent is cut off and
//! a flap faster than any scrape shows up in `/api/v1/events` in order,
//! with the right identities and causes; the ring keeps its size; every
//! event is one structured log line. A busy lock cannot evict switches, a
//! switch after a masterless period says how the old master went, and the
//! API filters by kind and time.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

fn events(port: u16, query: &str) -> Vec<Value> {
    let (status, body) = http_get(port, &format!("/api/v1/events?{query}")).unwrap();
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["events"].as_array().cloned().unwrap_or_default()
}

/// (kind, from identity, to identity, cause) of each event, oldest first.
fn story(events: &[Value]) -> Vec<(String, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    events
        .iter()
        .rev()
        .map(|e| {
            (
                s(&e["kind"]),
                s(&e["from"]["identity"]),
                s(&e["to"]["identity"]),
                s(&e["cause"]),
            )
        })
        .collect()
}

fn step(kind: &str, from: &str, to: &str, cause: &str) -> (String, String, String, String) {
    (kind.into(), from.into(), to.into(), cause.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closes_expiries_outages_and_flaps_in_order_with_causes() {
    let zk = shared_server();
    let base = unique_path("timeline");
    let election = format!("{base}/bot_1");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let a = client(&zk.address()).await;
    candidate(&a, &election, "n_", b"device-a").await;
    let b = abandonable_client(&zk.address(), Duration::from_secs(4)).await;
    candidate(&b, &election, "n_", b"device-b").await;
    let c = client(&zk.address()).await;
    candidate(&c, &election, "n_", b"device-c").await;

    let proxy = Proxy::start(zk.address()).await;
    let exporter = Exporter::start(&cluster_config(
        &proxy.address(),
        &format!("{base}/*"),
        "timeline_size = 1000\n[clusters.ghost_check]\ncons_interval = \"300ms\"\n",
    ));
    let small = Exporter::start(&cluster_config(
        &zk.address(),
        &format!("{base}/*"),
        // The key's earlier name, still accepted.
        "event_log_size = 3\nfour_letter_words = { enabled = false }",
    ));
    for e in [&exporter, &small] {
        e.until("master a", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    }
    let q = format!("cluster=test&election={election}");
    let until_story = |want: Vec<(String, String, String, String)>, what: &str| {
        wait_for(what, T, || {
            let got = story(&events(exporter.port, &q));
            if got == want {
                Ok(())
            } else {
                Err(format!("{got:?}"))
            }
        })
    };

    // 1. The master's process closes its session: its node is deleted.
    drop(a);
    let mut want = vec![step("switch", "device-a", "device-b", "node_deleted")];
    until_story(want.clone(), "the close");

    // 2. The next master's process dies: its session expires, as the
    //    ghost check saw its connection gone first.
    drop(b);
    want.push(step("ghost_flagged", "device-b", "", ""));
    want.push(step("switch", "device-b", "device-c", "session_expired"));
    until_story(want.clone(), "the expiry");

    // 3. The agent is cut off while mastership moves: how is unknown.
    proxy.cut();
    exporter.until_not_ready("session", T).await;
    let d = client(&zk.address()).await;
    candidate(&d, &election, "n_", b"device-d").await;
    drop(c);
    eventually("c's node to go", T, || async {
        match admin.list_children(&election).await {
            Ok(children) if children.len() == 1 => Ok(()),
            Ok(children) => Err(format!("{children:?}")),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    proxy.restore();
    want.push(step(
        "switch",
        "device-c",
        "device-d",
        "unknown_during_outage",
    ));
    until_story(want.clone(), "the switch during the outage");
    let session: Vec<String> = events(exporter.port, "cluster=test")
        .iter()
        .filter_map(|e| {
            e["kind"]
                .as_str()
                .filter(|k| k.starts_with("session"))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        session.first().map(String::as_str),
        Some("session_restored"),
        "{session:?}"
    );
    assert!(session.iter().any(|k| k == "session_lost"), "{session:?}");

    // 4. A flap within one scrape interval: d → e → d's device again,
    //    each move seen before the next (nodes deleted in this order).
    let d_node = admin.list_children(&election).await.unwrap().remove(0);
    let e = client(&zk.address()).await;
    let e_node = candidate(&e, &election, "n_", b"device-e").await;
    admin
        .delete(&format!("{election}/{d_node}"), None)
        .await
        .unwrap();
    want.push(step("switch", "device-d", "device-e", "node_deleted"));
    until_story(want.clone(), "the flap's first move");
    let d2 = client(&zk.address()).await;
    candidate(&d2, &election, "n_", b"device-d").await;
    admin
        .delete(&format!("{election}/{e_node}"), None)
        .await
        .unwrap();
    want.push(step("switch", "device-e", "device-d", "node_deleted"));
    until_story(want.clone(), "the flap back");

    // The small ring holds its newest three, numbered on.
    let kept: Vec<Value> = events(small.port, "limit=100")
        .into_iter()
        .filter(|e| !e["kind"].as_str().unwrap_or("").starts_with("session"))
        .collect();
    assert_eq!(kept.len(), 3, "{kept:?}");
    let seqs: Vec<u64> = kept.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs[0] > seqs[1] && seqs[1] > seqs[2] && seqs[2] > 1,
        "{seqs:?}"
    );

    // Filters: since (after everything) and limit.
    assert!(events(exporter.port, "since=2999-01-01T00:00:00Z").is_empty());
    assert_eq!(events(exporter.port, &format!("{q}&limit=2")).len(), 2);
    let (status, _) = http_get(exporter.port, "/api/v1/events?since=yesterday").unwrap();
    assert_eq!(status, 400);

    // One log line per event, with its fields.
    let lines = wait_for("five switch log lines", T, || {
        let lines: Vec<String> = exporter
            .log()
            .lines()
            .filter(|l| l.contains("zk_election_exporter::events") && l.contains("kind=switch"))
            .map(str::to_owned)
            .collect();
        if lines.len() == 5 {
            Ok(lines)
        } else {
            Err(format!("{lines:?}"))
        }
    });
    assert!(
        lines[1].contains("cause=session_expired") && lines[1].contains("from=device-b"),
        "{}",
        lines[1]
    );
    drop((d, d2, e));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_hand_overs_and_group_members_reach_the_timeline() {
    use zookeeper_client::{Acls, CreateMode};
    let zk = shared_server();
    let base = unique_path("timeline-locks");
    let lock = format!("{base}/locks/job_1");
    let group = format!("{base}/services/api");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &lock).await;
    mkdir(&admin, &group).await;
    let contender = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let first = client(&zk.address()).await;
    first
        .create(&format!("{lock}/a__lock__"), b"", &contender)
        .await
        .unwrap();
    let second = client(&zk.address()).await;
    second
        .create(&format!("{lock}/b__lock__"), b"", &contender)
        .await
        .unwrap();
    let exporter = Exporter::start(&format!(
        "{}[[clusters.locks]]\npath = \"{base}/locks/*\"\nmax_hold = \"1s\"\n[[clusters.groups]]\npath = \"{base}/services/*\"\nexport_members = true\n",
        cluster_config(
            &zk.address(),
            &format!("{base}/bots/*"),
            "four_letter_words = { enabled = false }"
        )
    ));
    exporter
        .until("the lock held", T, |m| {
            m.get("zookeeper_lock_held", &[("lock", &lock)]) == Some(1.0)
        })
        .await;
    let member = client(&zk.address()).await;
    member
        .create(
            &format!("{group}/api-1"),
            b"host-1",
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    drop(first);
    let acquired = wait_for("the hand-over in the timeline", T, || {
        let e = events(exporter.port, &format!("election={lock}"));
        match e.iter().find(|e| e["kind"] == "lock_acquired") {
            Some(e) => Ok(e.clone()),
            None => Err(format!("{e:?}")),
        }
    });
    let holder = acquired["to"]["node"].as_str().unwrap().to_owned();
    assert!(holder.starts_with("b__lock__"), "{acquired}");
    // The new holder keeps it past max_hold (1 s): told once.
    wait_for("the long hold in the timeline", T, || {
        let long: Vec<Value> = events(exporter.port, &format!("election={lock}"))
            .into_iter()
            .filter(|e| e["kind"] == "lock_held_long" && e["to"]["node"] == holder.as_str())
            .collect();
        match long.len() {
            1 => Ok(()),
            n => Err(format!("{n} long-hold entries for {holder}")),
        }
    });
    drop(member);
    wait_for("the member's join and leave in the timeline", T, || {
        let kinds: Vec<(String, String)> = events(exporter.port, &format!("election={group}"))
            .iter()
            .map(|e| {
                let who = e["to"]["identity"]
                    .as_str()
                    .or(e["from"]["identity"].as_str());
                (
                    e["kind"].as_str().unwrap_or("").to_owned(),
                    who.unwrap_or("").to_owned(),
                )
            })
            .collect();
        let want = vec![
            ("member_left".to_owned(), "api-1".to_owned()),
            ("member_joined".to_owned(), "api-1".to_owned()),
        ];
        if kinds == want {
            Ok(())
        } else {
            Err(format!("{kinds:?}"))
        }
    });
    // Each class logs under its own target; routine traffic at DEBUG, a
    // lock held too long at INFO (the test's filter shows DEBUG too).
    let levels = wait_for("the log lines of the lock and the group", T, || {
        let log = exporter.log();
        let level_of = |target: &str, kind: &str| {
            log.lines()
                .find(|l| l.contains(target) && l.contains(&format!("kind={kind}")))
                .and_then(|l| ["DEBUG", "INFO"].into_iter().find(|lv| l.contains(lv)))
        };
        let levels = [
            level_of("zk_election_exporter::events::locks", "lock_acquired"),
            level_of("zk_election_exporter::events::locks", "lock_held_long"),
            level_of("zk_election_exporter::events::members", "member_joined"),
            level_of("zk_election_exporter::events::members", "member_left"),
        ];
        match levels.iter().all(Option::is_some) {
            true => Ok(levels),
            false => Err(format!("{levels:?}")),
        }
    });
    assert_eq!(
        levels,
        [Some("DEBUG"), Some("INFO"), Some("DEBUG"), Some("DEBUG")]
    );
    drop(second);
}

/// A lock handing over many times a second fills its own ring, not the
/// elections': the one switch stays, and it names the master whose going
/// began the masterless period before it, and how it went. `kind`, `until`
/// and `since` filter; the status page leaves lock hand-overs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_churn_keeps_switches_and_a_switch_after_a_gap_has_its_cause() {
    use zookeeper_client::{Acls, CreateMode};
    let zk = shared_server();
    let base = unique_path("timeline-rings");
    let election = format!("{base}/bots/bot_1");
    let lock = format!("{base}/locks/job_1");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    mkdir(&admin, &lock).await;
    let a = client(&zk.address()).await;
    candidate(&a, &election, "n_", b"device-a").await;
    let exporter = Exporter::start(&format!(
        "{}[[clusters.locks]]\npath = \"{base}/locks/*\"\n",
        cluster_config(
            &zk.address(),
            &format!("{base}/bots/*"),
            "timeline_size = 5\nfour_letter_words = { enabled = false }"
        )
    ));
    exporter
        .until("master a", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    let contender = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let churn = |n: usize| {
        let (admin, lock, contender) = (&admin, &lock, &contender);
        async move {
            for _ in 0..n {
                let (_, seq) = admin
                    .create(&format!("{lock}/w__lock__"), b"", contender)
                    .await
                    .unwrap();
                admin
                    .delete(&format!("{lock}/w__lock__{seq}"), None)
                    .await
                    .unwrap();
            }
        }
    };
    churn(10).await;

    // The master goes; nobody is master until b arrives.
    drop(a);
    wait_for("the masterless period", T, || {
        let e = events(
            exporter.port,
            &format!("election={election}&kind=masterless_started"),
        );
        if e.len() == 1 {
            Ok(())
        } else {
            Err(format!("{e:?}"))
        }
    });
    let b = client(&zk.address()).await;
    candidate(&b, &election, "n_", b"device-b").await;
    let switch = wait_for("the switch", T, || {
        let e = events(exporter.port, &format!("election={election}&kind=switch"));
        match e.as_slice() {
            [s] => Ok(s.clone()),
            _ => Err(format!("{e:?}")),
        }
    });
    churn(20).await;
    wait_for("the lock's ring full", T, || {
        let e = events(exporter.port, "kind=lock_acquired&limit=100");
        if e.len() == 5 {
            Ok(())
        } else {
            Err(format!("{} lock entries", e.len()))
        }
    });

    // How far back each ring reaches, as /metrics says it.
    let m = exporter.metrics().unwrap();
    let entries = |class: &str| {
        m.get(
            "zookeeper_exporter_timeline_entries",
            &[("ensemble", "test"), ("class", class)],
        )
    };
    assert_eq!(entries("locks"), Some(5.0), "the lock ring is full");
    assert!(
        entries("elections").is_some_and(|n| (3.0..=5.0).contains(&n)),
        "masterless started and ended, the switch: {:?}",
        entries("elections")
    );
    let oldest = m
        .get(
            "zookeeper_exporter_timeline_oldest_timestamp_seconds",
            &[("ensemble", "test"), ("class", "elections")],
        )
        .expect("the elections ring is not empty");
    let switched = humantime::parse_rfc3339(switch["at"].as_str().unwrap()).unwrap();
    let switched = switched
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        oldest <= switched && oldest > switched - 600.0,
        "oldest {oldest}, switch {switched}"
    );

    // The switch is still there, with the cause of a's going.
    let switches = events(exporter.port, "kind=switch");
    assert_eq!(
        switches,
        std::slice::from_ref(&switch),
        "evicted by lock hand-overs?"
    );
    assert_eq!(switch["from"]["identity"], "device-a", "{switch}");
    assert_eq!(switch["to"]["identity"], "device-b", "{switch}");
    assert_eq!(switch["cause"], "node_deleted", "{switch}");
    assert!(
        switch["masterless_seconds"]
            .as_f64()
            .is_some_and(|s| s > 0.0),
        "{switch}"
    );

    // Several kinds at once; time bounds around the switch.
    let both = events(
        exporter.port,
        &format!("election={election}&kind=switch,masterless_started"),
    );
    let kinds: Vec<&str> = both.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["switch", "masterless_started"]);
    let at = switch["at"].as_str().unwrap();
    assert_eq!(
        events(exporter.port, &format!("kind=switch&until={at}")),
        std::slice::from_ref(&switch)
    );
    assert_eq!(
        events(exporter.port, &format!("kind=switch&since={at}")),
        std::slice::from_ref(&switch)
    );
    let before = both[1]["at"].as_str().unwrap();
    let earlier: Vec<Value> = events(exporter.port, &format!("kind=switch&until={before}"));
    assert!(
        earlier.is_empty() || before == at,
        "nothing switched before the masterless period: {earlier:?}"
    );
    let (status, body) = http_get(exporter.port, "/api/v1/events?kind=switched").unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("lock_acquired"), "lists the kinds: {body}");
    let (status, body) = http_get(exporter.port, "/api/v1/events?until=noon").unwrap();
    assert_eq!(status, 400, "{body}");

    // The status page's latest events: the switch, no hand-overs.
    let (_, status) = http_get(exporter.port, "/api/v1/status").unwrap();
    let status: Value = serde_json::from_str(&status).unwrap();
    let kinds: Vec<&str> = status["clusters"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"switch"), "{kinds:?}");
    assert!(!kinds.contains(&"lock_acquired"), "{kinds:?}");
    drop(b);
}
