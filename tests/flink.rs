//! `--system flink` against Flink's own JobManagers (PyPI's
//! `apache-flink-libraries` ships the distribution's jars): two standalone
//! session JobManagers in ZooKeeper HA mode on loopback, the agent given
//! only the system and its root. Flink's latch nodes carry no data; the
//! latch holder publishes its REST server's URL as leader information
//! beside the latch, and the agent names the master by it. Flink's own
//! view of who leads is its JobManager's word (`<url> was granted
//! leadership`), whose REST server must answer at that URL. A SIGTERM and
//! a SIGKILL of the leading JobManager each count exactly one switch.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;

const T: Duration = Duration::from_secs(120);

/// Where pip put the Flink distribution's `lib/` (package
/// `apache-flink-libraries`, module `pyflink`).
fn flink_lib() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.util; print(importlib.util.find_spec('pyflink').submodule_search_locations[0])",
        ])
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.success(),
        "apache-flink-libraries is not installed (scripts/test.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("lib");
    assert!(
        lib.join("flink-dist-2.3.0.jar").exists(),
        "{} has no flink-dist-2.3.0.jar",
        lib.display()
    );
    lib
}

/// One standalone session JobManager on free loopback ports.
struct JobManager {
    name: String,
    rest: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl JobManager {
    fn start(zk: &str, root: &str, name: &str) -> Self {
        let dir = temp_dir(&format!("flink-{name}"));
        let (rpc, rest) = (free_port(), free_port());
        std::fs::create_dir_all(dir.join("conf")).unwrap();
        std::fs::write(
            dir.join("conf/config.yaml"),
            format!(
                "jobmanager:\n  rpc:\n    address: 127.0.0.1\n    port: {rpc}\n  bind-host: 127.0.0.1\n\
                 \x20 memory:\n    process:\n      size: 700m\n\
                 rest:\n  address: 127.0.0.1\n  bind-address: 127.0.0.1\n  port: {rest}\n\
                 blob:\n  server:\n    port: \"0\"\n\
                 high-availability:\n  type: zookeeper\n  storageDir: file://{ha}\n\
                 \x20 jobmanager:\n    port: \"{rpc}\"\n\
                 \x20 cluster-id: /c1\n\
                 \x20 zookeeper:\n    quorum: {zk}\n    path:\n      root: {root}\n\
                 \x20   client:\n      session-timeout: 4000\n",
                ha = std::env::temp_dir().join(format!("flink-ha-{}", std::process::id())).display(),
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("log4j2.properties"),
            "rootLogger.level = INFO\nrootLogger.appenderRef.console.ref = Console\n\
             appender.console.name = Console\nappender.console.type = CONSOLE\n\
             appender.console.layout.type = PatternLayout\n\
             appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n",
        )
        .unwrap();
        let mut jm = Self {
            name: name.to_owned(),
            rest,
            dir,
            child: None,
        };
        jm.run();
        jm
    }

    fn run(&mut self) {
        let log = std::fs::File::create(self.dir.join("out.log")).unwrap();
        let command = format!(
            "exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp '{lib}/*' \
             -Dlog4j.configurationFile={dir}/log4j2.properties \
             org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint --configDir {dir}/conf",
            lib = flink_lib().display(),
            dir = self.dir.display(),
        );
        self.child = Some(spawn_watched(&command, log));
        let what = format!("JobManager {} answering", self.name);
        wait_for(&what, T, || match http_get(self.rest, "/overview")? {
            (200, _) => Ok(()),
            (code, body) => Err(format!("{code} {body}")),
        });
    }

    /// The URL its REST server publishes when it leads.
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.rest)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }

    /// Stops the JobManager with `signal` and waits until it is gone.
    fn stop(&mut self, signal: &str) {
        let pattern = format!(
            "^java .*StandaloneSessionClusterEntrypoint --configDir {}/conf$",
            self.dir.display()
        );
        stop_matching(&pattern, signal, &mut self.child, T);
    }
}

impl Drop for JobManager {
    fn drop(&mut self) {
        self.stop("KILL");
    }
}

/// Flink's own view: this run of `jm` says its REST server was granted
/// leadership (and has not lost it since), and that server answers.
fn flink_leads(jm: &JobManager) -> Result<(), String> {
    let log = jm.log();
    let granted = format!("{} was granted leadership", jm.url());
    let (won, lost) = (log.rfind(&granted), log.rfind("revoked leadership"));
    match (won, lost) {
        (Some(w), l) if l.is_none_or(|l| l < w) => match http_get(jm.rest, "/overview")? {
            (200, _) => Ok(()),
            (code, _) => Err(format!("{} leads but its REST answers {code}", jm.name)),
        },
        _ => Err(format!("{} does not lead", jm.name)),
    }
}

/// The agent names `jm` as master: its REST URL.
fn agent_names(exporter: &Exporter, jm: &JobManager, election: &str) -> Result<(), String> {
    match master_identity(&exporter.metrics()?, election) {
        Some(id) if id == jm.url() => Ok(()),
        other => Err(format!("the agent names {other:?}, not {}", jm.url())),
    }
}

/// Waits until Flink says `jm` leads and the agent names it.
async fn until_both_name(exporter: &Exporter, jm: &JobManager, election: &str) -> Metrics {
    until_both_show(
        exporter,
        &jm.name,
        T,
        || flink_leads(jm).map_err(|e| format!("{e}\n{}", jm.log())),
        || agent_names(exporter, jm, election),
    )
    .await
}

/// Stops `old` with `signal` and times the failover to `new` from both
/// sides, until both name it.
async fn fail_over(
    exporter: &Exporter,
    old: &mut JobManager,
    new: &JobManager,
    signal: &str,
    election: &str,
) -> Metrics {
    let since = Instant::now();
    old.stop(signal);
    time_failover(
        &format!("Flink 2.3 standalone JobManagers, SIG{signal}"),
        "4 s (high-availability.zookeeper.client.session-timeout)",
        since,
        T,
        || flink_leads(new),
        || agent_names(exporter, new, election),
    )
    .await;
    exporter.metrics().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_names_flinks_leading_jobmanager_through_a_stop_and_a_crash() {
    let zk = shared_server();
    let root = unique_path("flink");
    let election = format!("{root}/c1/leader/latch");
    let mut j1 = JobManager::start(&zk.address(), &root, "j1");
    wait_for_async("j1 leading", T, || flink_leads(&j1)).await;
    let mut j2 = JobManager::start(&zk.address(), &root, "j2");
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [[clusters.systems]]\nkind = \"flink\"\nroot = \"{root}\"\n",
        zk.address()
    ));
    let m = until_both_name(&exporter, &j1, &election).await;
    assert_eq!(switches(&m, &election), Some(0.0));
    until_candidates(&exporter, &election, 2.0, T).await;
    assert!(flink_leads(&j2).is_err(), "one leader");

    // Discovery alone, given only where to look, recognises the layout.
    let found = Exporter::start(&discovery_config(
        &zk.address(),
        &format!("[clusters.discovery]\nroot = \"{root}\"\ninterval = \"1s\"\nsettle = \"1s\""),
    ));
    until_both_name(&found, &j1, &election).await;
    let trees = watched_trees(&found).unwrap();
    assert!(
        trees.contains(&(
            format!("{root}/*/leader/latch"),
            "election".to_owned(),
            "recognised".to_owned()
        )),
        "{trees:?}"
    );
    // The leader information's nodes are Flink's, not generic groups.
    assert_eq!(trees.len(), 1, "{trees:?}");
    drop(found);

    // SIGTERM: the JobManager closes its session, the nodes go at once.
    let m = fail_over(&exporter, &mut j1, &j2, "TERM", &election).await;
    assert_eq!(switches(&m, &election), Some(1.0), "one stop, one switch");
    // The handover: from j1's latch node going to j2's leader information
    // naming j2, the first evidence that it took over.
    let handover = wait_for_async("the handover measured", T, || {
        let (_, body) = http_get(exporter.port, &format!("/api/v1/elections{election}"))?;
        let json: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        json["elections"][0]["last_handover"]["seconds"]
            .as_f64()
            .ok_or_else(|| format!("no handover in {body}"))
    })
    .await;
    eprintln!("Flink handover after SIGTERM: {handover:.3} s");
    let m = exporter.metrics().unwrap();
    assert_eq!(
        m.get(
            "zookeeper_tree_handover_seconds_count",
            &[
                ("ensemble", "test"),
                ("tree", &format!("{root}/*/leader/latch"))
            ]
        ),
        Some(1.0)
    );

    // j1 back as the standby, then a crash of the leader.
    j1.run();
    until_candidates(&exporter, &election, 2.0, T).await;
    let m = fail_over(&exporter, &mut j2, &j1, "KILL", &election).await;
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
    assert_eq!(
        switched[0].1, "node_deleted",
        "the stop closed the session: {events:?}"
    );
    let crashed = switched[1].0;
    let flagged = events
        .iter()
        .any(|e| e["kind"] == "ghost_flagged" && e["from"]["node"] == crashed);
    let expected = if flagged {
        "session_expired"
    } else {
        "node_deleted"
    };
    assert_eq!(switched[1].1, expected, "{events:?}");
    // Each new leader was named by the leader information it published.
    let named: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "master_named")
        .filter_map(|e| e["to"]["identity"].as_str())
        .collect();
    assert!(named.contains(&j2.url().as_str()), "{events:?}");
    drop(j1);
    drop(j2);
}
