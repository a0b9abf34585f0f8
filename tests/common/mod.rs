//! Test harness: real ZooKeeper servers (Debian's package) on free loopback
//! ports, a cuttable TCP proxy, the exporter binary, and helpers to read its
//! metrics and wait with deadlines.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, Client, CreateMode};

pub mod pki;
pub mod program;

/// Where Debian installs the ZooKeeper jar; its manifest pulls in the rest.
/// servlet-api lets Debian's ZooKeeper start its AdminServer when asked to;
/// the manifest lacks the Netty codec, resolver and unix jars the Netty
/// connection factory (and so the TLS port) needs.
const ZK_CLASSPATH: &str = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar:\
     /usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar:\
     /usr/share/java/netty-transport-native-unix-common.jar";
const ZK_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// Short ticks make session expiry fast: sessions may be 400 ms .. 20 s.
pub const TICK_MS: u64 = 200;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh directory under the target dir (kept after failures for logs).
pub fn temp_dir(tag: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A free loopback port (bound then released; good enough on a test box).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How often a wait polls its condition.
const POLL: Duration = Duration::from_millis(50);

/// The deadline of one wait, and how it fails: with what was waited for
/// and the last thing seen.
struct Deadline<'a> {
    what: &'a str,
    timeout: Duration,
    at: Instant,
}

impl<'a> Deadline<'a> {
    fn new(what: &'a str, timeout: Duration) -> Self {
        Self {
            what,
            timeout,
            at: Instant::now() + timeout,
        }
    }

    /// Panics with `last` once the deadline has passed.
    fn check(&self, last: String) {
        if Instant::now() >= self.at {
            panic!(
                "timed out after {:?} waiting for {}; last seen: {last}",
                self.timeout, self.what
            );
        }
    }
}

/// Polls `check` until it returns `Ok`, or panics after `timeout` with the
/// last error it returned.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Deadline::new(what, timeout);
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) => deadline.check(last),
        }
        std::thread::sleep(POLL);
    }
}

/// [`wait_for`] inside tokio: the checks do blocking HTTP on loopback, so
/// they run off the reactor, and the pause between them is async.
pub async fn wait_for_async<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Deadline::new(what, timeout);
    loop {
        match tokio::task::block_in_place(&mut check) {
            Ok(v) => return v,
            Err(last) => deadline.check(last),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`wait_for_async`] for checks that await (ZooKeeper calls): polls
/// `check` until it returns `Ok`, or panics after `timeout` with the last
/// error.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Deadline::new(what, timeout);
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) => deadline.check(last),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until `path` no longer exists (a closed session's ephemeral node
/// is deleted by the server a moment later).
pub async fn until_gone(c: &Client, path: &str, timeout: Duration) {
    eventually(&format!("{path} to vanish"), timeout, || async {
        match c.check_stat(path).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err("still there".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
}

/// Sends a four-letter word and returns the reply.
pub fn four_letter(port: u16, cmd: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(cmd.as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// Sends `sig` (`-STOP`, `-KILL`, …) to process `pid`; panics if `kill` fails.
pub fn signal(pid: &str, sig: &str) {
    assert!(
        Command::new("kill")
            .args([sig, pid])
            .status()
            .unwrap()
            .success(),
        "kill {sig} {pid} failed"
    );
}

/// Starts `command` (a shell command line) under a bash watchdog that
/// SIGKILLs it when the test process goes away, even when a panic or a shared
/// static skips Drop. SIGTERM to the returned child kills the command.
pub fn spawn_watched(command: &str, log: std::fs::File) -> Child {
    let script = format!(
        "{command} & pid=$!; trap 'kill -9 $pid 2>/dev/null; exit 0' TERM INT; \
         while kill -0 {parent} 2>/dev/null && kill -0 $pid 2>/dev/null; do sleep 0.5; done; kill -9 $pid 2>/dev/null",
        parent = std::process::id()
    );
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("bash must be installed")
}

/// One ZooKeeper server process.
pub struct ZkServer {
    pub port: u16,
    pub dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
    /// Extra JVM flags (a JAAS file for SASL).
    jvm_flags: String,
}

/// zoo.cfg lines every test server shares: short ticks, every four-letter
/// word allowed, no AdminServer, no per-address connection limit.
fn base_config(data: &std::path::Path, port: u16, options: &ServerOptions) -> String {
    let mut cfg = format!(
        "tickTime={TICK_MS}\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
         maxSessionTimeout=20000\nmaxClientCnxns=0\n",
        data.display()
    );
    if let Some(list) = options.whitelist {
        cfg.push_str(&format!("4lw.commands.whitelist={list}\n"));
    }
    match options.admin_port {
        Some(p) => cfg.push_str(&format!(
            "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={p}\n"
        )),
        None => cfg.push_str("admin.enableServer=false\n"),
    }
    cfg
}

/// How a test server is configured beyond the defaults.
#[derive(Debug, Clone, Copy)]
pub struct ServerOptions {
    /// `4lw.commands.whitelist`; `None` leaves ZooKeeper's default (srvr only).
    pub whitelist: Option<&'static str>,
    /// Port of the AdminServer; `None` disables it.
    pub admin_port: Option<u16>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            whitelist: Some("*"),
            admin_port: None,
        }
    }
}

impl ZkServer {
    /// Starts a standalone server.
    pub fn start() -> Self {
        Self::start_with(ServerOptions::default())
    }

    /// Starts a standalone server with `extra` zoo.cfg lines and JVM
    /// flags (TLS ports, SASL).
    pub fn start_custom(options: ServerOptions, extra: &str, jvm_flags: &str) -> Self {
        let mut server = Self::prepare(extra, None, free_port(), &options);
        server.jvm_flags = jvm_flags.to_owned();
        server.launch();
        server
    }

    /// Starts a standalone server with `options`.
    pub fn start_with(options: ServerOptions) -> Self {
        let mut server = Self::prepare("", None, free_port(), &options);
        server.launch();
        server
    }

    /// Writes the config of a server (standalone, or ensemble member `myid`
    /// with the `server.N=` lines in `extra`) without starting it.
    fn prepare(extra: &str, myid: Option<u32>, port: u16, options: &ServerOptions) -> Self {
        let dir = temp_dir("zk");
        let config = dir.join("zoo.cfg");
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        if let Some(id) = myid {
            std::fs::write(data.join("myid"), id.to_string()).unwrap();
        }
        std::fs::write(
            &config,
            format!("{}{extra}", base_config(&data, port, options)),
        )
        .unwrap();
        Self {
            port,
            dir,
            config,
            child: None,
            jvm_flags: String::new(),
        }
    }

    fn launch(&mut self) {
        self.spawn();
        self.wait_serving();
    }

    /// Starts the JVM without waiting for it to serve.
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .unwrap();
        // Benchmarks of large trees raise the heap (ZKEE_ZK_HEAP, e.g. "2g").
        let heap = std::env::var("ZKEE_ZK_HEAP").unwrap_or_else(|_| "256m".into());
        let command = format!(
            "java -Xmx{heap} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dzookeeper.log.dir={dir} {flags} -cp {ZK_CLASSPATH} {ZK_MAIN} {cfg}",
            dir = self.dir.display(),
            flags = self.jvm_flags,
            cfg = self.config.display(),
        );
        self.child = Some(spawn_watched(&command, log));
    }

    /// Waits until the server answers `srvr` with its mode (an ensemble
    /// member only does once it has joined a quorum).
    pub fn wait_serving(&self) {
        let port = self.port;
        let dir = self.dir.clone();
        wait_for(
            "ZooKeeper to serve",
            Duration::from_secs(60),
            || match four_letter(port, "srvr") {
                Ok(r) if r.contains("Mode:") => Ok(()),
                Ok(r) => Err(r),
                Err(e) => Err(format!(
                    "{e}; log tail: {}",
                    std::fs::read_to_string(dir.join("server.log"))
                        .unwrap_or_default()
                        .lines()
                        .rev()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(" | ")
                )),
            },
        );
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops the server (SIGTERM to the watchdog, which SIGKILLs the JVM)
    /// and waits until the port is closed.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
        let port = self.port;
        wait_for(
            "ZooKeeper to stop",
            Duration::from_secs(20),
            || match TcpStream::connect(("127.0.0.1", port)) {
                Ok(_) => Err("port still open".into()),
                Err(_) => Ok(()),
            },
        );
    }

    /// Starts the stopped server again on the same port and data.
    pub fn restart(&mut self) {
        self.launch();
    }

    /// PID of the JVM (the watchdog shell's child).
    fn jvm_pid(&self) -> String {
        let shell = self.child.as_ref().expect("server not running").id();
        let out = Command::new("pgrep")
            .args(["-P", &shell.to_string(), "java"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// SIGSTOP: the server keeps its sockets but answers nothing (a hung JVM).
    pub fn freeze(&self) {
        signal(&self.jvm_pid(), "-STOP");
    }

    /// SIGCONT after [`Self::freeze`].
    pub fn thaw(&self) {
        signal(&self.jvm_pid(), "-CONT");
    }

    /// `leader`, `follower` or `standalone`, from `srvr`.
    pub fn mode(&self) -> Option<String> {
        let reply = four_letter(self.port, "srvr").ok()?;
        reply
            .lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(|m| m.trim().to_owned())
    }
}

/// A ZooKeeper ensemble of real servers on loopback, where quorum matters.
pub struct ZkEnsemble {
    pub servers: Vec<ZkServer>,
}

impl ZkEnsemble {
    pub fn start(size: u32) -> Self {
        // Members publish their client address (`;host:port`), as a 3.5+
        // dynamic configuration does, so /zookeeper/config lists them.
        let ports: Vec<u16> = (1..=size).map(|_| free_port()).collect();
        let peers: String = (1..=size)
            .zip(&ports)
            .map(|(id, client)| {
                format!(
                    "server.{id}=127.0.0.1:{}:{}:participant;127.0.0.1:{client}\n",
                    free_port(),
                    free_port()
                )
            })
            .collect();
        let extra = format!("initLimit=50\nsyncLimit=25\n{peers}");
        let options = ServerOptions::default();
        let mut servers: Vec<ZkServer> = (1..=size)
            .zip(&ports)
            .map(|(id, port)| ZkServer::prepare(&extra, Some(id), *port, &options))
            .collect();
        // Start all members before waiting: none serves before a quorum is up.
        for s in &mut servers {
            s.spawn();
        }
        for s in &servers {
            s.wait_serving();
        }
        Self { servers }
    }

    /// `host:port,...` of every member.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(ZkServer::address)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }
}

/// One server shared by the tests of a test binary; tests isolate by path.
pub fn shared_server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(ZkServer::start)
}

/// A unique path prefix for one test.
pub fn unique_path(tag: &str) -> String {
    format!(
        "/t{}_{}_{tag}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A test client with a generous session timeout.
pub async fn client(address: &str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(20))
        .connect(address)
        .await
        .unwrap_or_else(|e| panic!("test client cannot connect to {address}: {e}"))
}

/// A client whose session is abandoned, not closed, when dropped (a crashed
/// process): its ephemeral nodes live until the session expires.
pub async fn abandonable_client(address: &str, timeout: Duration) -> Client {
    Client::connector()
        .with_session_timeout(timeout)
        .with_detached()
        .connect(address)
        .await
        .unwrap()
}

/// `n` elections `base/bot_NNNNN` with one candidate each (data
/// `device`), created 250 at a time; returns the candidates' session,
/// which must live as long as they should.
pub async fn one_candidate_elections(address: &str, base: &str, n: usize) -> Client {
    let admin = client(address).await;
    mkdir(&admin, base).await;
    let owner = client(address).await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let bots: Vec<String> = (0..n).map(|i| format!("{base}/bot_{i:05}")).collect();
    for chunk in bots.chunks(250) {
        let made =
            futures::future::join_all(chunk.iter().map(|b| admin.create(b, b"", &persistent)));
        made.await.into_iter().for_each(|r| {
            r.unwrap();
        });
        let nodes: Vec<String> = chunk.iter().map(|b| format!("{b}/n_0000000001")).collect();
        let made =
            futures::future::join_all(nodes.iter().map(|n| owner.create(n, b"device", &ephemeral)));
        made.await.into_iter().for_each(|r| {
            r.unwrap();
        });
    }
    owner
}

pub async fn mkdir(c: &Client, path: &str) {
    c.mkdir(path, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap_or_else(|e| panic!("mkdir {path}: {e}"));
}

/// Creates an EPHEMERAL_SEQUENTIAL candidate `parent/prefix` with `data`;
/// returns the node name.
pub async fn candidate(c: &Client, parent: &str, prefix: &str, data: &[u8]) -> String {
    let path = format!("{parent}/{prefix}");
    let (_, seq) = c
        .create(
            &path,
            data,
            &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
    format!("{prefix}{seq}")
}

/// A TCP proxy in front of a server that can be cut (all connections closed,
/// new ones refused) and restored: disconnects only the client behind it.
pub struct Proxy {
    pub port: u16,
    blocked: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(target: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let blocked = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (b, c) = (blocked.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if b.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                c.lock().unwrap().push(task);
            }
        });
        Self {
            port,
            blocked,
            conns,
            accept,
        }
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Closes every proxied connection and refuses new ones.
    pub fn cut(&self) {
        self.blocked.store(true, Ordering::SeqCst);
        for task in self.conns.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    pub fn restore(&self) {
        self.blocked.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// The exporter binary running with a generated config file.
/// A lowered limit of open files for the exporter under test.
#[derive(Debug, Clone, Copy)]
pub enum FdLimit {
    /// The soft limit only (the exporter may raise it to the hard one).
    Soft(u64),
    /// Soft and hard: the exporter must live with it.
    Both(u64),
}

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
        http_get(self.port, "/metrics").unwrap().1
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

/// Owned command-line arguments.
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

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Minimal HTTP/1.1 GET on loopback; returns status and body.
pub fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    http_get_with(port, path, &[])
}

pub fn http_get_with(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String), String> {
    http_request(port, "GET", path, headers)
}

/// One request with `method` (and no body); status and body.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String), String> {
    http_send(port, method, path, headers, "")
}

/// A POST of a JSON `body`; status and body of the answer.
pub fn http_post_json(port: u16, path: &str, body: &str) -> Result<(u16, String), String> {
    http_send(
        port,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body,
    )
}

/// One request with `method` and `body`; status and body.
pub fn http_send(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let length = if method == "GET" {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{length}Connection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP header end")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// `zk-election-exporter simulate --zk ZK --path PATH`, for the test to add
/// its flags and spawn.
pub fn simulate(zk: &ZkServer, path: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"));
    c.args(["simulate", "--zk", &zk.address(), "--path", path]);
    c
}

/// One value a test waits for: metric name, labels it includes, value
/// (`None`: no such single series).
pub type Expected<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<f64>);

/// Labels of one series.
pub type Labels = BTreeMap<String, String>;

/// Samples of one scrape: `name` -> list of (labels, value).
#[derive(Debug, Default)]
pub struct Metrics {
    pub samples: BTreeMap<String, Vec<(Labels, f64)>>,
}

impl Metrics {
    /// Parses the Prometheus text format, unescaping label values.
    pub fn parse(text: &str) -> Self {
        let mut samples: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (name, labels, rest) = match line.find('{') {
                Some(i) => {
                    let (labels, rest) = parse_labels(&line[i + 1..]);
                    (&line[..i], labels, rest)
                }
                None => {
                    let (name, rest) = line.split_once(' ').unwrap();
                    (name, BTreeMap::new(), rest)
                }
            };
            let value: f64 = rest.split_whitespace().next().unwrap().parse().unwrap();
            samples
                .entry(name.to_owned())
                .or_default()
                .push((labels, value));
        }
        Self { samples }
    }

    /// The value of the one series of `name` whose labels include `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<f64> = self
            .series(name, labels)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        match matching.as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// The sum of every series of `name` whose labels include `labels`;
    /// `None` when there is none.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching = self.series(name, labels);
        (!matching.is_empty()).then(|| matching.iter().map(|(_, v)| v).sum())
    }

    /// All series of `name` whose labels include `labels`.
    pub fn series(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Vec<(BTreeMap<String, String>, f64)> {
        self.samples
            .get(name)
            .map(|all| {
                all.iter()
                    .filter(|(l, _)| {
                        labels
                            .iter()
                            .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Parses `k="v",k2="v2"} rest` into labels and the rest after `}`.
fn parse_labels(s: &str) -> (BTreeMap<String, String>, &str) {
    let mut labels = BTreeMap::new();
    let mut chars = s.char_indices().peekable();
    loop {
        while let Some((_, ' ' | ',')) = chars.peek() {
            chars.next();
        }
        let Some((start, c)) = chars.next() else {
            break;
        };
        if c == '}' {
            return (labels, &s[start + 1..]);
        }
        let mut key = String::from(c);
        for (_, c) in chars.by_ref() {
            if c == '=' {
                break;
            }
            key.push(c);
        }
        assert_eq!(chars.next().map(|c| c.1), Some('"'));
        let mut value = String::new();
        while let Some((_, c)) = chars.next() {
            match c {
                '\\' => match chars.next().map(|c| c.1) {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.insert(key, value);
    }
    (labels, "")
}

/// Labels of one election of the test cluster.
pub fn election_labels(election: &str) -> [(&str, &str); 2] {
    [("cluster", "test"), ("election", election)]
}

/// Node name of the election's master, if exactly one master series exists.
pub fn master_node(m: &Metrics, election: &str) -> Option<String> {
    match m
        .series("zookeeper_election_master", &election_labels(election))
        .as_slice()
    {
        [(l, v)] if *v == 1.0 => l.get("node").cloned(),
        _ => None,
    }
}

/// Identity of the election's master.
pub fn master_identity(m: &Metrics, election: &str) -> Option<String> {
    m.series("zookeeper_election_master", &election_labels(election))
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
}

/// The config snippet of one cluster named `test` with one election glob;
/// `servers` is comma separated.
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

pub fn cluster_config(servers: &str, election: &str, extra: &str) -> String {
    let servers: Vec<String> = servers.split(',').map(|s| format!("\"{s}\"")).collect();
    format!(
        "[[clusters]]\nname = \"test\"\nservers = [{}]\nsession_timeout = \"4s\"\n\
         latency_probe_interval = \"500ms\"\n{extra}\n[[clusters.elections]]\npath = \"{election}\"\n",
        servers.join(", ")
    )
}

/// Families typed from ZooKeeper's own mntr keys (their HELP starts with
/// `mntr zk_`): named as ZooKeeper names them, documented by the mntr table.
pub fn mntr_families(exposition: &str) -> std::collections::BTreeSet<&str> {
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# HELP "))
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, help)| help.starts_with("mntr zk_"))
        .map(|(name, _)| name)
        .collect()
}

/// Families whose names break a promtool lint rule on purpose: their names
/// are part of the documented interface. `zookeeper_node_count` mirrors
/// srvr's "Node count" (a gauge despite `_count`); `zookeeper_zxid_counter`
/// is the zxid's counter half (a gauge despite the word "counter").
const LINT_EXCEPTIONS: &[&str] = &["zookeeper_node_count", "zookeeper_zxid_counter"];

/// Runs `promtool check metrics` (Debian's prometheus package) on `text`.
/// Parse errors always fail. Lint hints (exit code 3) are accepted only for
/// families named after ZooKeeper's own mntr keys (HELP starting `mntr `,
/// names kept as ZooKeeper spells them) and [`LINT_EXCEPTIONS`].
pub fn promtool_check(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("promtool (Debian package prometheus) must be installed: {e}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => Ok(()),
        Some(3) if !report.contains("error while linting") => {
            let from_mntr = mntr_families(text);
            let ours: Vec<&str> = report
                .lines()
                .filter(|l| {
                    let name = l.split_whitespace().next().unwrap_or_default();
                    !from_mntr.contains(name) && !LINT_EXCEPTIONS.contains(&name)
                })
                .collect();
            if ours.is_empty() {
                Ok(())
            } else {
                Err(ours.join("\n"))
            }
        }
        _ => Err(report),
    }
}

/// A connection to `port` whose receive buffer is 4 KiB, set before the
/// handshake so the window stays small: a scraper that stops reading then
/// leaves the response in the server, not in this side's kernel buffers
/// (on loopback those grow to megabytes and would hide what the server
/// holds).
pub fn small_window_connect(port: u16) -> TcpStream {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor owned here until handed
    // to the TcpStream.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let size: libc::c_int = 4096;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(
            rc,
            0,
            "connect to {port}: {}",
            std::io::Error::last_os_error()
        );
        TcpStream::from_raw_fd(fd)
    }
}
