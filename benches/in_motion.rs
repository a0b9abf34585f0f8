//! What the agent costs while its fleet moves: `n` elections × 2
//! candidates in a real ZooKeeper (four holder sessions, as the at-rest
//! bench lays them out), the agent with its defaults (four-letter words
//! and the ghost check on) and `[alerting]` pushing to a real Alertmanager.
//!
//! - **The churn minute**: 20 switches a second for 60 s, each a master's
//!   node deleted and a new candidate queued behind the standby (from a
//!   fifth session). The agent's and ZooKeeper's CPU over the minute, and
//!   whether every switch was counted in `zookeeper_tree_master_changes_total`.
//! - **A switch during the churn**: 15 more switches while it goes on, each
//!   timed from the deletion to `/api/v1/elections/PATH` naming the new
//!   master, against a bare client's `exists` watch on the deleted node
//!   from the same instant.
//! - **The mass failover**: one holder's session closes, taking a quarter
//!   of the masters and a quarter of the standbys at once. `/metrics` is
//!   scraped every quarter second from that instant: how long until every
//!   switch shows in `zookeeper_tree_master_changes_total` (and whether the
//!   count is exact), the slowest scrape meanwhile, the agent's peak RSS,
//!   the notifications Alertmanager sent (every election kept a master:
//!   none), and whether the agent's own session expired meanwhile.
//!
//! - **ZooKeeper alone**: with the agent stopped, the next holder's session
//!   closes; when a bare client's recursive watch sees the first and the
//!   last of its deletions, and how long a plain read waits meanwhile: what
//!   the server itself takes, which no client can beat.
//!
//! Run: `cargo bench --bench in_motion -- [N ...] [session_timeout=30s]`
//! (default 100000 and 1000000, the agent's default session timeout; each
//! N on a fresh ZooKeeper with a 6 GiB heap; about 10 minutes for a
//! million on two cores). Needs Debian's `zookeeper` and
//! `prometheus-alertmanager`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::fleet::{
    self, AgentProcess, Fleet, HOLDERS, cpu_over, reset_peak_rss, status_mib, zk_pid,
};
use common::layout::layout_client;
use common::receiver::{Receiver, hooked_alertmanager};
use common::*;
use zookeeper_client::{Acls, CreateMode};

/// From `/ready` to the churn: the first ghost-check rounds, the
/// read-back from Alertmanager and the first four-letter words are done.
const SETTLE: Duration = Duration::from_secs(15);
const CHURN: Duration = Duration::from_secs(60);
const SWITCHES_PER_SECOND: u32 = 20;
/// Switches timed against a bare watch during the churn.
const PROBES: usize = 15;
/// The pause between scrapes through the mass failover.
const SCRAPE_PAUSE: Duration = Duration::from_millis(250);
/// The longest any wait of the bench may take before it gives up.
const DEADLINE: Duration = Duration::from_secs(300);

/// The sessions that move the fleet: one deletes masters' nodes, one
/// queues the new candidates (the session index [`HOLDERS`] in the
/// fleet's queues), one watches as a bare client would.
struct Mover {
    admin: zookeeper_client::Client,
    churner: zookeeper_client::Client,
    watcher: zookeeper_client::Client,
    /// Elections switched so far: the next is picked after them.
    moved: usize,
}

impl Mover {
    async fn new(zk: &ZkServer) -> Self {
        Self {
            admin: layout_client(&zk.address()).await,
            churner: layout_client(&zk.address()).await,
            watcher: layout_client(&zk.address()).await,
            moved: 0,
        }
    }

    /// The next election to switch: spread over the fleet, never twice
    /// (7,919 is prime, so its multiples modulo `n` are distinct).
    fn next(&mut self, n: usize) -> usize {
        let i = (self.moved * 7_919 + 13) % n;
        self.moved += 1;
        i
    }

    /// Switches election `i`: its master's node is deleted (the standby
    /// takes over) and a new candidate is queued behind it.
    async fn switch(&self, fleet: &mut Fleet, i: usize) {
        let (master, _) = fleet.queues[i].remove(0);
        self.admin
            .delete(&master, None)
            .await
            .expect("the master's node deleted");
        let election = fleet.election(i);
        let (_, seq) = self
            .churner
            .create(
                &format!("{election}/n_"),
                format!("dev-{i}-c").as_bytes(),
                &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()),
            )
            .await
            .expect("a new candidate");
        fleet.queues[i].push((format!("{election}/n_{seq}"), HOLDERS));
    }

    /// `count` switches at [`SWITCHES_PER_SECOND`].
    async fn churn(&mut self, fleet: &mut Fleet, count: usize) {
        let n = fleet.queues.len();
        let mut pace = tokio::time::interval(Duration::from_secs(1) / SWITCHES_PER_SECOND);
        for _ in 0..count {
            pace.tick().await;
            let i = self.next(n);
            self.switch(fleet, i).await;
        }
    }
}

/// `zookeeper_tree_master_changes_total` summed over the trees of one
/// exposition.
fn switches_counted(exposition: &str) -> f64 {
    exposition
        .lines()
        .filter(|l| l.starts_with("zookeeper_tree_master_changes_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// One scrape (however long it takes, up to the bench's deadline): how
/// long it took and what it counted.
fn scrape(port: u16) -> (Duration, Option<f64>) {
    use std::io::{Read, Write};
    let t = Instant::now();
    let body = (|| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(DEADLINE)).ok()?;
        // HTTP/1.0: the body comes whole, not in chunks that could cut a
        // line in two.
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .ok()?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).ok()?;
        String::from_utf8(raw).ok()
    })();
    let counted = body
        .filter(|b| b.lines().next().is_some_and(|l| l.contains(" 200 ")))
        .map(|b| switches_counted(&b));
    (t.elapsed(), counted)
}

/// Waits until the agent counts `want` switches; the count then.
fn until_counted(port: u16, want: f64) -> f64 {
    wait_for("every switch counted", DEADLINE, || match scrape(port).1 {
        Some(c) if c >= want => Ok(c),
        other => Err(format!("{other:?} of {want}")),
    })
}

/// The median of `xs`.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `PROBES` switches during the churn, each timed by a bare client's
/// `exists` watch on the deleted node and by the agent's lookup naming the
/// new master; the ratios (agent / watch), and the two medians in ms.
async fn probes(mover: &mut Mover, fleet: &mut Fleet, port: u16) -> (f64, f64, f64) {
    let n = fleet.queues.len();
    let (mut ratios, mut bare, mut agent) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PROBES {
        // A second of churn between probes.
        mover.churn(fleet, SWITCHES_PER_SECOND as usize).await;
        let i = mover.next(n);
        let election = fleet.election(i);
        let master = fleet.queues[i][0].0.clone();
        let (_, watch) = mover
            .watcher
            .check_and_watch_stat(&master)
            .await
            .expect("an exists watch");
        // The new master is the standby: known before the deletion, so
        // both clocks start at it.
        let next = fleet.queues[i][1].0.rsplit_once('/').unwrap().1.to_owned();
        let query = format!("/api/v1/elections{election}");
        let want = format!("\"node\":\"{next}\"");
        let t0 = Instant::now();
        let watched = tokio::spawn(async move {
            watch.changed().await;
            t0.elapsed()
        });
        let named = tokio::task::spawn_blocking(move || {
            loop {
                if let Ok((200, body)) = http_get(port, &query)
                    && body.contains(&want)
                {
                    return t0.elapsed();
                }
                assert!(t0.elapsed() < DEADLINE, "the agent never named {want}");
            }
        });
        mover.switch(fleet, i).await;
        let (w, a) = (watched.await.unwrap(), named.await.unwrap());
        bare.push(w.as_secs_f64() * 1e3);
        agent.push(a.as_secs_f64() * 1e3);
        ratios.push(a.as_secs_f64() / w.as_secs_f64());
    }
    (median(ratios), median(bare), median(agent))
}

async fn in_motion(n: usize, session_timeout: Option<&str>) {
    let zk = ZkServer::start_custom(ServerOptions::default(), "snapCount=100000000\n", "");
    let zk_jvm = zk_pid(&zk);
    let base = unique_path("in_motion");
    let mut fleet = Fleet::lay_out(&zk, &base, n).await;
    let mut mover = Mover::new(&zk).await;
    let receiver = Receiver::start();
    let am = hooked_alertmanager("in-motion-am", &receiver);
    let (agent, ready) = tokio::task::block_in_place(|| {
        AgentProcess::start(
            "in-motion-agent",
            &format!(
                "[[clusters]]\nname = \"motion\"\nservers = [\"{}\"]\n{}\
                 [[clusters.elections]]\npath = \"{base}/*\"\n\
                 [alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\n",
                zk.address(),
                session_timeout.map_or(String::new(), |t| format!("session_timeout = \"{t}\"\n")),
                am.port
            ),
        )
    });
    let port = agent.port;
    tokio::time::sleep(SETTLE).await;
    let before = tokio::task::block_in_place(|| until_counted(port, 0.0));

    // The churn minute: nothing scrapes, nothing asks.
    let made = (CHURN.as_secs() * u64::from(SWITCHES_PER_SECOND)) as usize;
    let pids = [agent.id(), zk_jvm];
    let (_, cpu) = tokio::join!(mover.churn(&mut fleet, made), cpu_over(&pids, CHURN));
    let counted =
        tokio::task::block_in_place(|| until_counted(port, before + made as f64)) - before;
    println!(
        "(r) {n} elections, churn of {SWITCHES_PER_SECOND} switches a second for {CHURN:?}: \
         agent {:.2} % of a core (target 2 %), ZooKeeper {:.2} %; switches counted {counted} of {made}",
        cpu[0] * 100.0,
        cpu[1] * 100.0,
    );

    let (ratio, bare, named) = probes(&mut mover, &mut fleet, port).await;
    println!(
        "(r) {n} elections, a switch during the churn ({PROBES} rounds): bare watch median \
         {bare:.2} ms, /api/v1/elections/PATH names the new master in {named:.2} ms; \
         median ratio {ratio:.2}× (target 1.5×)"
    );

    // The mass failover: holder 0's session closes.
    let masters_gone = fleet
        .queues
        .iter()
        .filter(|q| q.first().is_some_and(|c| c.1 == 0))
        .count();
    let switches = fleet
        .queues
        .iter()
        .filter(|q| q.first().is_some_and(|c| c.1 == 0) && q.iter().any(|c| c.1 != 0))
        .count();
    let standbys_gone = fleet
        .queues
        .iter()
        .filter(|q| q.first().is_some_and(|c| c.1 != 0) && q.iter().any(|c| c.1 == 0))
        .count();
    let before = tokio::task::block_in_place(|| until_counted(port, 0.0));
    let expired = expirations(port);
    let notified = receiver.all().len();
    reset_peak_rss(agent.id());
    let holder = fleet.holders.remove(0);
    let t0 = Instant::now();
    drop(holder);
    let want = before + switches as f64;
    let (visible, slowest, scrapes, exact) = tokio::task::block_in_place(|| {
        let mut slowest = Duration::ZERO;
        let mut scrapes = 0;
        let mut visible = None;
        // A scrape every quarter second until every switch shows, then
        // twice more.
        let mut after = 0;
        while after < 2 {
            let (took, counted) = scrape(port);
            slowest = slowest.max(took);
            scrapes += 1;
            if visible.is_none() && counted.is_some_and(|c| c >= want) {
                visible = Some(t0.elapsed());
            }
            if visible.is_some() {
                after += 1;
            }
            assert!(
                t0.elapsed() < DEADLINE,
                "the switches never all showed: {counted:?} of {want}"
            );
            std::thread::sleep(SCRAPE_PAUSE.saturating_sub(took));
        }
        let exact = scrape(port).1.map(|c| c - before);
        (visible.unwrap_or_default(), slowest, scrapes, exact)
    });
    let peak = status_mib(agent.id(), "VmHWM:");
    let expired = expirations(port) - expired;
    // What Alertmanager would page for comes within its group_wait.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let pages = receiver.all().len() - notified;
    println!(
        "(r) {n} elections, mass failover ({masters_gone} masters and {standbys_gone} standbys \
         gone with one session): every switch in zookeeper_tree_master_changes_total after \
         {visible:.2?} (target 5 s); counted {exact:?} of {switches}; slowest of {scrapes} \
         scrapes {slowest:.2?} (target 2 s); peak RSS {peak:.0} MiB (target 1,041 MiB); \
         notifications {pages} (target 0); the agent's session expired {expired} times; \
         start → /ready {ready:.1?}"
    );
    agent.terminate();
    zookeeper_alone(&mut fleet, &mover, &base, n).await;
    drop(fleet);
    drop(am);
}

/// How long ZooKeeper itself takes over a mass failover, with the agent
/// gone: the next holder's session closes, a bare client's recursive watch
/// counts the deletions, and a plain client reads `/` every 100 ms.
async fn zookeeper_alone(fleet: &mut Fleet, mover: &Mover, base: &str, n: usize) {
    let deleted = fleet.queues.iter().flatten().filter(|c| c.1 == 1).count();
    let mut bare = mover
        .watcher
        .watch(base, zookeeper_client::AddWatchMode::PersistentRecursive)
        .await
        .expect("a recursive watch");
    let t0 = Instant::now();
    let told = tokio::spawn(async move {
        let (mut seen, mut first) = (0, None);
        while seen < deleted {
            if bare.changed().await.event_type == zookeeper_client::EventType::NodeDeleted {
                seen += 1;
                first.get_or_insert(t0.elapsed());
            }
        }
        (first.unwrap_or_default(), t0.elapsed())
    });
    let reader = mover.admin.clone();
    let reads = tokio::spawn(async move {
        let mut worst = Duration::ZERO;
        while t0.elapsed() < Duration::from_secs(60) {
            let t = Instant::now();
            let _ = reader.check_stat("/").await;
            worst = worst.max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        worst
    });
    // The session of holder 1 (holder 0's is gone).
    drop(fleet.holders.remove(0));
    let (first, last) = told.await.unwrap();
    let worst = reads.await.unwrap();
    println!(
        "(r) {n} elections, ZooKeeper alone in the same failover (the agent stopped; the next \
         holder's {deleted} nodes): a bare recursive watch saw the first deletion after \
         {first:.2?} and the last after {last:.2?}; a read every 100 ms waited at worst {worst:.2?}"
    );
}

/// `zookeeper_session_expirations_total` of the agent's sessions.
fn expirations(port: u16) -> f64 {
    match http_get(port, "/metrics") {
        Ok((200, body)) => body
            .lines()
            .filter(|l| l.starts_with("zookeeper_session_expirations_total"))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum(),
        _ => f64::NAN,
    }
}

fn main() {
    // `session_timeout=30s`: the agent's session timeout, else its default.
    let session_timeout =
        std::env::args().find_map(|a| a.strip_prefix("session_timeout=").map(str::to_owned));
    let runtime = fleet::runtime();
    for n in fleet::sizes() {
        runtime.block_on(in_motion(n, session_timeout.as_deref()));
    }
}
