//! The alerting agent against Debian's Alertmanager: an election loses its
//! last candidate and the agent's own alert is in Alertmanager seconds
//! later (with exactly its rule twin's labels), survives an Alertmanager
//! restart by being resent, and resolves when a candidate returns; a
//! webhook receiver run by the test sees the notifications.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::program::alerts_at;
use common::*;
use serde_json::Value;

const T: Duration = Duration::from_secs(60);

/// A webhook receiver: every notification body, in arrival order.
fn receiver() -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_ok()
                && let Ok(v) = serde_json::from_slice(&body)
            {
                sink.lock().unwrap().push(v);
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (port, got)
}

/// Debian's Alertmanager on `port` with its data in `dir`, notifying the
/// webhook at `hook`.
fn alertmanager(dir: &Path, port: u16, hook: u16) -> std::process::Child {
    std::fs::write(
        dir.join("am.yml"),
        format!(
            "route:\n  receiver: hook\n  group_by: [alertname, cluster, election]\n  group_wait: 0s\n  group_interval: 1s\n  repeat_interval: 1h\n\
             receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:{hook}/\n        send_resolved: true\n"
        ),
    )
    .unwrap();
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

/// Notifications the receiver got for `alertname` with `status`.
fn notified(got: &Mutex<Vec<Value>>, alertname: &str, status: &str) -> usize {
    got.lock()
        .unwrap()
        .iter()
        .filter(|n| n["status"] == status && n["commonLabels"]["alertname"] == alertname)
        .count()
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

    let (hook, got) = receiver();
    let dir = temp_dir("alertmanager");
    let am_port = free_port();
    let am = alertmanager(&dir, am_port, hook);
    // A second election set holds its masterless alerts for an hour.
    let patient = format!("{base}/patient/bot_9");
    mkdir(&admin, &patient).await;
    let exporter = Exporter::start(&format!(
        "{}[[clusters.elections]]\npath = \"{base}/patient/*\"\nno_master_for = \"1h\"\n\
         [alerting]\nalertmanagers = [\"http://127.0.0.1:{am_port}\"]\nno_master_for = \"1s\"\nresend_interval = \"2s\"\n",
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
        "cluster": "test",
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
        match notified(&got, "ZooKeeperElectionNoMaster", "firing") {
            0 => Err("none yet".to_owned()),
            n => Ok(n),
        }
    });
    // The page links the runbook the rule's copy links (absolute).
    let runbook = got
        .lock()
        .unwrap()
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
    let am = alertmanager(&dir, am_port, hook);
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
        match notified(&got, "ZooKeeperElectionNoMaster", "resolved") {
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
async fn two_replicas_and_the_rule_make_one_alert_and_one_notification() {
    use common::program::{prometheus, query};
    let zk = shared_server();
    let base = unique_path("dedup");
    let admin = client(&zk.address()).await;
    let election = format!("{base}/bot_1");
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-a").await;

    let (hook, got) = receiver();
    let am_dir = temp_dir("alertmanager-dedup");
    let am_port = free_port();
    let am = alertmanager(&am_dir, am_port, hook);
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
    // The rule fires too (its copy goes to Alertmanager every second).
    wait_for("the rule firing in Prometheus", T, || {
        let firing = query(
            &prometheus,
            "ALERTS{alertname=\"ZooKeeperElectionNoMaster\",alertstate=\"firing\"}",
        )?;
        if firing.is_empty() {
            Err("not yet".to_owned())
        } else {
            Ok(())
        }
    });
    // Every source has delivered at least twice since: a second alert, if
    // the copies differed, would have been notified by now (group_interval 1 s).
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
    // Prometheus's own counter of alerts sent to Alertmanager.
    let prom_sent = || -> Result<f64, String> {
        let (_, body) = http_get(prometheus.port, "/metrics")?;
        Metrics::parse(&body)
            .sum("prometheus_notifications_sent_total", &[])
            .ok_or_else(|| "no notifications counter".to_owned())
    };
    let prom_before = wait_for("Prometheus's counter", T, prom_sent);
    wait_for("every source delivered twice more", T, || {
        let now: Vec<f64> = replicas.iter().map(sent).collect();
        let p = prom_sent()?;
        if now.iter().zip(&before).all(|(n, b)| *n >= b + 2.0) && p >= prom_before + 2.0 {
            Ok(())
        } else {
            Err(format!(
                "replicas {now:?} (from {before:?}), Prometheus {p} (from {prom_before})"
            ))
        }
    });
    let in_am = alerts_at(am_port, "ZooKeeperElectionNoMaster").unwrap();
    assert_eq!(in_am.len(), 1, "one alert from three sources: {in_am:?}");
    assert_eq!(
        notified(&got, "ZooKeeperElectionNoMaster", "firing"),
        1,
        "one notification: {:?}",
        got.lock().unwrap()
    );
    stop(am);
}
