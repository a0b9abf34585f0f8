//! One alert, one voice: what an on-call engineer's receiver gets for the
//! lease alerts, with the shipped rules evaluated by Debian's Prometheus
//! and the agent pushing to Debian's Alertmanager, over a real ZooKeeper
//! and the application's lease table in PostgreSQL.
//!
//! Each scenario asserts the exact notifications: one firing when the
//! trouble starts, one resolution when it ends, never a resolution while
//! it holds (the lease database down), never a re-fire after it ended.
//! Once with two agent replicas pushing (one of them stopped mid-alert),
//! once with Prometheus alone deciding (no `[alerting]`).

mod common;

use std::time::Duration;

use common::database::{Database, Engine, Renewer, lease, until_lease_agrees};
use common::program::{mixin_rules, prometheus, query};
use common::receiver::{Receiver, hooked_alertmanager};
use common::*;

const T: Duration = Duration::from_secs(90);

/// How long the receiver is watched for a notification that must not
/// come: Prometheus resends every second and Alertmanager flushes every
/// second in these stacks, so a second voice speaks within a few.
const QUIET: Duration = Duration::from_secs(15);

const SPLIT_BRAIN: &str = "ZooKeeperElectionSplitBrain";
const LEASE_EXPIRED: &str = "ZooKeeperElectionLeaseExpired";

async fn until_notified(receiver: &Receiver, alert: &str, election: &str, want: &[&str]) {
    wait_for_async(
        &format!("{alert} of {election} notified as {want:?}"),
        T,
        || {
            let got = receiver.statuses(alert, &[("election", election)]);
            if got == want {
                Ok(())
            } else {
                Err(format!("{got:?}"))
            }
        },
    )
    .await;
}

/// After [`QUIET`], the notifications of `alert` for `election` are still
/// exactly `want`.
async fn still_notified(receiver: &Receiver, alert: &str, election: &str, want: &[&str]) {
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        receiver.statuses(alert, &[("election", election)]),
        want,
        "{alert} of {election}: every notification {:#?}",
        receiver.all()
    );
}

/// The two troubles, in order, against whoever decides.
///
/// - Lease expired on `bot_2`: inst-x leads, renews, then stops renewing
///   behind its live session. The database goes down for a while and
///   comes back; inst-x renews again: over.
/// - Split brain on `bot_1`: inst-a leads through a proxy and renews its
///   lease; inst-b stands by. The proxy is cut: ZooKeeper expires inst-a
///   and elects inst-b while inst-a goes on renewing. Then inst-a stops
///   and its lease runs out: the split brain is over.
async fn scenario(pushing: bool, tag: &str) {
    let zk = shared_server();
    let mut db = Database::start(Engine::Postgres).await;
    db.create_lease_table("master_lease").await;
    let receiver = Receiver::start();
    let am = hooked_alertmanager(&format!("am-voices-{tag}"), &receiver);
    let base = unique_path(&format!("voices_{tag}"));
    let admin = client(&zk.address()).await;
    let (bot_1, bot_2) = (format!("{base}/bots/bot_1"), format!("{base}/bots/bot_2"));
    mkdir(&admin, &bot_1).await;
    mkdir(&admin, &bot_2).await;
    let alerting = if pushing {
        // The default resend_interval (30 s): a copy resolved by another
        // voice stays resolved until the next resend.
        format!(
            "[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\n",
            am.port
        )
    } else {
        String::new()
    };
    let config = format!(
        "{alerting}[[clusters]]\nname = \"voices\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/bots/*\"\n{}\n",
        zk.address(),
        lease(
            &db,
            "master_lease",
            ", split_brain_for = \"2s\", expired_for = \"2s\""
        ),
    );
    let mut replicas = vec![Exporter::start(&config), Exporter::start(&config)];
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();
    // The shipped rules on the test's time scale: every `for` 2 s (the
    // agent's holds above), a scrape gap ridden out for 10 s.
    let rules = mixin_rules("agentGap: '10s',", "2s");
    let prom = prometheus(
        &format!("prometheus-voices-{tag}"),
        &rules,
        "1s",
        am.port,
        &ports,
    );

    let x = client(&zk.address()).await;
    candidate(&x, &bot_2, "n_", b"inst-x").await;
    let renew_x = Renewer::start(&db, "bot_2", "inst-x", 3.0);
    for r in &replicas {
        until_lease_agrees(r, &bot_2, T).await;
    }

    // The lease expires behind a live session, then the database is down.
    renew_x.stop().await;
    until_notified(&receiver, LEASE_EXPIRED, &bot_2, &["firing"]).await;
    db.kill();
    replicas[0]
        .until_values(
            "the lease source failing",
            T,
            &[("zookeeper_lease_up", &[], Some(0.0))],
        )
        .await;
    still_notified(&receiver, LEASE_EXPIRED, &bot_2, &["firing"]).await;
    db.restart().await;
    replicas[0]
        .until_values(
            "the lease source back",
            T,
            &[("zookeeper_lease_up", &[], Some(1.0))],
        )
        .await;
    let renew_x = Renewer::start(&db, "bot_2", "inst-x", 3.0);
    until_notified(&receiver, LEASE_EXPIRED, &bot_2, &["firing", "resolved"]).await;
    still_notified(&receiver, LEASE_EXPIRED, &bot_2, &["firing", "resolved"]).await;
    renew_x.stop().await;

    // Split brain.
    let proxy = Proxy::start(zk.address()).await;
    let a = abandonable_client(&proxy.address(), Duration::from_secs(4)).await;
    candidate(&a, &bot_1, "n_", b"inst-a").await;
    let b = client(&zk.address()).await;
    candidate(&b, &bot_1, "n_", b"inst-b").await;
    let renew_a = Renewer::start(&db, "bot_1", "inst-a", 3.0);
    for r in &replicas {
        until_lease_agrees(r, &bot_1, T).await;
    }
    proxy.cut();
    until_notified(&receiver, SPLIT_BRAIN, &bot_1, &["firing"]).await;
    if pushing {
        // One replica goes away mid-alert; the other carries on alone.
        let gone = replicas.remove(1);
        assert!(gone.terminate().success());
    }
    renew_a.stop().await;
    until_notified(&receiver, SPLIT_BRAIN, &bot_1, &["firing", "resolved"]).await;
    still_notified(&receiver, SPLIT_BRAIN, &bot_1, &["firing", "resolved"]).await;

    // Pushing, the rules never spoke (the agent is the only voice);
    // alone, they did.
    let spoke = query(
        &prom,
        &format!("max_over_time(ALERTS{{alertname=~\"{SPLIT_BRAIN}|{LEASE_EXPIRED}\"}}[10m])"),
    )
    .unwrap();
    assert_eq!(
        spoke.is_empty(),
        pushing,
        "the rules' own alerts while {}: {spoke:?}",
        if pushing {
            "the agent pushes"
        } else {
            "Prometheus alone decides"
        }
    );
    drop((a, b, x));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_alerts_notify_once_each_with_two_replicas_pushing() {
    scenario(true, "pushing").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_alerts_notify_once_each_with_prometheus_alone() {
    scenario(false, "alone").await;
}
