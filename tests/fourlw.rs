//! Ensemble health from four-letter words against real servers: roles and
//! leader failover in a 3-server ensemble, a hung (SIGSTOPped) member, the
//! default whitelist, the AdminServer fallback, members found in
//! /zookeeper/config, and single-flight collection.

mod common;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;

const T: Duration = Duration::from_secs(60);

fn cluster(servers: &[String], fourlw: &str) -> String {
    let quoted: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [{}]\nsession_timeout = \"10s\"\n[clusters.four_letter_words]\n{fourlw}\n",
        quoted.join(", ")
    )
}

fn total(m: &Metrics, name: &str) -> Option<f64> {
    m.get(name, &[("ensemble", "test")])
}

fn server_value(m: &Metrics, name: &str, server: &str) -> Option<f64> {
    m.get(name, &[("ensemble", "test"), ("server", server)])
}

fn leader(m: &Metrics) -> Option<String> {
    m.series("zookeeper_server_leader", &[("ensemble", "test")])
        .into_iter()
        .find(|(_, v)| *v == 1.0)
        .and_then(|(l, _)| l.get("server").cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_leader_failover_and_a_hung_member() {
    let mut ensemble = ZkEnsemble::start(3);
    let addresses: Vec<String> = ensemble.servers.iter().map(ZkServer::address).collect();
    let exporter = Exporter::start(&cluster(
        &addresses,
        "timeout = \"1s\"\nmin_interval = \"0s\"",
    ));
    let m = exporter
        .until("three settled members, one leader", T, |m| {
            // Settled: every member has processed a transaction of the new
            // epoch and says it is read-write (a fresh ensemble needs a moment).
            total(m, "zookeeper_ensemble_servers_up") == Some(3.0)
                && total(m, "zookeeper_ensemble_leaders") == Some(1.0)
                && addresses.iter().all(|a| {
                    server_value(m, "zookeeper_zxid_epoch", a).is_some_and(|e| e >= 1.0)
                        && server_value(m, "zookeeper_read_only", a) == Some(0.0)
                })
        })
        .await;
    for a in &addresses {
        assert_eq!(server_value(&m, "zookeeper_up", a), Some(1.0));
        assert_eq!(server_value(&m, "zookeeper_ruok", a), Some(1.0));
        assert_eq!(server_value(&m, "zookeeper_read_only", a), Some(0.0));
        assert_eq!(
            server_value(&m, "zookeeper_config_tick_time_seconds", a),
            Some(0.2)
        );
        assert!(
            server_value(&m, "zookeeper_znode_count", a).is_some(),
            "mntr keys are exported"
        );
        assert!(server_value(&m, "zookeeper_zxid_epoch", a).unwrap() >= 1.0);
    }
    assert!(total(&m, "zookeeper_ensemble_zxid_spread").is_some());
    let first = leader(&m).unwrap();
    let states = m.series("zookeeper_server_state", &[("state", "follower")]);
    assert_eq!(states.iter().filter(|(_, v)| *v == 1.0).count(), 2);

    // Stop the leader: a new one is elected and reported.
    let i = addresses.iter().position(|a| *a == first).unwrap();
    ensemble.servers[i].stop();
    let m = exporter
        .until("a new leader and its follower", T, |m| {
            total(m, "zookeeper_ensemble_leaders") == Some(1.0)
                && total(m, "zookeeper_ensemble_servers_up") == Some(2.0)
                && leader(m).is_some_and(|l| l != first)
        })
        .await;
    assert_eq!(server_value(&m, "zookeeper_up", &first), Some(0.0));
    assert_eq!(
        server_value(&m, "zookeeper_znode_count", &first),
        None,
        "no stale per-key series"
    );
    assert_eq!(
        server_value(&m, "zookeeper_config_tick_time_seconds", &first),
        None,
        "no stale configuration either (conf replies are reused only while the server answers)"
    );
    assert_eq!(total(&m, "zookeeper_ensemble_servers_up"), Some(2.0));
    let refused = m.get(
        "zookeeper_fourlw_errors_total",
        &[
            ("server", &*first),
            ("command", "mntr"),
            ("reason", "connect"),
        ],
    );
    assert!(refused.unwrap() >= 1.0);
    ensemble.servers[i].restart();
    exporter
        .until("all three back", T, |m| {
            total(m, "zookeeper_ensemble_servers_up") == Some(3.0)
        })
        .await;

    // Freeze a member: it accepts connections and never answers.
    let hung = &ensemble.servers[(i + 1) % 3];
    hung.freeze();
    // Every scrape while it hangs is bounded by the poller's hard timeout
    // (1 s) plus a margin; the first may race the stop, so wait for `up` 0.
    let m = wait_for_async("the hung member reported down", T, || {
        let started = Instant::now();
        let m = exporter.metrics()?;
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(1500),
            "scrape with a hung member took {took:?}"
        );
        match server_value(&m, "zookeeper_up", &hung.address()) {
            Some(0.0) => Ok(m),
            other => Err(format!("up = {other:?}")),
        }
    })
    .await;
    for other in addresses.iter().filter(|a| **a != hung.address()) {
        assert_eq!(
            server_value(&m, "zookeeper_up", other),
            Some(1.0),
            "{other} is intact"
        );
    }
    let timeouts = m.get(
        "zookeeper_fourlw_errors_total",
        &[
            ("server", &*hung.address()),
            ("command", "mntr"),
            ("reason", "timeout"),
        ],
    );
    assert!(timeouts.unwrap() >= 1.0);
    hung.thaw();
    exporter
        .until("the thawed member answers", T, |m| {
            server_value(m, "zookeeper_up", &hung.address()) == Some(1.0)
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_whitelist_is_reported_as_not_allowed() {
    let zk = ZkServer::start_with(ServerOptions {
        whitelist: None,
        admin_port: None,
    });
    let exporter = Exporter::start(&cluster(&[zk.address()], "min_interval = \"0s\""));
    let a = zk.address();
    let m = exporter
        .until("srvr-based metrics", T, |m| {
            server_value(m, "zookeeper_node_count", &a).is_some()
        })
        .await;
    assert_eq!(
        server_value(&m, "zookeeper_up", &a),
        Some(1.0),
        "srvr answers by default"
    );
    assert!(server_value(&m, "zookeeper_zxid_counter", &a).is_some());
    assert_eq!(
        m.get(
            "zookeeper_server_state",
            &[("server", &*a), ("state", "standalone")]
        ),
        Some(1.0)
    );
    for cmd in ["mntr", "ruok", "isro", "conf"] {
        assert_eq!(
            m.get("zookeeper_fourlw_up", &[("server", &*a), ("command", cmd)]),
            Some(0.0),
            "{cmd}"
        );
        let refused = m.get(
            "zookeeper_fourlw_errors_total",
            &[("server", &*a), ("command", cmd), ("reason", "not_allowed")],
        );
        assert!(refused.unwrap() >= 1.0, "{cmd}");
        let parse = m.get(
            "zookeeper_fourlw_errors_total",
            &[("server", &*a), ("command", cmd), ("reason", "parse")],
        );
        assert_eq!(parse, Some(0.0), "a refusal is not a parse error");
    }
    // Several more scrapes; the refusal is still logged once per command.
    for _ in 0..3 {
        exporter.metrics().unwrap();
    }
    let log = exporter.log();
    assert_eq!(
        log.matches("four-letter word `mntr` is not allowed")
            .count(),
        1,
        "{log}"
    );
    assert!(log.contains("4lw.commands.whitelist"));
    // The ghost-master check needs cons: they say why they are silent.
    let m = exporter
        .until("cons refused", T, |m| {
            m.get(
                "zookeeper_fourlw_errors_total",
                &[
                    ("server", &*a),
                    ("command", "cons"),
                    ("reason", "not_allowed"),
                ],
            )
            .is_some_and(|n| n >= 1.0)
        })
        .await;
    assert_eq!(
        m.get(
            "zookeeper_fourlw_up",
            &[("server", &*a), ("command", "cons")]
        ),
        Some(0.0)
    );
    assert!(
        m.series("zookeeper_election_master_session_connected", &[])
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_server_stands_in_for_refused_words() {
    let admin_port = free_port();
    let zk = ZkServer::start_with(ServerOptions {
        whitelist: None,
        admin_port: Some(admin_port),
    });
    wait_for("AdminServer", T, || {
        http_get(admin_port, "/commands/ruok").map(|_| ())
    });
    let a = zk.address();
    let config =
        format!("min_interval = \"0s\"\nadmin_url = \"http://{{host}}:{admin_port}/commands\"");
    let exporter = Exporter::start(&cluster(std::slice::from_ref(&a), &config));
    let m = exporter
        .until("mntr through the AdminServer", T, |m| {
            m.get(
                "zookeeper_fourlw_up",
                &[("server", &*a), ("command", "mntr")],
            ) == Some(1.0)
        })
        .await;
    assert!(server_value(&m, "zookeeper_znode_count", &a).is_some());
    assert_eq!(server_value(&m, "zookeeper_ruok", &a), Some(1.0));
    assert_eq!(
        server_value(&m, "zookeeper_config_tick_time_seconds", &a),
        Some(0.2)
    );
    assert!(
        m.samples.contains_key("zookeeper_readlatency_count"),
        "summaries from JSON too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_published_in_zookeeper_config_are_polled() {
    let ensemble = ZkEnsemble::start(3);
    let only_first = vec![ensemble.servers[0].address()];
    let exporter = Exporter::start(&cluster(&only_first, "min_interval = \"0s\""));
    let m = exporter
        .until("all members found", T, |m| {
            total(m, "zookeeper_ensemble_servers_up") == Some(3.0)
        })
        .await;
    for s in &ensemble.servers {
        assert_eq!(server_value(&m, "zookeeper_up", &s.address()), Some(1.0));
    }
    assert_eq!(total(&m, "zookeeper_ensemble_leaders"), Some(1.0));
}

/// A stand-in server that counts exchanges and answers `srvr`-style text
/// slowly, to observe how scrapes share collections.
fn counting_server(delay: Duration) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut word = [0u8; 4];
                // The exporter's ZooKeeper session connects here too; only
                // four-letter words count.
                if stream.read_exact(&mut word).is_ok() && &word == b"srvr" {
                    c.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(delay);
                    let _ = stream.write_all(b"Zookeeper version: 3.8.0, built on x\nZxid: 0x100000005\nMode: standalone\nNode count: 4\n");
                }
            });
        }
    });
    (address, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_scrapes_share_one_collection() {
    let (address, exchanges) = counting_server(Duration::from_millis(300));
    let exporter = Exporter::start(&cluster(
        std::slice::from_ref(&address),
        "commands = [\"srvr\"]\nmin_interval = \"30s\"\ntimeout = \"5s\"",
    ));
    let port = exporter.port;
    let scrapes: Vec<_> = (0..5)
        .map(|_| std::thread::spawn(move || http_get(port, "/metrics").unwrap()))
        .collect();
    for s in scrapes {
        let (status, body) = s.join().unwrap();
        assert_eq!(status, 200);
        assert!(
            body.contains("zookeeper_node_count{"),
            "every scrape sees the shared result"
        );
    }
    assert_eq!(
        exchanges.load(Ordering::SeqCst),
        1,
        "five concurrent scrapes, one exchange"
    );
    exporter.metrics().unwrap();
    assert_eq!(
        exchanges.load(Ordering::SeqCst),
        1,
        "reused within min_interval"
    );
}

/// `ruok` and `isro` are asked only until `mntr` gives a server state; the
/// facts stay exported, derived from that state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruok_and_isro_are_not_asked_once_mntr_gives_the_state() {
    let zk = shared_server();
    let a = zk.address();
    let exporter = Exporter::start(&cluster(std::slice::from_ref(&a), "min_interval = \"0s\""));
    let asked =
        |m: &Metrics, cmd: &str| m.get("zookeeper_fourlw_up", &[("server", &*a), ("command", cmd)]);
    let m = exporter
        .until("a collection after mntr gave the state", T, |m| {
            asked(m, "mntr") == Some(1.0) && asked(m, "ruok").is_none()
        })
        .await;
    assert_eq!(asked(&m, "isro"), None, "isro not asked either");
    assert_eq!(asked(&m, "srvr"), Some(1.0));
    assert_eq!(server_value(&m, "zookeeper_ruok", &a), Some(1.0));
    assert_eq!(server_value(&m, "zookeeper_read_only", &a), Some(0.0));
}
