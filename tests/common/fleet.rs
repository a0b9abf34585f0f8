//! A bot fleet for the benchmarks of the agent's cost at scale: `n`
//! elections × 2 candidates (EPHEMERAL_SEQUENTIAL children, as kazoo and
//! Curator write them) held by four sessions, the agent started as a
//! process with its own configuration, and what a process costs (CPU share
//! over a window, resident memory) read from `/proc`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zookeeper_client::CreateMode;

use super::layout::{layout_client, multi_create};
use super::{ZkServer, cpu_seconds, free_port, http_get, mkdir, pid_matching, temp_dir, wait_for};

/// Sessions holding the candidates.
pub const HOLDERS: usize = 4;

/// `n` elections `{base}/bot_{i}`, each with a master and a standby held
/// by two different sessions, and which session holds which.
pub struct Fleet {
    pub base: String,
    /// The holder sessions: the candidates live as long as they do.
    pub holders: Vec<zookeeper_client::Client>,
    /// Per election, its candidates in queue order: the node's path and
    /// the index of the session holding it (in `holders`, or past them
    /// for a session the caller keeps).
    pub queues: Vec<Vec<(String, usize)>>,
}

impl Fleet {
    /// Lays out `n` elections under `base`: the first candidate of
    /// election `i` held by session `i % 4`, the second by `(i + 1) % 4`.
    pub async fn lay_out(zk: &ZkServer, base: &str, n: usize) -> Self {
        let admin = layout_client(&zk.address()).await;
        mkdir(&admin, base).await;
        let t = Instant::now();
        let parents: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| (format!("{base}/bot_{i}"), Vec::new()))
            .collect();
        multi_create(&admin, &parents, CreateMode::Persistent, 1000, 8).await;
        let mut holders = Vec::new();
        for _ in 0..HOLDERS {
            holders.push(layout_client(&zk.address()).await);
        }
        let mut queues: Vec<Vec<(String, usize)>> = vec![Vec::with_capacity(2); n];
        for second in [false, true] {
            for (k, holder) in holders.iter().enumerate() {
                let mine: Vec<usize> = (0..n)
                    .filter(|i| (i + usize::from(second)) % HOLDERS == k)
                    .collect();
                let who = if second { 'b' } else { 'a' };
                let nodes: Vec<(String, Vec<u8>)> = mine
                    .iter()
                    .map(|i| {
                        (
                            format!("{base}/bot_{i}/n_"),
                            format!("dev-{i}-{who}").into_bytes(),
                        )
                    })
                    .collect();
                let made =
                    multi_create(holder, &nodes, CreateMode::EphemeralSequential, 1000, 8).await;
                for (i, path) in mine.into_iter().zip(made) {
                    queues[i].push((path, k));
                }
            }
        }
        println!(
            "(r) layout: {n} elections × 2 candidates from {HOLDERS} sessions in {:.1?}",
            t.elapsed()
        );
        Self {
            base: base.to_owned(),
            holders,
            queues,
        }
    }

    pub fn election(&self, i: usize) -> String {
        format!("{}/bot_{i}", self.base)
    }
}

/// The pid of the JVM of `zk` (its command line names its log folder).
pub fn zk_pid(zk: &ZkServer) -> u32 {
    let pattern = format!("^java .*-Dzookeeper.log.dir={} ", zk.dir.display());
    pid_matching(&pattern)
        .and_then(|p| p.parse().ok())
        .expect("the ZooKeeper JVM runs")
}

/// A line of `/proc/PID/status` in MiB (`VmRSS:` now, `VmHWM:` the peak).
pub fn status_mib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// Starts the peak of `pid`'s resident memory (`VmHWM`) over from now.
pub fn reset_peak_rss(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// CPU seconds each of `pids` spent over `window`, as shares of one core.
pub async fn cpu_over(pids: &[u32], window: Duration) -> Vec<f64> {
    let before: Vec<f64> = pids.iter().map(|p| cpu_seconds(*p)).collect();
    tokio::time::sleep(window).await;
    pids.iter()
        .zip(before)
        .map(|(p, b)| (cpu_seconds(*p) - b) / window.as_secs_f64())
        .collect()
}

/// The agent started as a process, and the port its web server listens on.
pub struct AgentProcess {
    pub child: Child,
    pub port: u16,
}

impl AgentProcess {
    /// Starts the agent with `config` (the `[web]` section is added);
    /// returns it once `/ready` answers 200, and how long that took from
    /// the process start. Blocks: call it off the runtime's threads.
    pub fn start(tag: &str, config: &str) -> (Self, Duration) {
        let dir = temp_dir(tag);
        let port = free_port();
        std::fs::write(
            dir.join("config.toml"),
            format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\n{config}"),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("agent.log")).unwrap();
        let started = Instant::now();
        let child = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"))
            .arg("--config")
            .arg(dir.join("config.toml"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_for(
            "the agent ready",
            Duration::from_secs(300),
            || match http_get(port, "/ready") {
                Ok((200, _)) => Ok(()),
                other => Err(format!("{other:?}")),
            },
        );
        (Self { child, port }, started.elapsed())
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then how long until the process has exited.
    pub fn terminate(mut self) -> Duration {
        let pid = i32::try_from(self.child.id()).expect("a pid fits an i32");
        let t = Instant::now();
        // SAFETY: kill only sends a signal to the child this harness started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let _ = self.child.wait();
        t.elapsed()
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fleet sizes given on the command line (`100000 1_000_000`), else
/// 100,000 and 1,000,000.
pub fn sizes() -> Vec<usize> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.replace('_', "").parse().ok())
        .collect();
    if sizes.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        sizes
    }
}

/// The runtime a fleet bench runs on, its ZooKeeper servers started with a
/// 6 GiB heap (a million elections need it).
pub fn runtime() -> tokio::runtime::Runtime {
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("ZKEE_ZK_HEAP", "6g") };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}
