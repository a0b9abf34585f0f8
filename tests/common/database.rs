//! Debian's PostgreSQL and MariaDB run by a test on a free loopback port:
//! the application's lease database. Each gets two users: `app` (owns the
//! tables, writes leases as the application does) and `agent` (may only
//! read them, with a password the agent reads from a file).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::{AnyConnection, Connection};

use super::{eventually, free_port, spawn_watched, temp_dir};

/// Which database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Postgres,
    MariaDb,
}

impl Engine {
    pub fn tag(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::MariaDb => "mariadb",
        }
    }
}

/// One database server.
pub struct Database {
    pub engine: Engine,
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    /// The agent's DSN (no password) and password files.
    pub dsn_file: PathBuf,
    pub password_file: PathBuf,
    /// The server's certificate and key when it speaks TLS.
    tls: Option<super::pki::Leaf>,
}

const APP_PASSWORD: &str = "app-secret";
/// The agent's password: a test asserts it never reaches a log.
pub const AGENT_PASSWORD: &str = "s3cret-agent-pw";

/// Whether the tests run as root (servers then run as their own users).
pub fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Debian's PostgreSQL server binaries (`/usr/lib/postgresql/<major>/bin`).
pub fn postgres_bin_dir() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("postgres").exists())
        .max();
    found.expect(
        "PostgreSQL's server is not installed (Debian's `postgresql`; scripts/test.sh installs it)",
    )
}

/// Runs `command` (as `user` when the tests run as root: PostgreSQL
/// refuses root), panicking with its output when it fails.
fn run_as(user: &str, command: &str) {
    let line = if as_root() {
        format!("setpriv --reuid={user} --regid={user} --init-groups -- {command}")
    } else {
        command.to_owned()
    };
    let out = Command::new("bash").arg("-c").arg(&line).output().unwrap();
    assert!(
        out.status.success(),
        "{line}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn chown(user: &str, dir: &std::path::Path) {
    if as_root() {
        let ok = Command::new("chown")
            .arg("-R")
            .arg(format!("{user}:{user}"))
            .arg(dir)
            .status();
        assert!(ok.is_ok_and(|s| s.success()), "chown {}", dir.display());
    }
}

impl Database {
    /// Initialises and starts `engine` with users `app` and `agent` and
    /// database `app`; returns once `app` can connect.
    pub async fn start(engine: Engine) -> Self {
        Self::start_with(engine, false).await
    }

    /// [`start`](Self::start) with TLS required of the agent: the server's
    /// certificate (for 127.0.0.1) issued by a CA written to
    /// `dir/db-ca.pem`, and the agent's DSN verifying it (`verify-full`,
    /// `VERIFY_IDENTITY`). The agent may connect with TLS only.
    pub async fn start_tls(engine: Engine) -> Self {
        Self::start_with(engine, true).await
    }

    async fn start_with(engine: Engine, tls: bool) -> Self {
        let dir = temp_dir(engine.tag());
        let port = free_port();
        let dsn_file = dir.join("dsn");
        let password_file = dir.join("agent-password");
        std::fs::write(&password_file, format!("{AGENT_PASSWORD}\n")).unwrap();
        let scheme = match engine {
            Engine::Postgres => "postgres",
            Engine::MariaDb => "mysql",
        };
        let tls = tls.then(|| {
            let ca = super::pki::Ca::new(&dir, "db");
            let leaf = ca.issue(&dir, "server", &["127.0.0.1"]);
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&leaf.key_file, std::fs::Permissions::from_mode(0o600))
                .unwrap();
            leaf
        });
        let verify = match (engine, &tls) {
            (_, None) => String::new(),
            (Engine::Postgres, Some(_)) => {
                format!(
                    "?sslmode=verify-full&sslrootcert={}/db-ca.pem",
                    dir.display()
                )
            }
            (Engine::MariaDb, Some(_)) => {
                format!(
                    "?ssl-mode=VERIFY_IDENTITY&ssl-ca={}/db-ca.pem",
                    dir.display()
                )
            }
        };
        std::fs::write(
            &dsn_file,
            format!("{scheme}://agent@127.0.0.1:{port}/app{verify}\n"),
        )
        .unwrap();
        match engine {
            Engine::Postgres => {
                std::fs::write(dir.join("app-password"), APP_PASSWORD).unwrap();
                chown("postgres", &dir);
                run_as(
                    "postgres",
                    &format!(
                        "{}/initdb -D {d}/data -U app --pwfile={d}/app-password --auth=scram-sha-256 -E UTF8 --no-sync",
                        postgres_bin_dir().display(),
                        d = dir.display()
                    ),
                );
            }
            Engine::MariaDb => {
                // Its own tmpdir: bootstraps running at once share /tmp's
                // temporary table names and fail now and then.
                std::fs::create_dir_all(dir.join("tmp")).unwrap();
                chown("mysql", &dir);
                run_as(
                    "mysql",
                    &format!(
                        "mariadb-install-db --no-defaults --datadir={d}/data --tmpdir={d}/tmp --auth-root-authentication-method=normal --skip-test-db",
                        d = dir.display()
                    ),
                );
            }
        }
        let mut db = Self {
            engine,
            port,
            dir,
            child: None,
            dsn_file,
            password_file,
            tls,
        };
        db.launch();
        db.until_up().await;
        if engine == Engine::MariaDb {
            db.root_setup().await;
        } else {
            db.exec_all(&[
                "CREATE DATABASE app OWNER app".into(),
                format!("CREATE ROLE agent LOGIN PASSWORD '{AGENT_PASSWORD}'"),
            ])
            .await;
        }
        if db.tls.is_some() {
            // The agent over TLS only; the test's own users as before.
            match engine {
                Engine::Postgres => {
                    std::fs::write(
                        db.dir.join("data/pg_hba.conf"),
                        "local all all trust\nhostssl all agent 127.0.0.1/32 scram-sha-256\nhost all app 127.0.0.1/32 scram-sha-256\n",
                    )
                    .unwrap();
                    db.exec_all(&["SELECT pg_reload_conf()".into()]).await;
                }
                Engine::MariaDb => db.root(&["ALTER USER 'agent'@'%' REQUIRE SSL"]).await,
            }
        }
        db
    }

    fn launch(&mut self) {
        let d = self.dir.display();
        let tls = match (&self.tls, self.engine) {
            (None, _) => String::new(),
            (Some(l), Engine::Postgres) => format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                l.cert_file.display(),
                l.key_file.display()
            ),
            (Some(l), Engine::MariaDb) => format!(
                " --ssl-cert={} --ssl-key={}",
                l.cert_file.display(),
                l.key_file.display()
            ),
        };
        let command = match self.engine {
            Engine::Postgres => {
                let bin = postgres_bin_dir();
                let postgres = format!(
                    "{}/postgres -D {d}/data -p {} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB -c max_connections=30{tls}",
                    bin.display(),
                    self.port
                );
                if as_root() {
                    format!("setpriv --reuid=postgres --regid=postgres --init-groups -- {postgres}")
                } else {
                    postgres
                }
            }
            Engine::MariaDb => format!(
                "mariadbd --no-defaults --datadir={d}/data --port={} --bind-address=127.0.0.1 --socket={d}/sock --innodb-buffer-pool-size=16M --skip-log-bin --max-connections=30 --pid-file={d}/pid --tmpdir={d}/tmp{tls}{}",
                self.port,
                if as_root() { " --user=mysql" } else { "" }
            ),
        };
        let log = std::fs::File::create(self.dir.join("log")).unwrap();
        self.child = Some(spawn_watched(&command, log));
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// A DSN for `user` on database `db`.
    fn dsn(&self, user: &str, password: &str, db: &str) -> String {
        let scheme = match self.engine {
            Engine::Postgres => "postgres",
            Engine::MariaDb => "mysql",
        };
        format!("{scheme}://{user}:{password}@127.0.0.1:{}/{db}", self.port)
    }

    async fn until_up(&self) {
        sqlx::any::install_default_drivers();
        let (user, password, db) = match self.engine {
            Engine::Postgres => ("app", APP_PASSWORD, "postgres"),
            Engine::MariaDb => ("root", "", "mysql"),
        };
        let dsn = self.dsn(user, password, db);
        eventually(
            &format!("{} to accept connections", self.engine.tag()),
            Duration::from_secs(60),
            || async {
                AnyConnection::connect(&dsn)
                    .await
                    .map(drop)
                    .map_err(|e| format!("{e}: {}", self.log().lines().last().unwrap_or("")))
            },
        )
        .await;
    }

    async fn root(&self, statements: &[&str]) {
        let mut root = AnyConnection::connect(&self.dsn("root", "", "mysql"))
            .await
            .unwrap();
        for sql in statements {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
                .execute(&mut root)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }

    async fn root_setup(&self) {
        let mut root = AnyConnection::connect(&self.dsn("root", "", "mysql"))
            .await
            .unwrap();
        for sql in [
            "CREATE DATABASE app".to_owned(),
            format!("CREATE USER 'app'@'%' IDENTIFIED BY '{APP_PASSWORD}'"),
            "GRANT ALL ON app.* TO 'app'@'%' WITH GRANT OPTION".to_owned(),
            format!("CREATE USER 'agent'@'%' IDENTIFIED BY '{AGENT_PASSWORD}'"),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
                .execute(&mut root)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }

    /// The application's DSN.
    pub fn app_dsn(&self) -> String {
        self.dsn("app", APP_PASSWORD, "app")
    }

    /// A connection as the application (`app`, database `app`; for
    /// PostgreSQL before `app` exists, database `postgres`).
    pub async fn app(&self) -> AnyConnection {
        AnyConnection::connect(&self.dsn("app", APP_PASSWORD, "app"))
            .await
            .unwrap_or_else(|e| panic!("app cannot connect to {}: {e}", self.engine.tag()))
    }

    async fn exec_all(&self, statements: &[String]) {
        let mut c = AnyConnection::connect(&self.dsn("app", APP_PASSWORD, "postgres"))
            .await
            .unwrap();
        for sql in statements {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
                .execute(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }

    /// Runs `sql` as the application.
    pub async fn exec(&self, sql: &str) {
        let mut c = self.app().await;
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&mut c)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Lets the agent read `table`.
    pub async fn grant_read(&self, table: &str) {
        let sql = match self.engine {
            Engine::Postgres => format!("GRANT SELECT ON {table} TO agent"),
            Engine::MariaDb => format!("GRANT SELECT ON app.{table} TO 'agent'@'%'"),
        };
        self.exec(&sql).await;
    }

    /// The design's lease table (`bot_id` → `instance_id`, `last_seen`,
    /// `lease_until`), readable by the agent.
    pub async fn create_lease_table(&self, table: &str) {
        self.exec(&format!(
            "CREATE TABLE {table} (bot_id VARCHAR(64) PRIMARY KEY, instance_id VARCHAR(128) NOT NULL, last_seen TIMESTAMP(3) NOT NULL, lease_until TIMESTAMP(3) NOT NULL)"
        ))
        .await;
        // The index docs/split-brain.md recommends for the readings of
        // what changed.
        self.exec(&format!(
            "CREATE INDEX {}_last_seen ON {table} (last_seen)",
            table.replace('.', "_")
        ))
        .await;
        self.grant_read(table).await;
    }

    /// SQL for "now plus `secs` seconds" (negative: in the past).
    pub fn now_plus(&self, secs: f64) -> String {
        match self.engine {
            Engine::Postgres => format!("(now() + interval '{secs} seconds')"),
            Engine::MariaDb => format!("(NOW(3) + INTERVAL {} MICROSECOND)", (secs * 1e6) as i64),
        }
    }

    /// The application's write: `holder` holds `key` for `secs` from now.
    pub fn lease_write(&self, table: &str, key: &str, holder: &str, secs: f64) -> String {
        let (now, until) = (self.now_plus(0.0), self.now_plus(secs));
        match self.engine {
            Engine::Postgres => format!(
                "INSERT INTO {table} VALUES ('{key}', '{holder}', {now}, {until}) ON CONFLICT (bot_id) DO UPDATE SET instance_id = EXCLUDED.instance_id, last_seen = EXCLUDED.last_seen, lease_until = EXCLUDED.lease_until"
            ),
            Engine::MariaDb => format!(
                "INSERT INTO {table} VALUES ('{key}', '{holder}', {now}, {until}) ON DUPLICATE KEY UPDATE instance_id = VALUES(instance_id), last_seen = VALUES(last_seen), lease_until = VALUES(lease_until)"
            ),
        }
    }

    /// Stops the server at once (PostgreSQL's immediate shutdown, MariaDB
    /// killed): every connection drops, new ones are refused.
    pub fn kill(&mut self) {
        let pid = std::fs::read_to_string(self.pid_file()).unwrap_or_default();
        let signal = match self.engine {
            Engine::Postgres => "-QUIT",
            Engine::MariaDb => "-KILL",
        };
        if let Some(pid) = pid.lines().next().filter(|p| !p.trim().is_empty()) {
            let _ = Command::new("kill").args([signal, pid.trim()]).status();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// Starts the server again on its port and data.
    pub async fn restart(&mut self) {
        self.launch();
        self.until_up().await;
    }

    /// The server's process id (the postmaster; MariaDB's server).
    pub fn server_pid(&self) -> u32 {
        std::fs::read_to_string(self.pid_file())
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse().ok())
            .expect("the database server runs")
    }

    fn pid_file(&self) -> PathBuf {
        match self.engine {
            Engine::Postgres => self.dir.join("data/postmaster.pid"),
            Engine::MariaDb => self.dir.join("pid"),
        }
    }
}

impl Drop for Database {
    /// TERM to the watchdog, which kills the server.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }
}

/// The application's heartbeat: `holder` renews `key` every 250 ms for
/// `secs` seconds, until stopped (through outages of the database).
pub struct Renewer {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Renewer {
    pub fn start(db: &Database, key: &str, holder: &str, secs: f64) -> Self {
        let sql = db.lease_write("master_lease", key, holder, secs);
        let dsn = db.app_dsn();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // As an application's heartbeat does, it keeps trying through a
        // database outage and writes again once the server is back.
        let task = tokio::spawn(async move {
            let mut conn: Option<sqlx::AnyConnection> = None;
            while !flag.load(Ordering::SeqCst) {
                if conn.is_none() {
                    conn = sqlx::AnyConnection::connect(&dsn).await.ok();
                }
                if let Some(c) = conn.as_mut()
                    && sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
                        .execute(c)
                        .await
                        .is_err()
                {
                    conn = None;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        Self { stop, task }
    }

    /// Stops renewing; returns once the last write is done.
    pub async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap();
    }
}

/// An election set's `lease = { ... }` over `db`'s table `table`, read
/// every 250 ms; `extra` adds keys (`, split_brain_for = "2s"`).
pub fn lease(db: &Database, table: &str, extra: &str) -> String {
    format!(
        "lease = {{ dsn_file = \"{}\", password_file = \"{}\", table = \"{table}\", interval = \"250ms\", timeout = \"1s\"{extra} }}",
        db.dsn_file.display(),
        db.password_file.display()
    )
}

/// Waits until `agent` reads the lease table as agreeing with the master
/// of `election`.
pub async fn until_lease_agrees(agent: &super::Exporter, election: &str, within: Duration) {
    agent
        .until_values(
            &format!("{election} agrees"),
            within,
            &[(
                "zookeeper_election_lease_agrees",
                &[("election", election)],
                Some(1.0),
            )],
        )
        .await;
}
