//! Every alert the agent pushes, through every routine disturbance of the
//! stack that decides and delivers it, asserting the exact notifications
//! an on-call engineer's receiver gets: one firing when the trouble starts,
//! one resolution when it ends, nothing in between.
//!
//! One stack per test, shared by all alerts at once: Debian's ZooKeeper
//! (sessions of up to 10 minutes, so that a ghost outlasts the test),
//! the application's lease table in PostgreSQL, two agent replicas,
//! Debian's Prometheus with the shipped rules (scraping through proxies, so
//! its data can have a gap), Debian's Alertmanager and a webhook receiver.
//! The troubles, each on its own election or cluster:
//!
//! - `ZooKeeperElectionNoMaster`: the only candidate leaves.
//! - `ZooKeeperElectionGhostMaster`: the master's process dies without
//!   closing its session, which ZooKeeper keeps for its 10-minute timeout
//!   (seen by the ghost check, on a third cluster); it ends when an
//!   operator deletes the ghost's node and the standby takes over.
//! - `ZooKeeperElectionDuplicateIdentity`: a second candidate registers
//!   the master's identity.
//! - `ZooKeeperElectionRecordDisagrees`: the record beside a lock node
//!   names someone other than the lock's owner.
//! - `ZooKeeperElectionSplitBrain`: the master is cut off, ZooKeeper
//!   elects the standby, and the old master goes on renewing its lease.
//! - `ZooKeeperElectionLeaseExpired`: the master stops renewing behind a
//!   live session.
//! - `ZooKeeperExporterSessionDown`: the agents' link to a second cluster
//!   is cut.
//! - `ZooKeeperElectionMasterFlapping`: mastership moves every 3 s.
//! - `ZooKeeperElectionEpochRegression`: a stale controller keeps writing
//!   a lower fencing epoch.
//!
//! Once they all fire, the stack is disturbed in turn, every time checking
//! that nothing more reached the receiver: Prometheus loses its scrapes
//! for 20 s, the agents' own ZooKeeper session to the first cluster is lost
//! (and expires), the lease database goes down, both agents are killed
//! with SIGKILL and started again, one replica stops for good. Then every
//! trouble ends, and each alert must resolve once.
//!
//! Once with the agents pushing (the rules stay silent), once with
//! Prometheus alone deciding (no `[alerting]`). The two alerts judged over
//! a window (flapping, epoch regression) judge it over 30 s here, set alike
//! in the rules' `_config` and the agents' `[alerting] windows`, so that
//! they end within the test.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::database::{Database, Engine, Renewer, lease, until_lease_agrees};
use common::ongoing::Ongoing;
use common::program::{mixin_rules, prometheus, query};
use common::receiver::{Receiver, hooked_alertmanager};
use common::*;
use zookeeper_client::{Acls, CreateMode};

const T: Duration = Duration::from_secs(90);

/// How long the receiver is watched for a notification that must not come:
/// the agents resend every 3 s and Prometheus every second, Alertmanager
/// flushes every second, and a pushed copy expires 12 s after its last
/// resend, so any second voice or lost copy speaks within it.
const QUIET: Duration = Duration::from_secs(17);

/// The window of flapping and epoch regressions, for rules and agents.
const WINDOW: &str = "30s";

/// Every alert the agent can push (docs/runbooks.md).
const PUSHED: [&str; 9] = [
    "ZooKeeperElectionNoMaster",
    "ZooKeeperElectionGhostMaster",
    "ZooKeeperElectionDuplicateIdentity",
    "ZooKeeperElectionMasterFlapping",
    "ZooKeeperElectionEpochRegression",
    "ZooKeeperElectionRecordDisagrees",
    "ZooKeeperElectionSplitBrain",
    "ZooKeeperElectionLeaseExpired",
    "ZooKeeperExporterSessionDown",
];

/// The ZooKeeper of this file's tests: sessions of up to 10 minutes.
fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZkServer::start_custom(ServerOptions::default(), "maxSessionTimeout=600000\n", "")
    })
}

/// One alert as Alertmanager groups it: name, cluster, election.
type Alert = (String, String, String);

/// Every notification of a pushed alert the receiver got, as its statuses
/// in order.
fn notified(receiver: &Receiver) -> BTreeMap<Alert, Vec<String>> {
    let mut got: BTreeMap<Alert, Vec<String>> = BTreeMap::new();
    for n in receiver.all() {
        let labels = &n["commonLabels"];
        let name = labels["alertname"].as_str().unwrap_or_default();
        if !PUSHED.contains(&name) {
            continue;
        }
        let label = |k: &str| labels[k].as_str().unwrap_or_default().to_owned();
        got.entry((name.to_owned(), label("ensemble"), label("election")))
            .or_default()
            .push(n["status"].as_str().unwrap_or_default().to_owned());
    }
    got
}

fn expect(alerts: &[Alert], statuses: &[&str]) -> BTreeMap<Alert, Vec<String>> {
    alerts
        .iter()
        .map(|a| (a.clone(), statuses.iter().map(|s| s.to_string()).collect()))
        .collect()
}

async fn until_notified(receiver: &Receiver, what: &str, want: &BTreeMap<Alert, Vec<String>>) {
    wait_for_async(what, T, || {
        let got = notified(receiver);
        if &got == want {
            Ok(())
        } else {
            Err(format!("{got:#?}"))
        }
    })
    .await;
}

/// After [`QUIET`], the receiver has got exactly `want`.
async fn still_notified(receiver: &Receiver, after: &str, want: &BTreeMap<Alert, Vec<String>>) {
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        &notified(receiver),
        want,
        "{after}: every notification {:#?}",
        receiver.all()
    );
}

/// One agent replica on a port of its own, so that it can be killed and
/// started again where Prometheus scrapes it.
struct Replica {
    port: u16,
    config: PathBuf,
    agent: Option<Exporter>,
}

impl Replica {
    fn start(config: &str) -> Self {
        let port = free_port();
        let file = temp_dir("matrix-agent").join("config.toml");
        std::fs::write(
            &file,
            format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\n{config}"),
        )
        .unwrap();
        let mut replica = Self {
            port,
            config: file,
            agent: None,
        };
        replica.run();
        replica
    }

    fn run(&mut self) {
        let args = vec!["--config".to_owned(), self.config.display().to_string()];
        self.agent = Some(Exporter::spawn(&args, &[], self.port));
    }

    fn agent(&self) -> &Exporter {
        self.agent.as_ref().expect("the replica runs")
    }

    /// SIGKILL, as a crash or an OOM kill ends it.
    fn kill(&mut self) {
        drop(self.agent.take());
    }
}

async fn until_session(agent: &Exporter, cluster: &str, connected: f64) {
    agent
        .until_values(
            &format!("the session to {cluster} at {connected}"),
            T,
            &[(
                "zookeeper_session_state",
                &[("ensemble", cluster), ("state", "connected")],
                Some(connected),
            )],
        )
        .await;
}

async fn matrix(pushing: bool, tag: &str) {
    let zk = server();
    let mut db = Database::start(Engine::Postgres).await;
    db.create_lease_table("master_lease").await;
    let receiver = Receiver::start();
    let am = hooked_alertmanager(&format!("am-matrix-{tag}"), &receiver);
    let base = unique_path(&format!("matrix_{tag}"));
    let admin = client(&zk.address()).await;
    let no_master = format!("{base}/plain/no_master");
    let flapping = format!("{base}/plain/flapping");
    let (controller, epoch) = (
        format!("{base}/epo/controller"),
        format!("{base}/epo/controller_epoch"),
    );
    let duplicate = format!("{base}/plain/duplicate");
    let (bot_1, bot_2) = (
        format!("{base}/leased/bot_1"),
        format!("{base}/leased/bot_2"),
    );
    for path in [&no_master, &flapping, &duplicate, &bot_1, &bot_2] {
        mkdir(&admin, path).await;
    }
    mkdir(&admin, &format!("{base}/blind")).await;
    let haunted = format!("{base}/ghost/bot");
    mkdir(&admin, &haunted).await;
    let (lock, crumb) = (format!("{base}/rec/lock"), format!("{base}/rec/crumb"));
    mkdir(&admin, &format!("{base}/rec")).await;
    mkdir(&admin, &format!("{base}/epo")).await;
    admin
        .create(
            &epoch,
            b"10",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    admin
        .create(
            &crumb,
            b"inst-r",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();

    // Everything healthy before the agents start, so that no election is
    // without its master for longer than a hold while the test sets up.
    let lone = client(&zk.address()).await;
    candidate(&lone, &no_master, "n_", b"inst-n").await;
    let flapper = client(&zk.address()).await;
    for i in 0..2 {
        candidate(&flapper, &flapping, "n_", format!("inst-f{i}").as_bytes()).await;
    }
    let dup_1 = client(&zk.address()).await;
    candidate(&dup_1, &duplicate, "n_", b"inst-d").await;
    let a_link = Proxy::start(zk.address()).await;
    let a = abandonable_client(&a_link.address(), Duration::from_secs(4)).await;
    candidate(&a, &bot_1, "n_", b"inst-a").await;
    let b = client(&zk.address()).await;
    candidate(&b, &bot_1, "n_", b"inst-b").await;
    // inst-a's lease outlasts the database outage below, so the split
    // brain is still on record when the database is back.
    let renew_a = Renewer::start(&db, "bot_1", "inst-a", 30.0);
    let x = client(&zk.address()).await;
    candidate(&x, &bot_2, "n_", b"inst-x").await;
    let renew_x = Renewer::start(&db, "bot_2", "inst-x", 3.0);
    let ghost = abandonable_client(&zk.address(), Duration::from_secs(600)).await;
    let ghost_node = candidate(&ghost, &haunted, "n_", b"inst-g").await;
    let standby = client(&zk.address()).await;
    candidate(&standby, &haunted, "n_", b"inst-s").await;
    let owner = client(&zk.address()).await;
    owner
        .create(
            &lock,
            b"inst-r",
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    owner
        .create(
            &controller,
            b"{\"version\":2,\"brokerid\":1,\"timestamp\":\"1\",\"kraftControllerEpoch\":-1}",
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();

    // The agents reach the first cluster through a link that can be lost,
    // the second through one that is cut for the session alert.
    let link = Proxy::start(zk.address()).await;
    let blind = Proxy::start(zk.address()).await;
    let alerting = if pushing {
        format!(
            "[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\nresend_interval = \"3s\"\n\
             no_master_for = \"2s\"\nsession_lost_for = \"2s\"\n\
             holds = {{ ZooKeeperElectionGhostMaster = \"2s\", ZooKeeperElectionDuplicateIdentity = \"2s\", \
             ZooKeeperElectionRecordDisagrees = \"2s\" }}\n\
             windows = {{ ZooKeeperElectionMasterFlapping = \"{WINDOW}\", \
             ZooKeeperElectionEpochRegression = \"{WINDOW}\" }}\n",
            am.port
        )
    } else {
        String::new()
    };
    let config = format!(
        "{alerting}[[clusters]]\nname = \"matrix\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/plain/*\"\n\
         [[clusters.elections]]\npath = \"{base}/rec/lock\"\nstyle = \"node\"\n\
         record = {{ path = \"{base}/rec/crumb\", identity = \"data\" }}\n\
         [[clusters.elections]]\npath = \"{base}/epo/controller\"\nstyle = \"node\"\n\
         identity = \"json:/brokerid\"\nepoch = \"{base}/epo/controller_epoch\"\n\
         [[clusters.elections]]\npath = \"{base}/leased/*\"\n{}\n\
         [[clusters]]\nname = \"matrix-blind\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/blind/*\"\n\
         [[clusters]]\nname = \"matrix-ghost\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [clusters.ghost_check]\ncons_interval = \"300ms\"\n\
         [[clusters.elections]]\npath = \"{base}/ghost/*\"\n",
        link.address(),
        lease(
            &db,
            "master_lease",
            ", split_brain_for = \"2s\", expired_for = \"2s\""
        ),
        blind.address(),
        zk.address(),
    );
    let mut replicas = vec![Replica::start(&config), Replica::start(&config)];
    let mut scrapes = Vec::new();
    for r in &replicas {
        scrapes.push(Proxy::start(format!("127.0.0.1:{}", r.port)).await);
    }
    let targets: Vec<u16> = scrapes.iter().map(|p| p.port).collect();
    // The shipped rules on the test's time scale: every `for` 2 s (the
    // agents' holds above), a gap in the agents' series ridden out 30 s,
    // the windows the agents' own.
    let rules = mixin_rules(
        &format!(
            "agentGap: '30s', alerts+: {{ \
             ZooKeeperElectionMasterFlapping+: {{ window: '{WINDOW}' }}, \
             ZooKeeperElectionEpochRegression+: {{ window: '{WINDOW}' }} }},"
        ),
        "2s",
    );
    let prom = prometheus(
        &format!("prometheus-matrix-{tag}"),
        &rules,
        "1s",
        am.port,
        &targets,
    );

    // Everything healthy.
    for r in &replicas {
        r.agent()
            .until_values(
                "the record agrees",
                T,
                &[(
                    "zookeeper_election_record_agrees",
                    &[("election", &*lock)],
                    Some(1.0),
                )],
            )
            .await;
        until_lease_agrees(r.agent(), &bot_1, T).await;
        until_lease_agrees(r.agent(), &bot_2, T).await;
        until_session(r.agent(), "matrix-blind", 1.0).await;
        r.agent()
            .until_values(
                "the controller's epoch read",
                T,
                &[(
                    "zookeeper_election_epoch",
                    &[("election", &*controller)],
                    Some(10.0),
                )],
            )
            .await;
        r.agent()
            .until_values(
                "the ghost's master live",
                T,
                &[(
                    "zookeeper_election_master_session_connected",
                    &[("election", &*haunted)],
                    Some(1.0),
                )],
            )
            .await;
    }
    assert_eq!(
        notified(&receiver),
        BTreeMap::new(),
        "healthy, nothing pages"
    );

    // Start: every trouble at once.
    let troubles: Vec<Alert> = [
        ("ZooKeeperElectionNoMaster", "matrix", &*no_master),
        ("ZooKeeperElectionGhostMaster", "matrix-ghost", &haunted),
        ("ZooKeeperElectionDuplicateIdentity", "matrix", &duplicate),
        ("ZooKeeperElectionRecordDisagrees", "matrix", &lock),
        ("ZooKeeperElectionSplitBrain", "matrix", &bot_1),
        ("ZooKeeperElectionLeaseExpired", "matrix", &bot_2),
        ("ZooKeeperExporterSessionDown", "matrix-blind", ""),
        ("ZooKeeperElectionMasterFlapping", "matrix", &flapping),
        ("ZooKeeperElectionEpochRegression", "matrix", &controller),
    ]
    .iter()
    .map(|(n, c, e)| (n.to_string(), c.to_string(), e.to_string()))
    .collect();
    drop(lone);
    drop(ghost);
    let dup_2 = client(&zk.address()).await;
    candidate(&dup_2, &duplicate, "n_", b"inst-d").await;
    admin.set_data(&crumb, b"inst-old", None).await.unwrap();
    a_link.cut();
    renew_x.stop().await;
    blind.cut();
    // Mastership moves every 3 s: the master's node goes, the next takes
    // over, a new candidate queues behind.
    let flaps = {
        let (c, path) = (flapper.clone(), flapping.clone());
        Ongoing::start(Duration::from_secs(3), move |round| {
            let (c, path) = (c.clone(), path.clone());
            async move {
                candidate(&c, &path, "n_", format!("inst-f{}", round + 1).as_bytes()).await;
                let (mut nodes, _) = c.get_children(&path).await.unwrap();
                nodes.sort_by_key(|n| n[n.len() - 10..].parse::<i64>().unwrap());
                c.delete(&format!("{path}/{}", nodes[0]), None)
                    .await
                    .unwrap();
            }
        })
    };
    // The controller writes epoch 11, and 2 s later a stale one writes
    // its lower epoch back, every 5 s. The agents read a node's data after
    // its change event, so two writes at once would show them only the
    // second: the pause lets each see both.
    let regressions = {
        let (c, path) = (admin.clone(), epoch.clone());
        Ongoing::start(Duration::from_secs(3), move |_| {
            let (c, path) = (c.clone(), path.clone());
            async move {
                c.set_data(&path, b"11", None).await.unwrap();
                tokio::time::sleep(Duration::from_secs(2)).await;
                c.set_data(&path, b"9", None).await.unwrap();
            }
        })
    };
    let firing = expect(&troubles, &["firing"]);
    until_notified(&receiver, "every trouble notified once", &firing).await;
    still_notified(&receiver, "every alert firing", &firing).await;

    // Prometheus's data has a gap.
    for s in &scrapes {
        s.cut();
    }
    tokio::time::sleep(Duration::from_secs(20)).await;
    for s in &scrapes {
        s.restore();
    }
    still_notified(&receiver, "a 20 s gap in the scrapes", &firing).await;

    // The agents' session to the first cluster is lost and expires: for
    // the time of it they are blind there, and say so, once.
    link.cut();
    let lost = (
        "ZooKeeperExporterSessionDown".to_owned(),
        "matrix".to_owned(),
        String::new(),
    );
    let mut blinded = firing.clone();
    blinded.insert(lost.clone(), vec!["firing".to_owned()]);
    until_notified(&receiver, "the lost session notified", &blinded).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    link.restore();
    for r in &replicas {
        until_session(r.agent(), "matrix", 1.0).await;
    }
    blinded.insert(
        lost.clone(),
        vec!["firing".to_owned(), "resolved".to_owned()],
    );
    until_notified(&receiver, "the session back", &blinded).await;
    still_notified(&receiver, "the session lost and expired", &blinded).await;

    // The lease database goes down and comes back.
    db.kill();
    for r in &replicas {
        r.agent()
            .until_values(
                "the lease source failing",
                T,
                &[("zookeeper_lease_up", &[], Some(0.0))],
            )
            .await;
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    db.restart().await;
    for r in &replicas {
        r.agent()
            .until_values(
                "the lease source back",
                T,
                &[("zookeeper_lease_up", &[], Some(1.0))],
            )
            .await;
    }
    still_notified(&receiver, "the lease database down for 10 s", &blinded).await;

    // Both agents crash and are started again.
    let killed = Instant::now();
    for r in &mut replicas {
        r.kill();
    }
    for r in &mut replicas {
        r.run();
    }
    eprintln!(
        "both agents started again {:?} after the kill",
        killed.elapsed()
    );
    for r in &replicas {
        until_session(r.agent(), "matrix", 1.0).await;
    }
    still_notified(&receiver, "both agents restarted", &blinded).await;

    // One replica stops for good.
    let mut gone = replicas.remove(1);
    gone.kill();
    still_notified(&receiver, "one replica gone", &blinded).await;

    // Every trouble ends (flapping and the regressions a window later).
    flaps.stop().await;
    regressions.stop().await;
    let back = client(&zk.address()).await;
    candidate(&back, &no_master, "n_", b"inst-n2").await;
    drop(dup_2);
    admin
        .delete(&format!("{haunted}/{ghost_node}"), None)
        .await
        .unwrap();
    admin.set_data(&crumb, b"inst-r", None).await.unwrap();
    renew_a.stop().await;
    let renew_b = Renewer::start(&db, "bot_1", "inst-b", 3.0);
    let renew_x = Renewer::start(&db, "bot_2", "inst-x", 3.0);
    blind.restore();
    let mut over = expect(&troubles, &["firing", "resolved"]);
    over.insert(lost, vec!["firing".to_owned(), "resolved".to_owned()]);
    wait_for_async("every trouble resolved once", T + T, || {
        let got = notified(&receiver);
        if got == over {
            Ok(())
        } else {
            Err(format!("{got:#?}"))
        }
    })
    .await;
    still_notified(&receiver, "every trouble over", &over).await;

    // Pushing, the rules of the pushed alerts never spoke; alone, they did.
    let spoke = query(
        &prom,
        &format!(
            "max_over_time(ALERTS{{alertname=~\"{}\"}}[15m])",
            PUSHED.join("|")
        ),
    )
    .unwrap();
    assert_eq!(
        spoke.is_empty(),
        pushing,
        "the rules' own alerts while {}: {spoke:?}",
        if pushing {
            "the agents push"
        } else {
            "Prometheus alone decides"
        }
    );
    renew_b.stop().await;
    renew_x.stop().await;
    drop((a, b, x, dup_1, back, owner, standby, admin, flapper));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pushed_alert_notifies_once_through_every_disturbance_with_two_replicas_pushing() {
    matrix(true, "pushing").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pushed_alert_notifies_once_through_every_disturbance_with_prometheus_alone() {
    matrix(false, "alone").await;
}
