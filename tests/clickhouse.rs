//! `--system clickhouse` against Debian's ClickHouse (18.16): two servers
//! replicating one table through the test ZooKeeper, the agent given only
//! the system and its root. Its master is the replica ClickHouse itself
//! reports as leader (`system.replicas.is_leader`); the table's replicas
//! count while their `is_active` marker lives (the replica nodes are
//! persistent); a graceful stop and a SIGKILL of the leader each count
//! exactly one switch.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(90);

/// One ClickHouse server on free loopback ports.
struct Server {
    replica: String,
    http: u16,
    dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
}

impl Server {
    fn start(zk_port: u16, replica: &str) -> Self {
        let dir = temp_dir(&format!("clickhouse-{replica}"));
        let (tcp, http, interserver) = (free_port(), free_port(), free_port());
        let config = dir.join("config.xml");
        std::fs::write(
            &config,
            format!(
                "<?xml version=\"1.0\"?>\n<yandex>\n\
                 <logger><level>information</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog><console>0</console></logger>\n\
                 <listen_host>127.0.0.1</listen_host><tcp_port>{tcp}</tcp_port><http_port>{http}</http_port>\n\
                 <interserver_http_port>{interserver}</interserver_http_port><interserver_http_host>127.0.0.1</interserver_http_host>\n\
                 <path>{d}/data/</path><tmp_path>{d}/tmp/</tmp_path>\n\
                 <users_config>/etc/clickhouse-server/users.xml</users_config>\n\
                 <default_profile>default</default_profile><default_database>default</default_database>\n\
                 <mark_cache_size>5368709</mark_cache_size>\n\
                 <zookeeper><node><host>127.0.0.1</host><port>{zk_port}</port></node><session_timeout_ms>4000</session_timeout_ms></zookeeper>\n\
                 <macros><replica>{replica}</replica></macros>\n</yandex>\n",
                d = dir.display()
            ),
        )
        .unwrap();
        let mut server = Self {
            replica: replica.to_owned(),
            http,
            dir,
            config,
            child: None,
        };
        server.run();
        server
    }

    fn run(&mut self) {
        let log = std::fs::File::create(self.dir.join("out.log")).unwrap();
        let command = format!("clickhouse-server --config-file={}", self.config.display());
        self.child = Some(spawn_watched(&command, log));
        let what = format!("ClickHouse {} answering", self.replica);
        wait_for(&what, T, || self.query("SELECT 1").map(|_| ()));
    }

    /// A query over the HTTP interface; its text result.
    fn query(&self, sql: &str) -> Result<String, String> {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "--data-binary", sql])
            .arg(format!("http://127.0.0.1:{}/", self.http))
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && !text.contains("DB::Exception") {
            Ok(text)
        } else {
            Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Whether ClickHouse says this replica leads the table now.
    fn is_leader(&self) -> Result<bool, String> {
        let answer = self.query("SELECT is_leader FROM system.replicas WHERE table = 't'")?;
        Ok(answer.trim() == "1")
    }

    /// Stops the server with `signal` (TERM: a graceful stop, KILL: a
    /// crash) and waits until it is gone.
    fn stop(&mut self, signal: &str) {
        let pattern = format!("^clickhouse-server --config-file={}", self.config.display());
        stop_matching(&pattern, signal, &mut self.child, T);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop("KILL");
    }
}

/// Waits until ClickHouse says `leader` leads and the agent names it.
async fn until_both_name(exporter: &Exporter, leader: &Server, election: &str) -> Metrics {
    let what = format!("ClickHouse's leader {}", leader.replica);
    wait_for_async(&what, T, || match leader.is_leader()? {
        true => Ok(()),
        false => Err("not the leader yet".to_owned()),
    })
    .await;
    exporter
        .until(&format!("the agent's master {}", leader.replica), T, |m| {
            master_identity(m, election).as_deref() == Some(leader.replica.as_str())
        })
        .await
}

/// Stops `old` with `signal` and times the failover to `new`: ClickHouse's
/// `system.replicas.is_leader` against the agent's master.
async fn fail_over(
    exporter: &Exporter,
    old: &mut Server,
    new: &Server,
    signal: &str,
    election: &str,
) {
    let since = std::time::Instant::now();
    old.stop(signal);
    time_failover(
        &format!("ClickHouse 18.16, SIG{signal}"),
        "4 s (session_timeout_ms)",
        since,
        T,
        || match new.is_leader()? {
            true => Ok(()),
            false => Err("not the leader yet".to_owned()),
        },
        || match master_identity(&exporter.metrics()?, election) {
            Some(id) if id == new.replica => Ok(()),
            other => Err(format!("names {other:?}")),
        },
    )
    .await;
}

async fn until_members(exporter: &Exporter, group: &str, n: f64) {
    exporter
        .until(&format!("{n} live replicas"), T, |m| {
            m.get(
                "zookeeper_group_members",
                &[("ensemble", "test"), ("group", group)],
            ) == Some(n)
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_names_clickhouses_leader_and_counts_live_replicas() {
    let zk = shared_server();
    let root = unique_path("clickhouse");
    let table = format!("{root}/tables/01/t");
    let (election, replicas) = (
        format!("{table}/leader_election"),
        format!("{table}/replicas"),
    );
    let mut r1 = Server::start(zk.port, "r1");
    let mut r2 = Server::start(zk.port, "r2");
    for server in [&r1, &r2] {
        server
            .query(&format!(
                "CREATE TABLE t (d Date, x UInt32) ENGINE = ReplicatedMergeTree('{table}', '{{replica}}', d, x, 8192)"
            ))
            .unwrap();
    }
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [[clusters.systems]]\nkind = \"clickhouse\"\nroot = \"{root}\"\n",
        zk.address()
    ));
    // The first replica to create the table leads.
    let m = until_both_name(&exporter, &r1, &election).await;
    assert_eq!(switches(&m, &election), Some(0.0));
    until_members(&exporter, &replicas, 2.0).await;
    assert!(!r2.is_leader().unwrap(), "one leader");

    // Discovery alone, given only where to look, recognises the layout;
    // the nodes every INSERT writes for milliseconds make no tree.
    let found = Exporter::start(&discovery_config(
        &zk.address(),
        &format!("[clusters.discovery]\nroot = \"{root}\"\ninterval = \"1s\"\nsettle = \"1s\""),
    ));
    found
        .until("discovery recognised ClickHouse", T, |m| {
            master_identity(m, &election).as_deref() == Some("r1")
        })
        .await;
    let trees = watched_trees(&found).unwrap();
    for tree in [
        (format!("{root}/tables/*/*/leader_election"), "election"),
        (format!("{root}/tables/*/*/replicas"), "group"),
    ] {
        assert!(
            trees.contains(&(tree.0.clone(), tree.1.to_owned(), "recognised".to_owned())),
            "{tree:?} in {trees:?}"
        );
    }
    assert_eq!(trees.len(), 2, "no generic tree beside them: {trees:?}");
    drop(found);

    // A graceful stop of the leader: r2 takes over, r1 leaves the replicas.
    fail_over(&exporter, &mut r1, &r2, "TERM", &election).await;
    let m = until_both_name(&exporter, &r2, &election).await;
    assert_eq!(switches(&m, &election), Some(1.0), "one stop, one switch");
    until_members(&exporter, &replicas, 1.0).await;

    // r1 back (a standby now), then a crash of the leader.
    r1.run();
    until_members(&exporter, &replicas, 2.0).await;
    assert!(!r1.is_leader().unwrap(), "r2 still leads");
    fail_over(&exporter, &mut r2, &r1, "KILL", &election).await;
    let m = until_both_name(&exporter, &r1, &election).await;
    assert_eq!(switches(&m, &election), Some(2.0), "one crash, one switch");
    until_members(&exporter, &replicas, 1.0).await;
    let events = timeline(&exporter, &election);
    let switched: Vec<(&str, &str, &str)> = events
        .iter()
        .filter(|e| e["kind"] == "switch")
        .map(|e| {
            let name = |k: &str| e[k]["identity"].as_str().unwrap_or("");
            (name("from"), name("to"), e["cause"].as_str().unwrap_or(""))
        })
        .collect();
    // The stop deletes the leader's node; the crash leaves it to expire.
    // Sequential: the next candidate is there already, so each switch
    // names both masters.
    assert_eq!(
        switched,
        [
            ("r1", "r2", "node_deleted"),
            ("r2", "r1", crash_cause(&events, "r2"))
        ],
        "{events:?}"
    );
}
