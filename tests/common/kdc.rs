//! A Kerberos realm of the test's own: Debian's MIT KDC (`krb5kdc`) on a
//! free loopback port, its database made with `kdb5_util`, principals and
//! keytabs with `kadmin.local`; a ZooKeeper server that takes Kerberos
//! (Java's `Krb5LoginModule` in its JAAS `Server` section) and requires
//! it; and a writer that authenticates as an application does (kazoo with
//! SASL GSSAPI, [`KazooWriter`]).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::{ServerOptions, ZkServer, free_port, temp_dir, wait_for};

pub const REALM: &str = "ZKEE.TEST";

/// One realm and its KDC.
pub struct Kdc {
    pub dir: PathBuf,
    pub port: u16,
    /// The clients' krb5.conf (realm, KDC address, no DNS).
    pub krb5_conf: PathBuf,
    kdc_conf: PathBuf,
    child: Mutex<Option<Child>>,
}

fn krb5_conf(realm_kdc: &str) -> String {
    krb5_conf_with(realm_kdc, "")
}

fn krb5_conf_with(realm_kdc: &str, libdefaults: &str) -> String {
    // No DNS anywhere: names are used as written (as a test realm must).
    format!(
        "[libdefaults]\n{libdefaults} default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n \
         dns_canonicalize_hostname = false\n rdns = false\n udp_preference_limit = 1\n\
         [realms]\n {REALM} = {{\n  kdc = {realm_kdc}\n }}\n"
    )
}

impl Kdc {
    pub fn start() -> Self {
        let dir = temp_dir("kdc");
        let port = free_port();
        let krb5 = dir.join("krb5.conf");
        std::fs::write(&krb5, krb5_conf(&format!("127.0.0.1:{port}"))).unwrap();
        let kdc_conf = dir.join("kdc.conf");
        std::fs::write(
            &kdc_conf,
            format!(
                "[kdcdefaults]\n kdc_listen = 127.0.0.1:{port}\n kdc_tcp_listen = 127.0.0.1:{port}\n\
                 [realms]\n {REALM} = {{\n  database_name = {d}/principal\n  key_stash_file = {d}/stash\n  \
                 acl_file = {d}/kadm5.acl\n  max_life = 10h\n  max_renewable_life = 1d\n }}\n\
                 [logging]\n kdc = FILE:{d}/kdc.log\n",
                d = dir.display()
            ),
        )
        .unwrap();
        std::fs::write(dir.join("kadm5.acl"), "").unwrap();
        let kdc = Self {
            dir,
            port,
            krb5_conf: krb5,
            kdc_conf,
            child: Mutex::new(None),
        };
        kdc.run(
            "kdb5_util",
            &["create", "-s", "-r", REALM, "-P", "test-master-key"],
        );
        kdc.launch();
        kdc
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("KRB5_CONFIG", &self.krb5_conf)
            .env("KRB5_KDC_PROFILE", &self.kdc_conf);
        c
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program} (krb5-kdc, krb5-admin-server): {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{program} {args:?}: {text}");
        text
    }

    fn kadmin(&self, query: &str) -> String {
        let text = self.run("kadmin.local", &["-r", REALM, "-q", query]);
        // kadmin.local exits 0 on a failed query; its errors say "while".
        assert!(!text.contains(" while "), "kadmin.local {query}: {text}");
        text
    }

    fn launch(&self) {
        let log = std::fs::File::create(self.dir.join("krb5kdc.out")).unwrap();
        // Under the watchdog: a shared realm outlives every Drop.
        let child = super::spawn_watched(
            &format!(
                "KRB5_CONFIG={} KRB5_KDC_PROFILE={} exec krb5kdc -n -r {REALM}",
                self.krb5_conf.display(),
                self.kdc_conf.display()
            ),
            log,
        );
        *self.child.lock().unwrap() = Some(child);
        let port = self.port;
        wait_for(
            "the KDC to listen (krb5-kdc)",
            Duration::from_secs(20),
            || {
                std::net::TcpStream::connect(("127.0.0.1", port))
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        );
    }

    /// Adds `name` with a random key (pre-authentication required, as real
    /// realms do) and `max_life`; returns a keytab holding its key.
    pub fn principal(&self, name: &str, max_life: &str) -> PathBuf {
        self.kadmin(&format!(
            "addprinc -randkey +requires_preauth -maxlife \"{max_life}\" {name}"
        ));
        self.keytab(name)
    }

    /// Exports `name`'s key into a new keytab. This changes the key:
    /// keytabs exported before are stale from now on.
    pub fn keytab(&self, name: &str) -> PathBuf {
        let n = super::COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = self
            .dir
            .join(format!("{}-{n}.keytab", name.replace('/', "_")));
        self.kadmin(&format!("ktadd -k {} {name}", file.display()));
        file
    }

    /// Removes `name` from the realm.
    pub fn delete(&self, name: &str) {
        self.kadmin(&format!("delprinc -force {name}"));
    }

    /// A krb5.conf naming a KDC at a port where nothing listens.
    pub fn unreachable_conf(&self) -> PathBuf {
        let file = self.dir.join("krb5-unreachable.conf");
        std::fs::write(&file, krb5_conf(&format!("127.0.0.1:{}", free_port()))).unwrap();
        file
    }

    /// A krb5.conf for this realm with more `[libdefaults]` lines.
    pub fn conf_with(&self, tag: &str, libdefaults: &str) -> PathBuf {
        self.conf_at(tag, "127.0.0.1", libdefaults)
    }

    /// A krb5.conf reaching the KDC at `host` (a container reaches the
    /// host's loopback by another address).
    pub fn conf_at(&self, tag: &str, host: &str, libdefaults: &str) -> PathBuf {
        let file = self.dir.join(format!("krb5-{tag}.conf"));
        std::fs::write(
            &file,
            krb5_conf_with(&format!("{host}:{}", self.port), libdefaults),
        )
        .unwrap();
        file
    }

    /// Fills credential cache `cache` for `name` from `keytab` (as an
    /// operator's `kinit -kt` does).
    pub fn kinit(&self, name: &str, keytab: &Path, cache: &str) {
        let out = Command::new("kinit")
            .env("KRB5_CONFIG", &self.krb5_conf)
            .args(["-c", cache, "-kt", &keytab.display().to_string(), name])
            .output()
            .expect("kinit (Debian's krb5-user) must be installed");
        assert!(out.status.success(), "kinit: {out:?}");
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.lock().unwrap().take() {
            // SIGTERM to the watchdog, which kills the KDC.
            let _ = Command::new("kill").arg(c.id().to_string()).status();
            let _ = c.wait();
        }
    }
}

/// A standalone ZooKeeper 3.8 that authenticates clients with Kerberos as
/// `zookeeper/localhost@REALM` and refuses every session that does not
/// (`enforce.auth.enabled`, `enforce.auth.schemes=sasl`).
pub fn kerberized_zookeeper(kdc: &Kdc) -> ZkServer {
    let keytab = kdc.principal("zookeeper/localhost", "10h");
    let jaas = kdc.dir.join("zookeeper-jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "Server {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  \
             keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  isInitiator=false\n  \
             principal=\"zookeeper/localhost@{REALM}\";\n}};\n",
            keytab.display()
        ),
    )
    .unwrap();
    ZkServer::start_custom(
        ServerOptions::default(),
        "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
         enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n",
        &format!(
            "-Djava.security.auth.login.config={} -Djava.security.krb5.conf={}",
            jaas.display(),
            kdc.krb5_conf.display()
        ),
    )
}

/// The realm and its ZooKeeper, shared by the tests of one binary (each
/// test uses its own principals and paths).
pub fn shared_realm() -> &'static (Kdc, ZkServer) {
    static REALM_AND_SERVER: OnceLock<(Kdc, ZkServer)> = OnceLock::new();
    REALM_AND_SERVER.get_or_init(|| {
        let kdc = Kdc::start();
        let zk = kerberized_zookeeper(&kdc);
        (kdc, zk)
    })
}

/// An application's session, authenticated with its own ticket: Debian's
/// kazoo with SASL GSSAPI (tests/helpers/kazoo_writer.py).
pub struct KazooWriter {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl KazooWriter {
    /// Connects to `port` on `localhost` (the name in the server's
    /// principal) as `principal` from `keytab`.
    pub fn connect(kdc: &Kdc, port: u16, keytab: &Path) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/kazoo_writer.py");
        let n = super::COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = std::fs::File::create(kdc.dir.join(format!("writer-{n}.log"))).unwrap();
        // Debian's Python: kazoo, pure-sasl and pykerberos are its packages.
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .arg(format!("localhost:{port}"))
            .env("KRB5_CONFIG", &kdc.krb5_conf)
            .env("KRB5_CLIENT_KTNAME", keytab)
            .env("KRB5CCNAME", format!("MEMORY:writer-{n}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("/usr/bin/python3 with python3-kazoo");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        assert_eq!(
            first.trim(),
            "ready",
            "the kazoo writer did not connect (python3-kazoo, python3-pure-sasl, python3-kerberos?)"
        );
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, command: serde_json::Value) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        let mut reply = String::new();
        self.stdout.read_line(&mut reply).unwrap();
        let reply = reply.trim().to_owned();
        assert!(reply.starts_with("ok"), "{command}: {reply}");
        reply
    }

    /// Creates `path` with `data` and `acl` (`[scheme, id, "rwcda"]`s).
    pub fn create(&mut self, path: &str, data: &[u8], ephemeral: bool, acl: &[[&str; 3]]) {
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        self.ask(serde_json::json!({
            "op": "create", "path": path, "data": hex, "ephemeral": ephemeral, "acl": acl,
        }));
    }

    pub fn delete(&mut self, path: &str) {
        self.ask(serde_json::json!({"op": "delete", "path": path}));
    }
}

impl Drop for KazooWriter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
