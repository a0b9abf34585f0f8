//! The exporter binary under test: started with a generated config (or
//! arguments), read over HTTP, stopped; and `simulate`, which makes
//! elections for it to watch.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Expected, Metrics, ZkServer, free_port, http_get, temp_dir, wait_for, wait_for_async};

/// A lowered limit of open files for the exporter under test.
#[derive(Debug, Clone, Copy)]
pub enum FdLimit {
    /// The soft limit only (the exporter may raise it to the hard one).
    Soft(u64),
    /// Soft and hard: the exporter must live with it.
    Both(u64),
}

/// The exporter binary running with a generated config file.
pub struct Exporter {
    pub port: u16,
    child: Child,
    pub log: PathBuf,
}

impl Exporter {
    /// Starts the binary with `config` (TOML, without `[web]`) and waits for
    /// its HTTP server.
    pub fn start(config: &str) -> Self {
        Self::start_with(config, &[], &[])
    }

    pub fn start_with(config: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = temp_dir("exporter");
        let port = free_port();
        let file = dir.join("config.toml");
        std::fs::write(
            &file,
            format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\n{config}"),
        )
        .unwrap();
        let mut all = vec!["--config".to_owned(), file.display().to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        Self::spawn(&all, env, port)
    }

    /// Runs the binary with exactly these arguments and waits until it
    /// answers on `port`.
    pub fn spawn(args: &[String], env: &[(&str, &str)], port: u16) -> Self {
        Self::spawn_with(args, env, port, None)
    }

    /// [`spawn`](Self::spawn), started with its limit of open files
    /// lowered (as some containers start processes).
    pub fn spawn_with(
        args: &[String],
        env: &[(&str, &str)],
        port: u16,
        fd_limit: Option<FdLimit>,
    ) -> Self {
        Self::launch(args, env, port, fd_limit, &|port| {
            http_get(port, "/healthz").map(|_| ())
        })
    }

    /// Runs the binary and waits until `ready(port)` holds (a TLS server
    /// does not answer plain HTTP).
    pub fn launch(
        args: &[String],
        env: &[(&str, &str)],
        port: u16,
        fd_limit: Option<FdLimit>,
        ready: &dyn Fn(u16) -> Result<(), String>,
    ) -> Self {
        let log = temp_dir("exporter-log").join("exporter.log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"));
        command
            .args(args)
            .env(
                "ZK_EXPORTER_LOG",
                "info,zk_election_exporter=debug,zookeeper_client=warn",
            )
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        if let Some(fd_limit) = fd_limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: only getrlimit/setrlimit run between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let mut limit = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
                    match fd_limit {
                        FdLimit::Soft(n) => limit.rlim_cur = n as libc::rlim_t,
                        FdLimit::Both(n) => {
                            limit.rlim_cur = n as libc::rlim_t;
                            limit.rlim_max = n as libc::rlim_t;
                        }
                    }
                    libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
                    Ok(())
                });
            }
        }
        let child = command.spawn().unwrap();
        let mut exporter = Self { port, child, log };
        wait_for("exporter HTTP", Duration::from_secs(20), || {
            if let Some(status) = exporter.child.try_wait().unwrap() {
                panic!("exporter exited with {status}: {}", exporter.log());
            }
            ready(port)
        });
        exporter
    }

    pub fn metrics(&self) -> Result<Metrics, String> {
        let (status, body) = http_get(self.port, "/metrics")?;
        if status != 200 {
            return Err(format!("/metrics answered {status}"));
        }
        record_families(&body);
        Ok(Metrics::parse(&body))
    }

    /// Waits until `f` holds for a scrape; on timeout reports the election,
    /// session and sync series of the last one.
    pub async fn until(
        &self,
        what: &str,
        timeout: Duration,
        f: impl Fn(&Metrics) -> bool,
    ) -> Metrics {
        wait_for_async(what, timeout, || {
            let m = self.metrics()?;
            if f(&m) {
                return Ok(m);
            }
            let keep = [
                "zookeeper_election",
                "zookeeper_session_state",
                "zookeeper_session_re",
                "zookeeper_session_exp",
                "zookeeper_tree",
            ];
            Err(format!(
                "{:?}",
                m.samples
                    .iter()
                    .filter(|(k, _)| keep.iter().any(|p| k.starts_with(p)))
                    .collect::<Vec<_>>()
            ))
        })
        .await
    }

    /// Waits until one scrape shows every `(name, labels, value)` of
    /// `expected` (`None`: no such single series); on timeout names each
    /// value that differed. Tests assert what this established instead of
    /// reading other values from the scrape that met a single condition.
    pub async fn until_values(
        &self,
        what: &str,
        timeout: Duration,
        expected: &[Expected<'_>],
    ) -> Metrics {
        wait_for_async(what, timeout, || {
            let m = self.metrics()?;
            let wrong: Vec<String> = expected
                .iter()
                .filter_map(|(name, labels, want)| {
                    let got = m.get(name, labels);
                    (got != *want).then(|| format!("{name}{labels:?} = {got:?}, want {want:?}"))
                })
                .collect();
            if wrong.is_empty() {
                Ok(m)
            } else {
                Err(wrong.join("; "))
            }
        })
        .await
    }

    /// Waits until `/ready` answers 503 with `reason` in its body; returns it.
    pub async fn until_not_ready(&self, reason: &str, timeout: Duration) -> String {
        wait_for_async("a reason in /ready", timeout, || {
            let (status, body) = self.ready();
            if status == 503 && body.contains(reason) {
                Ok(body)
            } else {
                Err(format!("{status} {body}"))
            }
        })
        .await
    }

    pub fn raw_metrics(&self) -> String {
        let body = http_get(self.port, "/metrics").unwrap().1;
        record_families(&body);
        body
    }

    pub fn ready(&self) -> (u16, String) {
        http_get(self.port, "/ready").unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and returns the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "exporter ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User plus system CPU time `pid` has used so far, in seconds
/// (`/proc/PID/stat`, clock ticks as the kernel counts them).
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 14th field, stime the 15th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 / per_second as f64
}

/// Arguments of an exporter with no reachable ZooKeeper (its HTTP side is
/// what the test is about) listening on `port`, then `extra`.
pub fn offline_args(port: u16, extra: &[&str]) -> Vec<String> {
    let listen = format!("127.0.0.1:{port}");
    let mut all = vec![
        "--zk",
        "127.0.0.1:1",
        "--no-four-letter-words",
        "--web.listen-address",
        &listen,
    ];
    all.extend_from_slice(extra);
    args(&all)
}

/// Owned command-line arguments.
pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `zk-election-exporter simulate --zk ZK --path PATH`, for the test to add
/// its flags and spawn.
pub fn simulate(zk: &ZkServer, path: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"));
    c.args(["simulate", "--zk", &zk.address(), "--path", path]);
    c
}

/// `n` elections x 3 candidates under `base/*`, made by `simulate` (no
/// churn), for benchmarks at scale; the returned process holds their
/// sessions.
pub fn simulated_elections(zk: &ZkServer, base: &str, n: usize) -> Child {
    let elections = n.to_string();
    let sessions = (n / 350).clamp(30, 50).to_string();
    let log = temp_dir("bench-sim").join("simulate.log");
    let sim = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"))
        .args(["simulate", "--zk", &zk.address(), "--path", base])
        .args(["--elections", &elections, "--candidates", "3"])
        .args(["--sessions", &sessions])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for(
        "simulate to create the candidates",
        Duration::from_secs(1800),
        || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("ready in") {
                Ok(())
            } else {
                Err(text)
            }
        },
    );
    sim
}

/// The config snippet of one cluster named `test` with one election glob;
/// `servers` is comma separated.
/// A cluster with no trees configured and no four-letter words: what
/// discovery finds is all it watches.
pub fn discovery_config(servers: &str, extra: &str) -> String {
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{servers}\"]\n{extra}\n[clusters.four_letter_words]\nenabled = false\n"
    )
}

/// (path, kind, source) of every watched tree, from /api/v1/trees.
pub fn watched_trees(exporter: &Exporter) -> Result<Vec<(String, String, String)>, String> {
    let (status, body) = http_get(exporter.port, "/api/v1/trees")?;
    if status != 200 {
        return Err(format!("/api/v1/trees answered {status}"));
    }
    let json: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for c in json["clusters"].as_array().ok_or("no clusters")? {
        for t in c["trees"].as_array().ok_or("no trees")? {
            let s = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
            out.push((s("path"), s("kind"), s("source")));
        }
    }
    out.sort();
    Ok(out)
}

pub fn cluster_config(servers: &str, election: &str, extra: &str) -> String {
    let servers: Vec<String> = servers.split(',').map(|s| format!("\"{s}\"")).collect();
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [{}]\nsession_timeout = \"4s\"\n\
         latency_read_interval = \"500ms\"\n{extra}\n[[clusters.elections]]\npath = \"{election}\"\n",
        servers.join(", ")
    )
}

/// The timeline of `election`, oldest first (from `/api/v1/events`).
pub fn timeline(exporter: &Exporter, election: &str) -> Vec<serde_json::Value> {
    let path = format!("/api/v1/events?election={election}&limit=100");
    let (status, body) = http_get(exporter.port, &path).unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut events = json["events"].as_array().cloned().unwrap_or_default();
    events.reverse();
    events
}

/// How the timeline should say a crashed master (`identity`) went: its
/// node was left to expire with its session, which the timeline says
/// (`session_expired`) when the ghost check had flagged the dead session
/// first, and otherwise cannot tell from a deletion (`node_deleted`).
pub fn crash_cause(events: &[serde_json::Value], identity: &str) -> &'static str {
    let flagged = events
        .iter()
        .any(|e| e["kind"] == "ghost_flagged" && e["from"]["identity"] == identity);
    if flagged {
        "session_expired"
    } else {
        "node_deleted"
    }
}

/// Where every family a test scrape saw is written, one file per test
/// process: `tests/metrics_docs.rs` holds docs/metrics.md to what the
/// suite really scraped (scripts/test.sh runs it after the suite).
pub fn scraped_families_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scraped-families")
}

/// Adds the families of one exposition, and the label names of its
/// samples, to this process's record (`{pid}.txt`: a family per line;
/// `{pid}.labels`: `label<TAB>sample name` per line).
fn record_families(body: &str) {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    type Seen = (BTreeSet<String>, BTreeSet<(String, String)>);
    static SEEN: Mutex<Seen> = Mutex::new((BTreeSet::new(), BTreeSet::new()));
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let before = (seen.0.len(), seen.1.len());
    seen.0.extend(
        body.lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .map(str::to_owned),
    );
    // One sample name per label is enough to say where a label came from.
    let mut known: BTreeSet<String> = seen.1.iter().map(|(l, _)| l.clone()).collect();
    for (label, sample) in super::labels::sample_labels(body) {
        if known.insert(label.clone()) {
            seen.1.insert((label, sample));
        }
    }
    if (seen.0.len(), seen.1.len()) == before {
        return;
    }
    let dir = scraped_families_dir();
    let _ = std::fs::create_dir_all(&dir);
    let families: String = seen.0.iter().map(|f| format!("{f}\n")).collect();
    let labels: String = seen.1.iter().map(|(l, s)| format!("{l}\t{s}\n")).collect();
    for (ext, text) in [("txt", families), ("labels", labels)] {
        let file = dir.join(format!("{}.{ext}", std::process::id()));
        let tmp = dir.join(format!("{}.{ext}.tmp", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(tmp, file);
        }
    }
}
