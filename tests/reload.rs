//! Hot reload (SIGHUP, `POST /-/reload`) against a real ZooKeeper: an added
//! tree appears while an unchanged tree's counters and an unchanged
//! cluster's session stay; a broken file changes nothing and says so; a
//! removed cluster's series disappear; the endpoint takes only POST, only
//! with `--web.enable-lifecycle`, and sits behind the web config's basic
//! auth.

mod common;

use std::time::Duration;

use base64::Engine;
use common::*;

const T: Duration = Duration::from_secs(30);

/// `method` on `path`; status and body.
fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    http_request(port, method, path, headers).unwrap()
}

fn gauge(m: &Metrics, name: &str) -> Option<f64> {
    m.get(name, &[])
}

fn changes(m: &Metrics, cluster: &str, election: &str) -> Option<f64> {
    m.get(
        "zookeeper_election_master_changes_total",
        &[("ensemble", cluster), ("election", election)],
    )
}

fn session_id(port: u16, cluster: &str) -> String {
    let body = http_get(port, "/api/v1/status").unwrap().1;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cluster"] == cluster)
        .map(|c| c["session_id"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_applies_the_difference_and_refuses_a_broken_file() {
    let zk = shared_server();
    let base = unique_path("reload");
    let admin = client(&zk.address()).await;
    let (a, b, c) = (
        format!("{base}/a/bot_1"),
        format!("{base}/b/bot_9"),
        format!("{base}/c/bot_5"),
    );
    for p in [&a, &b, &c] {
        mkdir(&admin, p).await;
    }
    // bot_1 switches once before the reload; bot_9 and bot_5 have masters.
    let first = client(&zk.address()).await;
    candidate(&first, &a, "n_", b"phone-1").await;
    candidate(&admin, &a, "n_", b"phone-2").await;
    candidate(&admin, &b, "n_", b"phone-9").await;
    candidate(&admin, &c, "n_", b"phone-5").await;

    let dir = temp_dir("reload");
    let file = dir.join("config.toml");
    let port = free_port();
    let cluster = |name: &str, trees: &[&str]| {
        let mut s = format!(
            "[[clusters]]\nname = \"{name}\"\nservers = [\"{}\"]\nfour_letter_words = {{ enabled = false }}\n",
            zk.address()
        );
        for t in trees {
            s.push_str(&format!("[[clusters.elections]]\npath = \"{t}\"\n"));
        }
        s
    };
    let web = format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\nenable_lifecycle = true\n");
    let (tree_a, tree_b, tree_c) = (
        format!("{base}/a/*"),
        format!("{base}/b/*"),
        format!("{base}/c/*"),
    );
    let before = format!(
        "{web}{}{}",
        cluster("one", &[&tree_a]),
        cluster("two", &[&tree_c])
    );
    std::fs::write(&file, &before).unwrap();
    let exporter = Exporter::spawn(&args(&["--config", file.to_str().unwrap()]), &[], port);
    exporter
        .until("phone-1 is master of bot_1", T, |m| {
            changes(m, "one", &a) == Some(0.0)
        })
        .await;
    drop(first);
    let m = exporter
        .until("bot_1 switched once", T, |m| {
            changes(m, "one", &a) == Some(1.0)
        })
        .await;
    assert_eq!(
        gauge(&m, "zookeeper_exporter_config_last_reload_successful"),
        Some(1.0)
    );
    let started = gauge(
        &m,
        "zookeeper_exporter_config_last_reload_success_timestamp_seconds",
    )
    .unwrap();
    assert!(started > 1.7e9, "{started}");
    let (one_session, two_session) = (session_id(port, "one"), session_id(port, "two"));
    assert!(two_session.starts_with("0x"), "{two_session}");

    // GET is refused, as Prometheus refuses it.
    assert_eq!(request(port, "GET", "/-/reload", &[]).0, 405);

    // Cluster one gains tree b: bot_9 appears, bot_1 keeps its switch count,
    // both clusters keep their sessions (only trees changed in one).
    let grown = format!(
        "{web}{}{}",
        cluster("one", &[&tree_a, &tree_b]),
        cluster("two", &[&tree_c])
    );
    std::fs::write(&file, &grown).unwrap();
    let (status, body) = request(port, "POST", "/-/reload", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("kept 1, trees changed 1, rebuilt 0"),
        "{body}"
    );
    let m = exporter
        .until("bot_9 appears after the reload", T, |m| {
            changes(m, "one", &b) == Some(0.0)
        })
        .await;
    assert_eq!(changes(&m, "one", &a), Some(1.0), "bot_1 kept its count");
    assert_eq!(changes(&m, "two", &c), Some(0.0));
    assert_eq!(
        session_id(port, "two"),
        two_session,
        "cluster two kept its session"
    );
    assert_eq!(
        session_id(port, "one"),
        one_session,
        "cluster one kept its session"
    );
    // A session setting of cluster one changes: a new session for it alone;
    // its trees keep their counts.
    let grown = grown.replacen(
        "four_letter_words = { enabled = false }\n",
        "four_letter_words = { enabled = false }\nsession_timeout = \"8s\"\n",
        1,
    );
    std::fs::write(&file, &grown).unwrap();
    let (status, body) = request(port, "POST", "/-/reload", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("kept 1, trees changed 0, rebuilt 1"),
        "{body}"
    );
    wait_for("cluster one's new session", T, || {
        let id = session_id(port, "one");
        (id.starts_with("0x") && id != one_session)
            .then_some(())
            .ok_or(id)
    });
    assert_eq!(session_id(port, "two"), two_session);
    // Synced again, and still no spurious switch once the new session listed.
    let m = exporter
        .until("tree a synced under the new session", T, |m| {
            m.get(
                "zookeeper_tree_synced",
                &[("ensemble", "one"), ("tree", &tree_a)],
            ) == Some(1.0)
        })
        .await;
    assert_eq!(changes(&m, "one", &a), Some(1.0));
    let after_first = gauge(
        &m,
        "zookeeper_exporter_config_last_reload_success_timestamp_seconds",
    )
    .unwrap();
    assert!(after_first >= started);

    // A broken file: refused with the key, nothing changes, gauge 0.
    std::fs::write(
        &file,
        format!("{grown}[[clusters]]\nname = \"one\"\nservers = [\"x:1\"]\n"),
    )
    .unwrap();
    let (status, body) = request(port, "POST", "/-/reload", &[]);
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("failed to reload config") && body.contains("clusters[2].name"),
        "{body}"
    );
    let m = exporter.metrics().unwrap();
    assert_eq!(
        gauge(&m, "zookeeper_exporter_config_last_reload_successful"),
        Some(0.0)
    );
    assert_eq!(
        gauge(
            &m,
            "zookeeper_exporter_config_last_reload_success_timestamp_seconds"
        ),
        Some(after_first)
    );
    assert_eq!(changes(&m, "one", &b), Some(0.0), "tree b still watched");
    assert!(exporter.log().contains("configuration reload refused"));

    // A good file by SIGHUP: cluster two removed, its series gone, gauge 1.
    std::fs::write(
        &file,
        format!("{web}{}", cluster("one", &[&tree_a, &tree_b])),
    )
    .unwrap();
    signal(&exporter.pid().to_string(), "-HUP");
    let m = exporter
        .until("cluster two removed", T, |m| {
            changes(m, "two", &c).is_none()
                && gauge(m, "zookeeper_exporter_config_last_reload_successful") == Some(1.0)
        })
        .await;
    assert_eq!(changes(&m, "one", &a), Some(1.0));
    assert_eq!(
        m.get(
            "zookeeper_exporter_config_reloads_total",
            &[("result", "failure")]
        ),
        Some(1.0)
    );
    assert_eq!(
        m.get(
            "zookeeper_exporter_config_reloads_total",
            &[("result", "success")]
        ),
        Some(3.0)
    );
    assert!(
        !m.samples
            .values()
            .flatten()
            .any(|(labels, _)| labels.get("ensemble").is_some_and(|v| v == "two")),
        "no series of cluster two remain"
    );

    // [web] is read at start only: a reload says so, every time, and the
    // metrics stay where they were.
    let moved = format!(
        "{}telemetry_path = \"/other\"\n{}",
        web,
        cluster("one", &[&tree_a, &tree_b])
    );
    std::fs::write(&file, &moved).unwrap();
    for _ in 0..2 {
        let (status, body) = request(port, "POST", "/-/reload", &[]);
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains("[web] changes apply at the next start"),
            "{body}"
        );
    }
    assert_eq!(http_get(port, "/metrics").unwrap().0, 200);
    assert_eq!(http_get(port, "/other").unwrap().0, 404);
    drop(admin);
}

#[test]
fn reload_sits_behind_basic_auth() {
    let dir = temp_dir("reload-auth");
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let web = dir.join("web.yml");
    std::fs::write(&web, format!("basic_auth_users:\n  ops: '{hash}'\n")).unwrap();
    let port = free_port();
    let exporter = Exporter::spawn(
        &offline_args(
            port,
            &[
                "--web.config.file",
                web.to_str().unwrap(),
                "--web.enable-lifecycle",
            ],
        ),
        &[],
        port,
    );
    assert_eq!(request(port, "POST", "/-/reload", &[]).0, 401);
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("ops:s3cret")
    );
    let (status, body) = request(port, "POST", "/-/reload", &[("Authorization", &auth)]);
    assert_eq!(status, 200, "{body}");
    drop(exporter);
}

/// As in Prometheus and Alertmanager, `POST /-/reload` reloads only with
/// `--web.enable-lifecycle`: without it the endpoint answers 403 and
/// changes nothing, while SIGHUP reloads all the same. `/-/healthy` and
/// `/-/ready` answer as `/healthz` and `/ready` do.
#[test]
fn reload_over_http_needs_the_lifecycle_flag() {
    let port = free_port();
    let exporter = Exporter::spawn(&offline_args(port, &[]), &[], port);
    let (status, body) = request(port, "POST", "/-/reload", &[]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("--web.enable-lifecycle"), "{body}");
    let reloads = |m: &Metrics| {
        m.get(
            "zookeeper_exporter_config_reloads_total",
            &[("result", "success")],
        )
    };
    assert_eq!(reloads(&exporter.metrics().unwrap()), Some(0.0));
    assert_eq!(
        request(port, "GET", "/-/healthy", &[]),
        (200, "ok\n".into())
    );
    assert_eq!(request(port, "GET", "/healthz", &[]), (200, "ok\n".into()));
    // Offline (nothing listens on its ZooKeeper port): both say not ready,
    // with the same reasons.
    let (ready, why) = request(port, "GET", "/ready", &[]);
    assert_eq!(ready, 503, "{why}");
    let (dash_ready, dash_why) = request(port, "GET", "/-/ready", &[]);
    assert_eq!(dash_ready, 503, "{dash_why}");
    assert!(dash_why.starts_with("not ready\n"), "{dash_why}");
    signal(&exporter.pid().to_string(), "-HUP");
    wait_for("SIGHUP reloaded", T, || {
        let m = exporter.metrics()?;
        match reloads(&m) {
            Some(n) if n >= 1.0 => Ok(()),
            other => Err(format!("reloads {other:?}")),
        }
    });
}

/// The agent pushed an alert for a cluster; a reload removes the cluster:
/// the alert resolves in Alertmanager instead of being re-sent forever, and
/// a reload that only changes `[alerting]` keeps another alert firing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_clusters_pushed_alert_resolves() {
    use common::program::{alertmanager, alerts_in_alertmanager};
    let zk = shared_server();
    let base = unique_path("reload-push");
    let admin = client(&zk.address()).await;
    let (orphan, other) = (format!("{base}/x/bot_1"), format!("{base}/y/bot_2"));
    mkdir(&admin, &orphan).await;
    mkdir(&admin, &other).await;
    let am = alertmanager("alertmanager-reload");
    let dir = temp_dir("reload-push");
    let file = dir.join("config.toml");
    let port = free_port();
    let cluster = |name: &str, tree: &str| {
        format!(
            "[[clusters]]\nname = \"{name}\"\nservers = [\"{}\"]\nfour_letter_words = {{ enabled = false }}\n\
             [[clusters.elections]]\npath = \"{tree}\"\n",
            zk.address()
        )
    };
    let alerting = |resend: &str| {
        format!(
            "[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\nno_master_for = \"1s\"\nresend_interval = \"{resend}\"\n",
            am.port
        )
    };
    let web = format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\nenable_lifecycle = true\n");
    let (gone, stay) = (
        cluster("gone", &format!("{base}/x/*")),
        cluster("stay", &format!("{base}/y/*")),
    );
    std::fs::write(&file, format!("{web}{}{gone}{stay}", alerting("1s"))).unwrap();
    let exporter = Exporter::spawn(&args(&["--config", file.to_str().unwrap()]), &[], port);
    let clusters_alerted = || -> Result<Vec<String>, String> {
        let mut names: Vec<String> = alerts_in_alertmanager(&am, "ZooKeeperElectionNoMaster")?
            .iter()
            .map(|a| a["ensemble"].as_str().unwrap_or("").to_owned())
            .collect();
        names.sort();
        Ok(names)
    };
    wait_for("both masterless elections pushed", T, || {
        let names = clusters_alerted()?;
        (names == ["gone", "stay"])
            .then_some(())
            .ok_or(format!("{names:?}"))
    });

    // Only [alerting] changes: the pusher restarts and carries on; the
    // alerts stay firing.
    std::fs::write(&file, format!("{web}{}{gone}{stay}", alerting("2s"))).unwrap();
    let (status, body) = request(port, "POST", "/-/reload", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("kept 2") && body.contains("alert pusher"),
        "{body}"
    );

    // Cluster gone is removed: its alert resolves, stay's keeps firing.
    std::fs::write(&file, format!("{web}{}{stay}", alerting("2s"))).unwrap();
    let (status, body) = request(port, "POST", "/-/reload", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("removed 1"), "{body}");
    wait_for("only stay's alert left", T, || {
        let names = clusters_alerted()?;
        (names == ["stay"])
            .then_some(())
            .ok_or(format!("{names:?}"))
    });
    assert!(
        exporter.log().contains("alert resolved"),
        "{}",
        exporter.log()
    );
    drop(admin);
}

/// `exclude` takes a retired account's election out of the watch (no
/// series, no alert, not rediscovered), in both watch modes, and a reload
/// that lifts the exclusion brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn excluded_elections_are_not_watched_until_a_reload_lifts_the_exclusion() {
    let zk = shared_server();
    let base = unique_path("exclude");
    let admin = client(&zk.address()).await;
    let (live, retired, test_1) = (
        format!("{base}/bots/bot_1"),
        format!("{base}/bots/bot_orphan"),
        format!("{base}/bots/test_1"),
    );
    for p in [&live, &retired, &test_1] {
        mkdir(&admin, p).await;
    }
    candidate(&admin, &live, "instance_", b"phone-1").await;
    candidate(&admin, &test_1, "instance_", b"phone-t").await;
    for mode in ["persistent", "oneshot"] {
        let dir = temp_dir("exclude");
        let file = dir.join("config.toml");
        let port = free_port();
        let config = |exclude: &str| {
            format!(
                "[web]\nlisten_address = \"127.0.0.1:{port}\"\nenable_lifecycle = true\n[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n\
                 watch_mode = \"{mode}\"\nfour_letter_words = {{ enabled = false }}\n\
                 [[clusters.elections]]\npath = \"{base}/bots/*\"\n{exclude}",
                zk.address()
            )
        };
        let excluding = format!("exclude = [\"{retired}\", \"{base}/bots/test_*\"]\n");
        std::fs::write(&file, config(&excluding)).unwrap();
        let exporter = Exporter::spawn(&args(&["--config", file.to_str().unwrap()]), &[], port);
        let has_master =
            |m: &Metrics, e: &str| m.get("zookeeper_election_has_master", &election_labels(e));
        exporter
            .until_values(
                "the live election watched",
                T,
                &[(
                    "zookeeper_election_has_master",
                    &election_labels(&live),
                    Some(1.0),
                )],
            )
            .await;
        // A candidate joins an excluded election: still nothing of it.
        candidate(&admin, &test_1, "instance_", b"phone-u").await;
        candidate(&admin, &live, "instance_", b"phone-2").await;
        let m = exporter
            .until("the live election's new candidate", T, |m| {
                m.get("zookeeper_election_candidates", &election_labels(&live)) == Some(2.0)
            })
            .await;
        assert_eq!(
            has_master(&m, &retired),
            None,
            "{mode}: the retired account is not watched"
        );
        assert_eq!(
            has_master(&m, &test_1),
            None,
            "{mode}: test_* is not watched"
        );
        assert_eq!(
            m.series("zookeeper_election_has_master", &[("ensemble", "test")])
                .len(),
            1,
            "{mode}"
        );

        std::fs::write(&file, config("")).unwrap();
        let (status, body) = request(port, "POST", "/-/reload", &[]);
        assert_eq!(status, 200, "{body}");
        exporter
            .until_values(
                "the exclusions lifted",
                T,
                &[
                    (
                        "zookeeper_election_has_master",
                        &election_labels(&retired),
                        Some(0.0),
                    ),
                    (
                        "zookeeper_election_has_master",
                        &election_labels(&test_1),
                        Some(1.0),
                    ),
                    (
                        "zookeeper_election_candidates",
                        &election_labels(&test_1),
                        Some(2.0),
                    ),
                    (
                        "zookeeper_election_has_master",
                        &election_labels(&live),
                        Some(1.0),
                    ),
                ],
            )
            .await;
        // The candidates added for the next mode's run.
        for child in admin.list_children(&test_1).await.unwrap() {
            if child.starts_with("instance_")
                && admin
                    .get_data(&format!("{test_1}/{child}"))
                    .await
                    .unwrap()
                    .0
                    == b"phone-u"
            {
                admin
                    .delete(&format!("{test_1}/{child}"), None)
                    .await
                    .unwrap();
            }
        }
        for child in admin.list_children(&live).await.unwrap() {
            if admin.get_data(&format!("{live}/{child}")).await.unwrap().0 == b"phone-2" {
                admin
                    .delete(&format!("{live}/{child}"), None)
                    .await
                    .unwrap();
            }
        }
    }
}
