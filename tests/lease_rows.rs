//! What the application's lease table may hold and how it is reached,
//! against Debian's PostgreSQL and MariaDB and a real ZooKeeper: garbage
//! rows (NULLs, duplicate keys, huge keys and holders, rows of no
//! election, times in the future, columns of the wrong type) are counted,
//! never a panic, never a label over the cap; and the database over TLS,
//! with another CA or without TLS where the server requires it, is no
//! reading, with the reason named.

mod common;

use std::time::Duration;

use common::database::{Database, Engine, lease};
use common::lease_agent::*;
use common::*;

const T: Duration = Duration::from_secs(60);

/// NULLs, keys no election has, a duplicated key, a huge key and a
/// huge holder, a `last_seen` in the future, a timestamp column of the
/// wrong type.
async fn garbage(engine: Engine) {
    let zk = shared_server();
    let db = Database::start(engine).await;
    db.exec(
        "CREATE TABLE junk (bot_id TEXT NULL, instance_id TEXT NULL, last_seen TIMESTAMP(3) NULL, lease_until TIMESTAMP(3) NULL)",
    )
    .await;
    db.grant_read("junk").await;
    db.exec(
        "CREATE TABLE typed (bot_id VARCHAR(64), instance_id VARCHAR(64), last_seen VARCHAR(64), lease_until VARCHAR(64))",
    )
    .await;
    db.grant_read("typed").await;
    let huge = "x".repeat(10_000);
    let (now, hour, future) = (db.now_plus(0.0), db.now_plus(3600.0), db.now_plus(7200.0));
    let long_key = "k".repeat(1000);
    for row in [
        format!("('g1', NULL, {now}, {hour})"),
        format!("('g2', 'x', {now}, NULL)"),
        format!("(NULL, 'x', {now}, {hour})"),
        format!("('g3', '{huge}', {now}, {hour})"),
        format!("('g4', 'a', {now}, {hour})"),
        format!("('g4', 'b', {now}, {hour})"),
        format!("('{long_key}', 'a', {now}, {hour})"),
        format!("('nobody', 'a', {now}, {hour})"),
        format!("('g6', 'a', {hour}, {future})"),
    ] {
        db.exec(&format!("INSERT INTO junk VALUES {row}")).await;
    }
    db.exec("INSERT INTO typed VALUES ('t1', 'a', 'yesterday', 'soon')")
        .await;
    let base = unique_path(&format!("garbage_{}", engine.tag()));
    let admin = client(&zk.address()).await;
    let owner = client(&zk.address()).await;
    for (g, data) in [
        ("g3", huge.as_bytes()),
        ("g4", b"a"),
        ("g5", b"inst-5"),
        ("g6", b"a"),
    ] {
        mkdir(&admin, &format!("{base}/junk/{g}")).await;
        candidate(&owner, &format!("{base}/junk/{g}"), "n_", data).await;
    }
    mkdir(&admin, &format!("{base}/typed/t1")).await;
    candidate(&owner, &format!("{base}/typed/t1"), "n_", b"a").await;
    let agent = Exporter::start(&format!(
        "[[clusters]]\nname = \"garbage\"\nservers = [\"{zk}\"]\n\
         [[clusters.elections]]\npath = \"{base}/junk/*\"\n{}\n\
         [[clusters.elections]]\npath = \"{base}/typed/*\"\n{}\n",
        lease(&db, "junk", ""),
        lease(&db, "typed", ""),
        zk = zk.address(),
    ));
    let junk = format!("{base}/junk/*");
    let m = agent
        .until_values(
            "the junk table judged",
            T,
            &[
                ("zookeeper_lease_rows", &[("tree", &junk)], Some(2.0)),
                (
                    "zookeeper_lease_rows_unmatched",
                    &[("tree", &junk)],
                    Some(1.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "null")],
                    Some(3.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "duplicate")],
                    Some(2.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "too_long")],
                    Some(1.0),
                ),
                (
                    "zookeeper_lease_rows_rejected",
                    &[("tree", &junk), ("reason", "future")],
                    Some(1.0),
                ),
                (
                    "zookeeper_election_lease_state",
                    &[
                        ("election", &format!("{base}/junk/g3")),
                        ("state", "agrees"),
                    ],
                    Some(1.0),
                ),
                (
                    "zookeeper_election_lease_state",
                    &[
                        ("election", &format!("{base}/junk/g5")),
                        ("state", "no_row"),
                    ],
                    Some(1.0),
                ),
            ],
        )
        .await;
    // The duplicated key is not judged, nor is the row from the future.
    for g in ["g4", "g6"] {
        let election = format!("{base}/junk/{g}");
        assert!(
            m.series("zookeeper_election_lease_state", &[("election", &election)])
                .is_empty(),
            "{g} judged"
        );
    }
    for (labels, _) in m.series("zookeeper_election_lease_holder_info", &[]) {
        assert!(labels["holder"].chars().count() <= 128, "{labels:?}");
    }
    // The wrong column type: PostgreSQL refuses the query (no reading);
    // MariaDB converts the text to NULL (a rejected row).
    let typed = format!("{base}/typed/*");
    match engine {
        Engine::Postgres => {
            agent
                .until("the typed table refused", T, |m| {
                    m.get(
                        "zookeeper_lease_failures_total",
                        &[("tree", &typed), ("reason", "query")],
                    )
                    .is_some_and(|n| n >= 1.0)
                        && m.get("zookeeper_lease_up", &[("tree", &typed)]) == Some(0.0)
                })
                .await;
            let (status, ready) = agent.ready();
            assert!(
                status == 200 && ready.contains("(query)"),
                "{status} {ready}"
            );
        }
        Engine::MariaDb => {
            agent
                .until_values(
                    "the typed table's row rejected",
                    T,
                    &[
                        ("zookeeper_lease_up", &[("tree", &typed)], Some(1.0)),
                        (
                            "zookeeper_lease_rows_rejected",
                            &[("tree", &typed), ("reason", "null")],
                            Some(1.0),
                        ),
                    ],
                )
                .await;
        }
    }
    // Still serving, still watching.
    let (status, _) = http_get(agent.port, "/api/v1/status").unwrap();
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_garbage_rows() {
    garbage(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_garbage_rows() {
    garbage(Engine::MariaDb).await;
}

/// TLS to the database: the agent verifies the server's certificate
/// against the CA its DSN names, and the server takes the agent over TLS
/// only. A DSN trusting another CA, or asking for no TLS, gets no reading.
async fn over_tls(engine: Engine) {
    let zk = shared_server();
    let db = Database::start_tls(engine).await;
    db.create_lease_table("master_lease").await;
    db.exec(&db.lease_write("master_lease", "bot_1", "inst-a", 3600.0))
        .await;
    let base = unique_path(&format!("tls_{}", engine.tag()));
    let admin = client(&zk.address()).await;
    let owner = client(&zk.address()).await;
    for set in ["verified", "other_ca", "plain"] {
        mkdir(&admin, &format!("{base}/{set}/bot_1")).await;
        candidate(&owner, &format!("{base}/{set}/bot_1"), "n_", b"inst-a").await;
    }
    let verified = std::fs::read_to_string(&db.dsn_file).unwrap();
    let other = common::pki::Ca::new(&db.dir, "other");
    let other_dsn = db.dir.join("other-ca.dsn");
    std::fs::write(
        &other_dsn,
        verified.replace(
            "db-ca.pem",
            &other.cert_file.file_name().unwrap().to_string_lossy(),
        ),
    )
    .unwrap();
    let plain_dsn = db.dir.join("plain.dsn");
    let keep = verified.split_once('?').unwrap().0;
    let no_tls = match engine {
        Engine::Postgres => "sslmode=disable",
        Engine::MariaDb => "ssl-mode=DISABLED",
    };
    std::fs::write(&plain_dsn, format!("{keep}?{no_tls}\n")).unwrap();
    let set = |name: &str, dsn: &std::path::Path| {
        format!(
            "[[clusters.elections]]\npath = \"{base}/{name}/*\"\nlease = {{ dsn_file = \"{}\", password_file = \"{}\", interval = \"250ms\", timeout = \"2s\" }}\n",
            dsn.display(),
            db.password_file.display()
        )
    };
    let agent = Exporter::start(&format!(
        "[[clusters]]\nname = \"tls\"\nservers = [\"{}\"]\n{}{}{}",
        zk.address(),
        set("verified", &db.dsn_file),
        set("other_ca", &other_dsn),
        set("plain", &plain_dsn),
    ));
    let (verified, other_ca, plain) = (
        format!("{base}/verified/*"),
        format!("{base}/other_ca/*"),
        format!("{base}/plain/*"),
    );
    agent
        .until("TLS verified, the others refused", T, |m| {
            m.get("zookeeper_lease_up", &[("tree", &verified)]) == Some(1.0)
                && [&other_ca, &plain].iter().all(|t| {
                    m.get(
                        "zookeeper_lease_failures_total",
                        &[("tree", t), ("reason", "connect")],
                    )
                    .is_some_and(|n| n >= 1.0)
                        && m.get("zookeeper_lease_readings_total", &[("tree", t)]) == Some(0.0)
                })
        })
        .await;
    until_state(&agent, &format!("{base}/verified/bot_1"), "agrees").await;
    let (_, body) = http_get(agent.port, "/api/v1/status").unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let error = |tree: &str| {
        v["clusters"][0]["leases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["tree"] == tree)
            .and_then(|l| l["error"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    eprintln!("other CA: {}\nno TLS: {}", error(&other_ca), error(&plain));
    assert!(
        error(&other_ca).to_lowercase().contains("certificate"),
        "{}",
        error(&other_ca)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls() {
    over_tls(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_over_tls() {
    over_tls(Engine::MariaDb).await;
}

/// Between readings of every row the agent reads only the rows written
/// lately: a table of 300 rows, of which the masters of three elections
/// renew theirs, costs three rows a reading; every row is read again each
/// `full_every` (in pages of 40 rows here, each after the last key of the
/// one before), which is when a deleted row is seen (`no_row`); with
/// `full_every = "0s"` every reading reads every row.
async fn reads_what_changed(engine: Engine) {
    let zk = shared_server();
    let db = Database::start(engine).await;
    db.create_lease_table("master_lease").await;
    // 297 rows of bots this agent does not watch, written an hour ago.
    let old = |i: u32| {
        format!(
            "('other_{i}', 'sim', {}, {})",
            db.now_plus(-3600.0),
            db.now_plus(3600.0)
        )
    };
    let rows: Vec<String> = (0..297).map(old).collect();
    db.exec(&format!(
        "INSERT INTO master_lease VALUES {}",
        rows.join(", ")
    ))
    .await;
    let base = unique_path(&format!("changed_{}", engine.tag()));
    let admin = client(&zk.address()).await;
    let owner = client(&zk.address()).await;
    for bot in ["bot_1", "bot_2", "bot_3"] {
        let path = format!("{base}/bots/{bot}");
        mkdir(&admin, &path).await;
        candidate(&owner, &path, "n_", format!("inst-{bot}").as_bytes()).await;
        db.exec(&db.lease_write("master_lease", bot, &format!("inst-{bot}"), 3600.0))
            .await;
    }
    let agent = |full_every: &str| {
        Exporter::start(&format!(
            "[[clusters]]\nname = \"changed\"\nservers = [\"{zk}\"]\n\
             [[clusters.elections]]\npath = \"{base}/bots/*\"\n{}\n",
            lease(
                &db,
                "master_lease",
                &format!(", full_every = \"{full_every}\", page_rows = 40")
            ),
            zk = zk.address(),
        ))
    };
    let (changed, every) = (agent("6s"), agent("0s"));
    let tree = format!("{base}/bots/*");
    for bot in ["bot_1", "bot_2", "bot_3"] {
        until_state(&changed, &format!("{base}/bots/{bot}"), "agrees").await;
    }
    // A reading of what changed: the three masters' rows (written within
    // the window), not the 297 others; the table still holds all 300.
    changed
        .until_values(
            "a reading of the three rows written lately",
            T,
            &[
                ("zookeeper_lease_query_rows", &[("tree", &tree)], Some(3.0)),
                ("zookeeper_lease_rows", &[("tree", &tree)], Some(300.0)),
                (
                    "zookeeper_lease_rows_unmatched",
                    &[("tree", &tree)],
                    Some(297.0),
                ),
            ],
        )
        .await;
    // Another instance takes bot_2's row after its master took over: the
    // reading of what changed shows the split brain (no reading of every
    // row needed).
    db.exec(&db.lease_write("master_lease", "bot_2", "rogue", 3600.0))
        .await;
    until_state(&changed, &format!("{base}/bots/bot_2"), "split_brain").await;
    // bot_3's row is deleted: seen at the next reading of every row.
    db.exec("DELETE FROM master_lease WHERE bot_id = 'bot_3'")
        .await;
    until_state(&changed, &format!("{base}/bots/bot_3"), "no_row").await;
    changed
        .until("the table without bot_3's row", T, |m| {
            m.get("zookeeper_lease_rows", &[("tree", &tree)]) == Some(299.0)
        })
        .await;
    // With full_every = "0s" every reading reads every row, in pages of
    // 40: the last page of a pass over 299 rows has 19 (a scrape between
    // two pages of a pass reads 40, hence the wait).
    every
        .until("readings of every row", T, |m| {
            m.get("zookeeper_lease_readings_total", &[("tree", &tree)])
                .is_some_and(|n| n >= 16.0)
                && m.get("zookeeper_lease_query_rows", &[("tree", &tree)]) == Some(19.0)
                && m.get("zookeeper_lease_rows", &[("tree", &tree)]) == Some(299.0)
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reads_what_changed() {
    reads_what_changed(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_reads_what_changed() {
    reads_what_changed(Engine::MariaDb).await;
}
