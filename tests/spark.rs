//! `--system spark` against Spark's own standalone masters (PyPI's
//! `pyspark`, run with `spark-class`): two masters in ZooKeeper recovery
//! mode on loopback, the agent given only the system and its directory.
//! Spark's latch nodes carry no data, so the agent names the master by the
//! host of the session holding the lowest latch node, as `cons` lists it.
//! Both masters run on one host here, so the host alone cannot tell them
//! apart: the test also checks that the session the agent names as master
//! is one the ALIVE master logged as its own. A SIGTERM and a SIGKILL of
//! the ALIVE master each count exactly one switch.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;

const T: Duration = Duration::from_secs(120);

/// Where pip put pyspark (its `bin/spark-class` and jars).
fn spark_home() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.util; print(importlib.util.find_spec('pyspark').submodule_search_locations[0])",
        ])
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.success(),
        "pyspark is not installed (scripts/test.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// One Spark standalone master on free loopback ports.
struct Master {
    name: String,
    rpc: u16,
    web: u16,
    dir: PathBuf,
    zk: String,
    root: String,
    child: Option<Child>,
}

impl Master {
    fn start(zk: &str, root: &str, name: &str) -> Self {
        let mut master = Self {
            name: name.to_owned(),
            rpc: free_port(),
            web: free_port(),
            dir: temp_dir(&format!("spark-{name}")),
            zk: zk.to_owned(),
            root: root.to_owned(),
            child: None,
        };
        master.run();
        master
    }

    fn run(&mut self) {
        let log = std::fs::File::create(self.dir.join("out.log")).unwrap();
        let home = spark_home();
        let command = format!(
            "SPARK_HOME={home} SPARK_LOG_DIR={dir} SPARK_NO_DAEMONIZE=1 \
             SPARK_MASTER_OPTS='-Dspark.deploy.recoveryMode=ZOOKEEPER -Dspark.deploy.zookeeper.url={zk} -Dspark.deploy.zookeeper.dir={root}' \
             SPARK_DAEMON_MEMORY=256m exec {home}/bin/spark-class org.apache.spark.deploy.master.Master \
             --host 127.0.0.1 --port {rpc} --webui-port {web}",
            home = home.display(),
            dir = self.dir.display(),
            zk = self.zk,
            root = self.root,
            rpc = self.rpc,
            web = self.web,
        );
        self.child = Some(spawn_watched(&command, log));
        let what = format!("Spark master {} answering", self.name);
        wait_for(&what, T, || self.status().map(|_| ()));
    }

    /// The master's own status (`ALIVE`, `STANDBY`, `RECOVERING`) from
    /// its `/json/` endpoint.
    fn status(&self) -> Result<String, String> {
        let (code, body) = http_get(self.web, "/json/")?;
        if code != 200 {
            return Err(format!("/json/ answered {code}"));
        }
        let json: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        json["status"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no status in {body}"))
    }

    /// The host of the master's own URL (`spark://HOST:PORT`).
    fn host(&self) -> String {
        let (_, body) = http_get(self.web, "/json/").unwrap();
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let url = json["url"].as_str().unwrap().to_owned();
        url.trim_start_matches("spark://")
            .rsplit_once(':')
            .unwrap()
            .0
            .to_owned()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }

    /// The ZooKeeper sessions this master's run logged (Curator's client
    /// prints each session it establishes): its latch's owner is one.
    fn sessions(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| l.split("session id = ").nth(1))
            .filter_map(|rest| rest.split(',').next())
            .map(str::to_owned)
            .collect()
    }

    /// Stops the master with `signal` and waits until it is gone.
    fn stop(&mut self, signal: &str) {
        // Anchored on the JVM's main class and this master's own port.
        let pattern = format!(
            "java .*org\\.apache\\.spark\\.deploy\\.master\\.Master --host 127\\.0\\.0\\.1 --port {} ",
            self.rpc
        );
        stop_matching(&pattern, signal, &mut self.child, T);
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        self.stop("KILL");
    }
}

/// The agent's view of `election`: master identity and session.
fn agents_master(exporter: &Exporter, election: &str) -> Result<(String, String), String> {
    let (code, body) = http_get(exporter.port, &format!("/api/v1/elections{election}"))?;
    if code != 200 {
        return Err(format!("answered {code}: {body}"));
    }
    let json: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let master = &json["elections"][0]["master"];
    match (master["identity"].as_str(), master["session"].as_str()) {
        (Some(id), Some(session)) => Ok((id.to_owned(), session.to_owned())),
        _ => Err(format!("no master in {body}")),
    }
}

/// Spark's own view: `alive` says it is ALIVE.
fn spark_alive(alive: &Master) -> Result<(), String> {
    match alive.status()?.as_str() {
        "ALIVE" => Ok(()),
        other => Err(format!("{} is {other}", alive.name)),
    }
}

/// The agent names `alive`: the host of its URL, by a session that
/// master logged as its own.
fn agent_names(exporter: &Exporter, alive: &Master, election: &str) -> Result<(), String> {
    let (identity, session) = agents_master(exporter, election)?;
    let (host, theirs) = (alive.host(), alive.sessions());
    if identity == host && theirs.contains(&session) {
        Ok(())
    } else {
        Err(format!(
            "the agent names {identity:?} by session {session}; {} is {host} with sessions {theirs:?}",
            alive.name
        ))
    }
}

/// Waits until Spark says `alive` is ALIVE and the agent names it.
async fn until_both_name(exporter: &Exporter, alive: &Master, election: &str) -> Metrics {
    until_both_show(
        exporter,
        &alive.name,
        T,
        || spark_alive(alive).map_err(|e| format!("{e}\n{}", alive.log())),
        || agent_names(exporter, alive, election),
    )
    .await
}

/// Stops `old` with `signal` and times the failover to `new` from both
/// sides, until both name it.
async fn fail_over(
    exporter: &Exporter,
    old: &mut Master,
    new: &Master,
    signal: &str,
    election: &str,
) -> Metrics {
    let since = Instant::now();
    old.stop(signal);
    time_failover(
        &format!("Spark 4.3 standalone masters, SIG{signal}"),
        "4 s (the server's maximum; Spark asks 60 s)",
        since,
        T,
        || spark_alive(new),
        || agent_names(exporter, new, election),
    )
    .await;
    exporter.metrics().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_names_sparks_alive_master_through_a_stop_and_a_crash() {
    // A server of its own with short sessions: Spark asks for 60 s, and
    // its masters leave their sessions to expire even on SIGTERM.
    let zk = ZkServer::start_custom(ServerOptions::default(), "maxSessionTimeout=4000\n", "");
    let root = unique_path("spark");
    let election = format!("{root}/leader_election");
    let mut m1 = Master::start(&zk.address(), &root, "m1");
    until_both_alive_or_standby(&m1, "ALIVE").await;
    let mut m2 = Master::start(&zk.address(), &root, "m2");
    until_both_alive_or_standby(&m2, "STANDBY").await;
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [[clusters.systems]]\nkind = \"spark\"\nroot = \"{root}\"\n",
        zk.address()
    ));
    let m = until_both_name(&exporter, &m1, &election).await;
    assert_eq!(switches(&m, &election), Some(0.0));
    until_candidates(&exporter, &election, 2.0, T).await;

    // Discovery alone, given only where to look, recognises the layout.
    let found = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n\
         [clusters.discovery]\nroot = \"{root}\"\ninterval = \"1s\"\nsettle = \"1s\"\n",
        zk.address()
    ));
    until_both_name(&found, &m1, &election).await;
    let trees = watched_trees(&found).unwrap();
    assert!(
        trees.contains(&(
            election.clone(),
            "election".to_owned(),
            "recognised".to_owned()
        )),
        "{trees:?}"
    );
    drop(found);

    // SIGTERM, as Spark's stop-master.sh sends it.
    let m = fail_over(&exporter, &mut m1, &m2, "TERM", &election).await;
    assert_eq!(switches(&m, &election), Some(1.0), "one stop, one switch");

    // m1 back as the standby, then a crash of the ALIVE master.
    m1.run();
    until_both_alive_or_standby(&m1, "STANDBY").await;
    until_candidates(&exporter, &election, 2.0, T).await;
    let m = fail_over(&exporter, &mut m2, &m1, "KILL", &election).await;
    assert_eq!(switches(&m, &election), Some(2.0), "one crash, one switch");

    let events = timeline(&exporter, &election);
    let switched: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["kind"] == "switch")
        .map(|e| {
            (
                e["from"]["node"].as_str().unwrap_or(""),
                e["cause"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(switched.len(), 2, "{events:?}");
    // Spark leaves its sessions to expire even on SIGTERM: a master whose
    // dead session the ghost check flagged first went by expiry, else the
    // deletion is all the timeline can tell.
    for (node, cause) in &switched {
        let flagged = events
            .iter()
            .any(|e| e["kind"] == "ghost_flagged" && e["from"]["node"] == *node);
        let expected = if flagged {
            "session_expired"
        } else {
            "node_deleted"
        };
        assert_eq!(*cause, expected, "{node}: {events:?}");
    }
    // Masters are named by cons rounds, never guessed: the first master
    // at least was unnamed until a round listed its session.
    let named: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "master_named")
        .map(|e| &e["to"]["identity"])
        .collect();
    assert!(
        !named.is_empty() && named.iter().all(|id| *id == "127.0.0.1"),
        "{events:?}"
    );
    drop(m1);
    drop(m2);
}

async fn until_both_alive_or_standby(master: &Master, want: &str) {
    wait_for_async(&format!("{} {want}", master.name), T, || {
        match master.status()?.as_str() {
            s if s == want => Ok(()),
            other => Err(format!("{other}\n{}", master.log())),
        }
    })
    .await;
}
