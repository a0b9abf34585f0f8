//! `--system patroni` against Debian's Patroni and PostgreSQL: two members
//! of one scope in ZooKeeper, the agent given only the system and its
//! namespace. Its master is Patroni's own leader (its REST `/cluster`),
//! with the other member as the one standby; a switchover and a SIGKILL of
//! the leader (Patroni and PostgreSQL, as a host crash) each count exactly
//! one switch. Patroni and PostgreSQL run as the `postgres` user when the
//! tests run as root (PostgreSQL refuses root).

mod common;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use common::database::{as_root, postgres_bin_dir};
use common::*;
use serde_json::Value;

/// Patroni's own pace, slow enough for two cores: the leader key's session
/// lives `TTL` seconds after the last renewal.
const TTL: u64 = 10;
const T: Duration = Duration::from_secs(90);

/// One Patroni member with its PostgreSQL, on free loopback ports.
struct Member {
    rest: u16,
    dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
}

impl Member {
    fn start(zk: &str, namespace: &str, name: &str) -> Self {
        let dir = temp_dir(&format!("patroni-{name}"));
        let (rest, pg) = (free_port(), free_port());
        let config = dir.join("patroni.yml");
        std::fs::write(
            &config,
            format!(
                "scope: demo\nnamespace: {namespace}/\nname: {name}\n\
                 restapi:\n  listen: 127.0.0.1:{rest}\n  connect_address: 127.0.0.1:{rest}\n\
                 zookeeper:\n  hosts: ['{zk}']\n\
                 bootstrap:\n  dcs:\n    ttl: {TTL}\n    loop_wait: 1\n    retry_timeout: 4\n\
                 \x20   maximum_lag_on_failover: 104857600\n    postgresql:\n      use_pg_rewind: false\n\
                 \x20 initdb:\n  - encoding: UTF8\n\
                 postgresql:\n  listen: 127.0.0.1:{pg}\n  connect_address: 127.0.0.1:{pg}\n\
                 \x20 data_dir: {data}\n  bin_dir: {bin}\n  pgpass: {pgpass}\n\
                 \x20 authentication:\n    replication: {{username: replicator, password: rep}}\n\
                 \x20   superuser: {{username: postgres, password: su}}\n\
                 \x20 parameters:\n    unix_socket_directories: {sockets}\n\
                 \x20 pg_hba:\n  - host replication replicator 127.0.0.1/32 md5\n\
                 \x20 - host all all 127.0.0.1/32 md5\n  - local all all trust\n",
                data = dir.join("data").display(),
                bin = postgres_bin_dir().display(),
                pgpass = dir.join("pgpass").display(),
                sockets = dir.display(),
            ),
        )
        .unwrap();
        let run = if as_root() {
            let owned = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status();
            assert!(owned.is_ok_and(|s| s.success()), "chown {}", dir.display());
            format!("runuser -u postgres -- patroni {}", config.display())
        } else {
            format!("patroni {}", config.display())
        };
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let child = spawn_watched(&run, log);
        Self {
            rest,
            dir,
            config,
            child: Some(child),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// As a host crash: Patroni and its PostgreSQL killed at once.
    fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The watcher kills Patroni with -9 when it gets TERM.
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = Command::new("pkill")
            .args(["-9", "-f"])
            .arg(self.dir.display().to_string())
            .status();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.crash();
    }
}

/// Who Patroni says leads the scope, asked of `member`'s REST API.
fn patroni_leader(member: &Member) -> Result<String, String> {
    let (status, body) = http_get(member.rest, "/cluster")?;
    if status != 200 {
        return Err(format!("/cluster: {status}"));
    }
    let cluster: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let members = cluster["members"].as_array().cloned().unwrap_or_default();
    members
        .iter()
        .find(|m| m["role"] == "leader" && m["state"] == "running")
        .and_then(|m| m["name"].as_str().map(str::to_owned))
        .ok_or_else(|| format!("no running leader yet: {body}"))
}

/// Waits until Patroni (asked of `member`) counts `name` as a replica in
/// service: only then can it take over.
async fn until_replica(member: &Member, name: &str) {
    wait_for_async(&format!("{name} a running replica"), T, || {
        let (_, body) = http_get(member.rest, "/cluster")?;
        let cluster: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let ready = cluster["members"].as_array().is_some_and(|members| {
            members.iter().any(|m| {
                m["name"] == name
                    && m["role"] == "replica"
                    && (m["state"] == "running" || m["state"] == "streaming")
            })
        });
        if ready { Ok(()) } else { Err(body) }
    })
    .await;
}

/// Waits until Patroni (asked of `member`) and the agent name the same
/// leader, `expected`; returns the agent's metrics then.
async fn until_both_name(
    exporter: &Exporter,
    member: &Member,
    election: &str,
    expected: &str,
) -> Metrics {
    wait_for_async(&format!("Patroni's leader {expected}"), T, || {
        patroni_leader(member).and_then(|l| {
            if l == expected {
                Ok(())
            } else {
                Err(format!("Patroni's leader is {l}"))
            }
        })
    })
    .await;
    exporter
        .until(&format!("the agent's master {expected}"), T, |m| {
            master_identity(m, election).as_deref() == Some(expected)
        })
        .await
}

/// Times the failover to `expected` (Patroni's REST, asked of `member`,
/// against the agent's master), from `since`.
async fn time_patroni(
    case: &str,
    exporter: &Exporter,
    member: &Member,
    election: &str,
    expected: &str,
    since: std::time::Instant,
) {
    let names = |who: Option<String>| match who {
        Some(l) if l == expected => Ok(()),
        other => Err(format!("names {other:?}")),
    };
    time_failover(
        &format!("Patroni 3.0.2 + PostgreSQL 15, {case}"),
        &format!("{TTL} s (Patroni's ttl)"),
        since,
        T,
        || names(patroni_leader(member).ok()),
        || names(master_identity(&exporter.metrics()?, election)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_names_patronis_leader_through_a_switchover_and_a_crash() {
    let zk = shared_server();
    let namespace = unique_path("patroni");
    let election = format!("{namespace}/demo/leader");
    let pg1 = Member::start(&zk.address(), &namespace, "pg1");
    wait_for_async("pg1 bootstrapped as leader", T, || {
        patroni_leader(&pg1).map_err(|e| format!("{e}\n{}", pg1.log()))
    })
    .await;
    let mut pg2 = Member::start(&zk.address(), &namespace, "pg2");
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [[clusters.systems]]\nkind = \"patroni\"\nroot = \"{namespace}\"\n",
        zk.address()
    ));
    let m = until_both_name(&exporter, &pg1, &election, "pg1").await;
    assert_eq!(switches(&m, &election), Some(0.0));
    exporter
        .until("pg2 counted as the standby", T, |m| {
            m.get("zookeeper_election_candidates", &election_labels(&election)) == Some(2.0)
        })
        .await;

    // Discovery alone, given only where to look, recognises the layout.
    let found = Exporter::start(&discovery_config(
        &zk.address(),
        &format!(
            "[clusters.discovery]\nroot = \"{namespace}\"\ninterval = \"1s\"\nsettle = \"1s\""
        ),
    ));
    found
        .until("discovery recognised Patroni", T, |m| {
            master_identity(m, &election).as_deref() == Some("pg1")
        })
        .await;
    let trees = watched_trees(&found).unwrap();
    assert!(
        trees.contains(&(
            format!("{namespace}/*/leader"),
            "election".to_owned(),
            "recognised".to_owned()
        )),
        "{trees:?}"
    );
    drop(found);

    // A switchover: Patroni hands the leader key to pg2.
    until_replica(&pg1, "pg2").await;
    let since = std::time::Instant::now();
    let out = Command::new("patronictl")
        .arg("-c")
        .arg(&pg1.config)
        .args([
            "switchover",
            "--leader",
            "pg1",
            "--candidate",
            "pg2",
            "--force",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "patronictl switchover: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    time_patroni("switchover", &exporter, &pg1, &election, "pg2", since).await;
    let m = until_both_name(&exporter, &pg2, &election, "pg2").await;
    assert_eq!(
        switches(&m, &election),
        Some(1.0),
        "one switchover, one switch"
    );

    // pg1 follows again before the crash (else no member could take over).
    until_replica(&pg2, "pg1").await;
    exporter
        .until("pg1 back as the standby", T, |m| {
            m.get("zookeeper_election_candidates", &election_labels(&election)) == Some(2.0)
        })
        .await;
    let since = std::time::Instant::now();
    pg2.crash();
    time_patroni("SIGKILL", &exporter, &pg1, &election, "pg1", since).await;
    let m = until_both_name(&exporter, &pg1, &election, "pg1").await;
    assert_eq!(switches(&m, &election), Some(2.0), "one crash, one switch");
    let events = timeline(&exporter, &election);
    let gone: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["kind"] == "masterless_started")
        .map(|e| {
            (
                e["from"]["identity"].as_str().unwrap(),
                e["cause"].as_str().unwrap(),
            )
        })
        .collect();
    // The switchover deletes the key; the crash leaves it to expire.
    assert_eq!(
        gone,
        [
            ("pg1", "node_deleted"),
            ("pg2", crash_cause(&events, "pg2"))
        ],
        "how each leader went: {events:?}"
    );
    drop(pg1);
    drop(pg2);
}
