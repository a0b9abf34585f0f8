//! The alerting agent against Debian's Alertmanager: an election loses its
//! last candidate and the agent's own alert is in Alertmanager seconds
//! later (with exactly its rule twin's labels), survives an Alertmanager
//! restart by being resent, and resolves when a candidate returns; a
//! webhook receiver run by the test sees the notifications.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::program::alerts_at;
use common::receiver::{Receiver, hooked_config};
use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

/// Debian's Alertmanager on `port` with its data in `dir`, notifying the
/// webhook at `hook`.
fn alertmanager(dir: &Path, port: u16, hook: u16) -> std::process::Child {
    std::fs::write(dir.join("am.yml"), hooked_config(hook, "")).unwrap();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("log"))
        .unwrap();
    let child = spawn_watched(
        &format!(
            "prometheus-alertmanager --config.file={d}/am.yml --storage.path={d}/data --web.listen-address=127.0.0.1:{port} --cluster.listen-address=",
            d = dir.display()
        ),
        log,
    );
    wait_for("Alertmanager ready", T, || {
        match http_get(port, "/-/ready") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    child
}

fn stop(mut child: std::process::Child) {
    let _ = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masterless_election_is_pushed_resent_after_a_restart_and_resolved() {
    let zk = shared_server();
    let base = unique_path("push");
    let admin = client(&zk.address()).await;
    let election = format!("{base}/bots/bot_1");
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-a").await;

    let hook = Receiver::start();
    let dir = temp_dir("alertmanager");
    let am_port = free_port();
    let am = alertmanager(&dir, am_port, hook.port);
    // A second election set holds its masterless alerts for an hour.
    let patient = format!("{base}/patient/bot_9");
    mkdir(&admin, &patient).await;
    // A second Alertmanager nobody listens on: its read-back at start
    // fails, and is counted; the first is served as usual.
    let dead = free_port();
    let exporter = Exporter::start(&format!(
        "{}[[clusters.elections]]\npath = \"{base}/patient/*\"\nno_master_for = \"1h\"\n\
         [alerting]\nalertmanagers = [\"http://127.0.0.1:{am_port}\", \"http://127.0.0.1:{dead}\"]\n\
         no_master_for = \"1s\"\nresend_interval = \"2s\"\n",
        cluster_config(
            &zk.address(),
            &format!("{base}/bots/*"),
            "four_letter_words = { enabled = false }"
        )
    ));
    exporter
        .until("the master exported", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;

    // The last candidate leaves (its session closes).
    let left = Instant::now();
    drop(device);
    let labels = wait_for("the pushed alert in Alertmanager", T, || {
        match alerts_at(am_port, "ZooKeeperElectionNoMaster")?.as_slice() {
            [one] => Ok(one.clone()),
            other => Err(format!("{other:?}")),
        }
    });
    eprintln!(
        "pushed alert visible in Alertmanager {:?} after the last candidate left (no_master_for 1s)",
        left.elapsed()
    );
    let expected: Value = serde_json::json!({
        "alertname": "ZooKeeperElectionNoMaster",
        "severity": "critical",
        "ensemble": "test",
        "election": election,
    });
    assert_eq!(labels, expected, "exactly the rule's labels");
    assert_eq!(
        exporter
            .metrics()
            .unwrap()
            .get("zookeeper_election_has_master", &election_labels(&patient)),
        Some(0.0),
        "the patient set's election is masterless too, yet not pushed (one alert above)"
    );
    wait_for("the firing notification", T, || {
        match hook.count("ZooKeeperElectionNoMaster", "firing") {
            0 => Err("none yet".to_owned()),
            n => Ok(n),
        }
    });
    // The page links the runbook the rule's copy links (absolute).
    let runbook = hook
        .all()
        .iter()
        .find(|n| n["status"] == "firing")
        .map(|n| n["commonAnnotations"]["runbook_url"].clone());
    assert_eq!(
        runbook,
        Some(Value::from(format!(
            "{}#zookeeperelectionnomaster",
            zk_election_exporter::config::alerting::DEFAULT_RUNBOOK_URL
        )))
    );

    // Alertmanager restarts (alerts are not persisted): the resend brings
    // the alert back.
    stop(am);
    let am = alertmanager(&dir, am_port, hook.port);
    let restarted = Instant::now();
    wait_for("the alert back after the restart", T, || {
        match alerts_at(am_port, "ZooKeeperElectionNoMaster")?.len() {
            1 => Ok(()),
            n => Err(format!("{n}")),
        }
    });
    eprintln!(
        "alert back {:?} after Alertmanager restarted (resend_interval 2s)",
        restarted.elapsed()
    );

    // A candidate returns: resolved, and the receiver hears it.
    let back = client(&zk.address()).await;
    candidate(&back, &election, "n_", b"device-b").await;
    wait_for("the alert resolved in Alertmanager", T, || match alerts_at(
        am_port,
        "ZooKeeperElectionNoMaster",
    )?
    .len()
    {
        0 => Ok(()),
        n => Err(format!("{n} active")),
    });
    wait_for("the resolved notification", T, || {
        match hook.count("ZooKeeperElectionNoMaster", "resolved") {
            0 => Err("none yet".to_owned()),
            n => Ok(n),
        }
    });
    let m = exporter.metrics().unwrap();
    assert_eq!(
        m.get(
            "zookeeper_exporter_alerts_active",
            &[("alertname", "ZooKeeperElectionNoMaster")]
        ),
        Some(0.0)
    );
    let raw = exporter.raw_metrics();
    for family in [
        "zookeeper_exporter_alerts_active",
        "zookeeper_exporter_alerts_sent",
        "zookeeper_exporter_alerts_send_errors",
        "zookeeper_exporter_alerts_dropped",
        "zookeeper_exporter_alerts_read_back_errors",
    ] {
        assert!(
            raw.contains(&format!("# TYPE {family}")),
            "{family} emitted with [alerting]"
        );
    }
    let url = format!("http://127.0.0.1:{am_port}");
    assert!(
        m.get(
            "zookeeper_exporter_alerts_sent_total",
            &[("alertmanager", &url)]
        )
        .is_some_and(|n| n >= 3.0)
    );
    let read_back_errors = |url: &str| {
        m.get(
            "zookeeper_exporter_alerts_read_back_errors_total",
            &[("alertmanager", url), ("reason", "connect")],
        )
    };
    assert_eq!(
        read_back_errors(&format!("http://127.0.0.1:{dead}")),
        Some(1.0)
    );
    assert_eq!(read_back_errors(&url), None, "the live one answered");
    stop(am);
}

/// The shipped rules with every `for:` at 1 s (thresholds unchanged).
fn fast_rules() -> String {
    let rules = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/alerts/zookeeper.rules.yml"
    ))
    .unwrap();
    rules
        .lines()
        .map(|l| match l.trim_start().strip_prefix("for: ") {
            Some(_) => format!("{}for: 1s", &l[..l.len() - l.trim_start().len()]),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_push_one_alert_and_the_rule_stays_silent() {
    use common::program::{prometheus, query};
    let zk = shared_server();
    let base = unique_path("dedup");
    let admin = client(&zk.address()).await;
    let election = format!("{base}/bot_1");
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-a").await;

    let hook = Receiver::start();
    let am_dir = temp_dir("alertmanager-dedup");
    let am_port = free_port();
    let am = alertmanager(&am_dir, am_port, hook.port);
    let config = format!(
        "{}[alerting]\nalertmanagers = [\"http://127.0.0.1:{am_port}\"]\nno_master_for = \"1s\"\nresend_interval = \"1s\"\n",
        cluster_config(
            &zk.address(),
            &format!("{base}/*"),
            "four_letter_words = { enabled = false }"
        )
    );
    let replicas = [Exporter::start(&config), Exporter::start(&config)];
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
    let prometheus = prometheus("prometheus-dedup", &fast_rules(), "1s", am_port, &ports);
    for r in &replicas {
        r.until("the master exported", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    }

    drop(device);
    wait_for("the pushed alert in Alertmanager", T, || {
        match alerts_at(am_port, "ZooKeeperElectionNoMaster")?.len() {
            1 => Ok(()),
            n => Err(format!("{n} active")),
        }
    });
    // Every replica has delivered at least twice since, and Prometheus has
    // evaluated the rules over both replicas' scrapes for longer than the
    // rule's `for`: a second alert, or the rule's own copy, would show by
    // now (group_interval 1 s).
    let sent = |r: &Exporter| {
        r.metrics()
            .ok()
            .and_then(|m| {
                m.get(
                    "zookeeper_exporter_alerts_sent_total",
                    &[("alertmanager", &format!("http://127.0.0.1:{am_port}"))],
                )
            })
            .unwrap_or(0.0)
    };
    let before: Vec<f64> = replicas.iter().map(sent).collect();
    let evaluations = || -> Result<f64, String> {
        let (_, body) = http_get(prometheus.port, "/metrics")?;
        Metrics::parse(&body)
            .sum("prometheus_rule_evaluations_total", &[])
            .ok_or_else(|| "no evaluations counter".to_owned())
    };
    let evaluated = wait_for("Prometheus's counter", T, evaluations);
    let masterless = || -> Result<usize, String> {
        query(
            &prometheus,
            &format!("zookeeper_election_has_master{{election=\"{election}\"}} == 0"),
        )
        .map(|r| r.len())
    };
    wait_for(
        "both replicas scraped masterless",
        T,
        || match masterless()? {
            2 => Ok(()),
            n => Err(format!("{n} replicas")),
        },
    );
    let scraped = std::time::Instant::now();
    wait_for(
        "every replica delivered twice more, the rules evaluated",
        T,
        || {
            let now: Vec<f64> = replicas.iter().map(sent).collect();
            let e = evaluations()?;
            if now.iter().zip(&before).all(|(n, b)| *n >= b + 2.0)
                && e > evaluated
                && scraped.elapsed() >= Duration::from_secs(5)
            {
                Ok(())
            } else {
                Err(format!(
                    "replicas {now:?} (from {before:?}), evaluations {e}"
                ))
            }
        },
    );
    let in_am = alerts_at(am_port, "ZooKeeperElectionNoMaster").unwrap();
    assert_eq!(in_am.len(), 1, "one alert from two replicas: {in_am:?}");
    assert_eq!(
        hook.count("ZooKeeperElectionNoMaster", "firing"),
        1,
        "one notification: {:?}",
        hook.all()
    );
    // The rule stayed silent, not even pending: the agents push.
    let spoke = query(
        &prometheus,
        "max_over_time(ALERTS{alertname=\"ZooKeeperElectionNoMaster\"}[10m])",
    )
    .unwrap();
    assert!(spoke.is_empty(), "the rule spoke too: {spoke:?}");
    stop(am);
}

/// The agent killed mid-alert and started again: Alertmanager keeps the
/// pushed copy until its `endsAt` (four resends), and the new process
/// would wait out the hold from its own first sight of the trouble. With
/// a hold longer than that, the receiver got a resolution while the
/// election was still masterless, then a second page. The new process
/// reads back what Alertmanager has firing under its labels and carries
/// it on at its first reading: one firing notification, one resolution
/// when a candidate returns. (The first process holds 1 s only to get
/// there quickly; the second holds longer than Alertmanager keeps the
/// copy, as any hold over four resends does.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_restarted_mid_alert_carries_it_on_without_a_second_page() {
    let zk = shared_server();
    let base = unique_path("restarted");
    let admin = client(&zk.address()).await;
    let election = format!("{base}/bot_1");
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-a").await;

    let hook = Receiver::start();
    let dir = temp_dir("alertmanager-restarted");
    let am_port = free_port();
    let am = alertmanager(&dir, am_port, hook.port);
    let config = |hold: &str| {
        format!(
            "{}[alerting]\nalertmanagers = [\"http://127.0.0.1:{am_port}\"]\nno_master_for = \"{hold}\"\nresend_interval = \"3s\"\n",
            cluster_config(
                &zk.address(),
                &format!("{base}/*"),
                "four_letter_words = { enabled = false }"
            )
        )
    };
    let first = Exporter::start(&config("1s"));
    first
        .until("the master exported", T, |m| {
            master_identity(m, &election).as_deref() == Some("device-a")
        })
        .await;
    drop(device);
    let statuses = || hook.statuses("ZooKeeperElectionNoMaster", &[("election", &election)]);
    wait_for("the firing notification", T, || {
        match statuses().as_slice() {
            [one] if one == "firing" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    // Killed, and started again at once with a 30 s hold; Alertmanager's
    // copy ends 12 s after the last resend.
    drop(first);
    let killed = Instant::now();
    let second = Exporter::start(&config("30s"));
    let active = [("alertname", "ZooKeeperElectionNoMaster")];
    second
        .until("the alert carried on by the new process", T, |m| {
            m.get("zookeeper_exporter_alerts_active", &active) == Some(1.0)
        })
        .await;
    eprintln!(
        "the new process carries the alert on {:?} after the old one was killed",
        killed.elapsed()
    );
    // Past the old copy's end, with a resend and a group flush to spare:
    // a resolution would have reached the receiver by now.
    let past = Duration::from_secs(12 + 3 + 2);
    tokio::time::sleep(past.saturating_sub(killed.elapsed())).await;
    assert_eq!(
        statuses(),
        ["firing"],
        "one page through the restart: {:#?}",
        hook.all()
    );
    assert_eq!(
        alerts_at(am_port, "ZooKeeperElectionNoMaster")
            .unwrap()
            .len(),
        1
    );

    // A candidate returns: the one resolution.
    let back = client(&zk.address()).await;
    candidate(&back, &election, "n_", b"device-b").await;
    wait_for("the resolution", T, || match statuses().as_slice() {
        [_, two] if two == "resolved" => Ok(()),
        other => Err(format!("{other:?}")),
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(statuses(), ["firing", "resolved"], "{:#?}", hook.all());
    drop(second);
    stop(am);
}
