//! Real ZooKeeper for the tests: Debian's servers (standalone and
//! 3-server ensembles) on free loopback ports under a watchdog, clients,
//! candidates, and a TCP proxy that cuts one client off.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use zookeeper_client::{Acls, Client, CreateMode};

use super::{COUNTER, free_port, temp_dir, wait_for};

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

/// A broker becoming controller: creates `/controller` (relative to `root`).
pub async fn become_controller(c: &Client, root: &str, broker: u32) {
    let data = super::payloads::kafka_controller(broker, 1_700_000_000_000);
    c.create(
        &format!("{root}/controller"),
        &data,
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap_or_else(|e| panic!("broker {broker} cannot become controller: {e}"));
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
