//! Benchmarks against a real ZooKeeper (started like the tests start it):
//! (a) switch-to-scrape latency next to a plain client watch,
//! (b) initial sync time and RSS for 10,000 elections x 3 candidates,
//! (c) /metrics over HTTP at that size.
//! Run: cargo bench --bench zookeeper   (needs Debian's `zookeeper` package)

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::layout::{layout_client, multi_create};
use common::*;
use zookeeper_client::{Acls, CreateMode};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resets the process's peak RSS (`VmHWM`) to its RSS now, so that the
/// next reading is the peak of what follows.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

fn master_is(exporter_port: u16, election: &str, node: &str) -> bool {
    http_get(exporter_port, "/metrics").is_ok_and(|(_, body)| {
        body.lines().any(|l| {
            l.starts_with("zookeeper_election_master{")
                && l.contains(&format!("election=\"{election}\""))
                && l.contains(&format!("znode=\"{node}\""))
        })
    })
}

/// `fourlw` toggles four-letter-word polling, whose collection (once per
/// `min_interval`) and ~500 extra series share the scrape path.
async fn switch_latency(zk: &ZkServer, fourlw: bool) {
    let base = unique_path("bench_switch");
    let extra = if fourlw {
        ""
    } else {
        "[clusters.four_letter_words]\nenabled = false"
    };
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), extra));
    let admin = client(&zk.address()).await;
    let watcher = client(&zk.address()).await;
    let (mut plain, mut scrape) = (Vec::new(), Vec::new());
    for round in 0..40 {
        let election = format!("{base}/e{round}");
        mkdir(&admin, &election).await;
        let master = candidate(&admin, &election, "n_", b"m").await;
        let standby = candidate(&admin, &election, "n_", b"s").await;
        let port = exporter.port;
        let (e, m) = (election.clone(), master.clone());
        wait_for("master visible", Duration::from_secs(20), || {
            if master_is(port, &e, &m) {
                Ok(())
            } else {
                Err("not yet".into())
            }
        });
        let path = format!("{election}/{master}");
        let (_, watch) = watcher.check_and_watch_stat(&path).await.unwrap();
        let t0 = Instant::now();
        let plain_task = tokio::spawn(async move {
            watch.changed().await;
            t0.elapsed()
        });
        admin.delete(&path, None).await.unwrap();
        let scrape_task = tokio::task::spawn_blocking(move || {
            while !master_is(port, &election, &standby) {}
            t0.elapsed()
        });
        plain.push(plain_task.await.unwrap());
        scrape.push(scrape_task.await.unwrap());
    }
    plain.sort();
    scrape.sort();
    println!(
        "(a) four-letter words {}: switch seen by a plain watch: median {:.2?} p90 {:.2?}; on /metrics: median {:.2?} p90 {:.2?}; ratio of medians {:.2}",
        if fourlw { "on" } else { "off" },
        percentile(&plain, 0.5),
        percentile(&plain, 0.9),
        percentile(&scrape, 0.5),
        percentile(&scrape, 0.9),
        percentile(&scrape, 0.5).as_secs_f64() / percentile(&plain, 0.5).as_secs_f64()
    );
}

/// (a) for a node election at the top of a chroot (Kafka's `/controller`)
/// while the rest of the chroot is busy: `writers` tasks rewrite partition
/// state nodes elsewhere in it (as a Kafka with many partitions does), and
/// the master's node is deleted and re-created by a standby as in
/// [`node_switch_latency`]. Timed from the re-creation: a plain client's
/// `exists` watch, that client also reading the node, and `/metrics`
/// naming the standby. `cargo bench --bench zookeeper -- chroot`.
async fn chroot_switch_latency(zk: &ZkServer, writers: usize) {
    let base = unique_path("bench_chroot");
    let admin = client(&zk.address()).await;
    mkdir(&admin, &format!("{base}/brokers/topics")).await;
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\nchroot = \"{base}\"\n\
         [clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"/controller\"\nstyle = \"node\"\n",
        zk.address()
    ));
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut states = Vec::new();
    for p in 0..64 {
        let node = format!("{base}/brokers/topics/t{p}");
        admin.create(&node, b"", &persistent).await.unwrap();
        let state = format!("{node}/state");
        admin.create(&state, b"0", &persistent).await.unwrap();
        states.push(state);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let written = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut churn = Vec::new();
    for w in 0..writers {
        let c = client(&zk.address()).await;
        let (stop, written) = (stop.clone(), written.clone());
        let mine: Vec<String> = states.iter().skip(w).step_by(writers).cloned().collect();
        churn.push(tokio::spawn(async move {
            let mut i = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = c
                    .set_data(&mine[i % mine.len()], i.to_string().as_bytes(), None)
                    .await;
                written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    let standby = client(&zk.address()).await;
    let watcher = client(&zk.address()).await;
    let node = format!("{base}/controller");
    // The agent's CPU while only the churn runs (no scrapes).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu_before = cpu_seconds(exporter.pid());
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle_cpu = cpu_seconds(exporter.pid()) - cpu_before;
    let started = Instant::now();
    let written_before = written.load(std::sync::atomic::Ordering::Relaxed);
    let mut times = NodeSwitches::default();
    for _ in 0..40 {
        let labels = |who: &str| format!("znode=\"controller\",identity=\"{who}\"");
        times
            .round([&admin, &standby, &watcher], &node, exporter.port, labels)
            .await;
    }
    let rate = (written.load(std::sync::atomic::Ordering::Relaxed) - written_before) as f64
        / started.elapsed().as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in churn {
        let _ = c.await;
    }
    println!(
        "(a) node election at the chroot's top, {writers} writers elsewhere in the chroot ({rate:.0} writes/s): {}",
        times.report()
    );
    println!("    the agent's CPU over 10 s of that churn alone (no scrapes): {idle_cpu:.2} s");
}

/// Node-style switch times of several rounds: a plain client's `exists`
/// watch on the absent node, that client also reading the new node (who
/// is master now: its data and owner, as the exporter must), and
/// `/metrics` naming the standby; each timed from the re-creation.
#[derive(Default)]
struct NodeSwitches {
    plain: Vec<Duration>,
    read: Vec<Duration>,
    scrape: Vec<Duration>,
}

impl NodeSwitches {
    /// One round on `node`: `admin` creates it holding "m", the exporter
    /// at `port` names m (`labels(who)`: the text its master series carries
    /// for `who`), `admin` deletes it and `standby` re-creates it holding
    /// "s"; `standby` deletes it after.
    async fn round(
        &mut self,
        [admin, standby, watcher]: [&zookeeper_client::Client; 3],
        node: &str,
        port: u16,
        labels: impl Fn(&str) -> String,
    ) {
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        let names = |who: &str| {
            let wanted = labels(who);
            move || {
                http_get(port, "/metrics").is_ok_and(|(_, body)| {
                    body.lines()
                        .any(|l| l.starts_with("zookeeper_election_master{") && l.contains(&wanted))
                })
            }
        };
        admin.create(node, b"m", &ephemeral).await.unwrap();
        let master_m = names("m");
        wait_for("master visible", Duration::from_secs(20), || {
            if master_m() {
                Ok(())
            } else {
                Err("not yet".into())
            }
        });
        admin.delete(node, None).await.unwrap();
        let (_, watch) = watcher.check_and_watch_stat(node).await.unwrap();
        let t0 = Instant::now();
        let reader = watcher.clone();
        let read_node = node.to_owned();
        let plain_task = tokio::spawn(async move {
            watch.changed().await;
            let seen = t0.elapsed();
            let _ = reader.get_data(&read_node).await;
            (seen, t0.elapsed())
        });
        standby.create(node, b"s", &ephemeral).await.unwrap();
        let master_s = names("s");
        let scrape_task = tokio::task::spawn_blocking(move || {
            while !master_s() {}
            t0.elapsed()
        });
        let (seen, read) = plain_task.await.unwrap();
        self.plain.push(seen);
        self.read.push(read);
        self.scrape.push(scrape_task.await.unwrap());
        standby.delete(node, None).await.unwrap();
    }

    fn report(mut self) -> String {
        self.plain.sort();
        self.read.sort();
        self.scrape.sort();
        let median = |v: &[Duration]| percentile(v, 0.5);
        format!(
            "plain watch median {:.2?} p90 {:.2?}; watch and read median {:.2?}; on /metrics median {:.2?} p90 {:.2?}; ratio of medians {:.2} (to watch and read {:.2})",
            median(&self.plain),
            percentile(&self.plain, 0.9),
            median(&self.read),
            median(&self.scrape),
            percentile(&self.scrape, 0.9),
            median(&self.scrape).as_secs_f64() / median(&self.plain).as_secs_f64(),
            median(&self.scrape).as_secs_f64() / median(&self.read).as_secs_f64()
        )
    }
}

/// (a) for a node-style election: the master's node is deleted, then a
/// standby re-creates it; timed from the re-creation, the plain client's
/// `exists` watch on the absent node against `/metrics` naming the standby.
async fn node_switch_latency(zk: &ZkServer) {
    let base = unique_path("bench_node");
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"test\"\nservers = [\"{}\"]\n[clusters.four_letter_words]\nenabled = false\n\
         [[clusters.elections]]\npath = \"{base}/*/leader\"\nstyle = \"node\"\n",
        zk.address()
    ));
    let admin = client(&zk.address()).await;
    let standby = client(&zk.address()).await;
    let watcher = client(&zk.address()).await;
    let mut times = NodeSwitches::default();
    for round in 0..40 {
        let election = format!("{base}/e{round}");
        mkdir(&admin, &election).await;
        let labels = |who: &str| {
            format!("election=\"{election}/leader\",znode=\"leader\",identity=\"{who}\"")
        };
        let node = format!("{election}/leader");
        times
            .round([&admin, &standby, &watcher], &node, exporter.port, labels)
            .await;
    }
    println!("(a) node style: {}", times.report());
}

/// GET /metrics as raw bytes: the client does no decoding, so the time is
/// the exporter's (render + write) plus loopback transfer.
fn get_raw(port: u16) -> Vec<u8> {
    let mut buf = Vec::with_capacity(16 << 20);
    get_raw_into(port, &mut buf);
    buf
}

/// GET /metrics asking for gzip, as Prometheus does: the bytes as sent.
fn get_raw_gzip(port: u16) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    buf
}

/// [`get_raw`] into `buf` (cleared first): a loop of small scrapes reuses
/// one buffer, so the measuring client maps no 16 MiB per scrape.
fn get_raw_into(port: u16, buf: &mut Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    buf.clear();
    s.read_to_end(buf).unwrap();
}

/// Starts the exporter binary with `cluster` (TOML without `[web]`) and
/// returns it with its port and the time from process start to `/ready` 200.
fn start_timed(cluster: &str) -> (std::process::Child, u16, Duration) {
    let dir = temp_dir("bench-exporter");
    let port = free_port();
    std::fs::write(
        dir.join("c.toml"),
        format!("[web]\nlisten_address = \"127.0.0.1:{port}\"\nenable_lifecycle = true\n{cluster}"),
    )
    .unwrap();
    let started = Instant::now();
    let exporter = Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"))
        .arg("--config")
        .arg(dir.join("c.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        "exporter ready",
        Duration::from_secs(120),
        || match http_get(port, "/ready") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    (exporter, port, started.elapsed())
}

fn large_tree(zk: &ZkServer) {
    scale(zk, 10_000, "");
}

/// `n` elections x 3 candidates made by `simulate` (no churn), then the
/// exporter with the default settings plus `extra`: start to `/ready`, RSS
/// after sync and around 21 scrapes, scrape time and size.
fn scale(zk: &ZkServer, n: usize, extra: &str) {
    let base = unique_path("bench_large");
    let mut sim = simulated_elections(zk, &base, n);
    let (mut exporter, port, sync) =
        start_timed(&cluster_config(&zk.address(), &format!("{base}/*"), extra));
    let rss_synced = rss_kib(exporter.id(), "VmRSS:");
    let body = http_get(port, "/metrics").unwrap().1;
    let nodes = body
        .lines()
        .find(|l| l.starts_with("zookeeper_tree_nodes{"))
        .unwrap_or("?")
        .to_owned();
    let mut scrapes = Vec::new();
    let (mut series, mut bytes) = (0, 0);
    for _ in 0..21 {
        let t = Instant::now();
        let raw = get_raw(port);
        scrapes.push(t.elapsed());
        bytes = raw.len();
        series = raw
            .split(|b| *b == b'\n')
            .filter(|l| l.first().is_some_and(|c| *c == b'z'))
            .count();
    }
    scrapes.sort();
    let (after, peak) = (
        rss_kib(exporter.id(), "VmRSS:"),
        rss_kib(exporter.id(), "VmHWM:"),
    );
    println!(
        "(b) {n} elections x 3 candidates ({nodes}){}: process start to /ready 200 in {sync:.2?}; RSS {:.1} MiB after sync, {:.1} MiB after 21 scrapes, peak {:.1} MiB ({:.2} KiB per election incl. the process and scrape peaks; target 1 KiB x elections + 64 MiB = {:.0} MiB)",
        if extra.is_empty() {
            String::new()
        } else {
            format!(" [{}]", extra.replace('\n', "; "))
        },
        rss_synced as f64 / 1024.0,
        after as f64 / 1024.0,
        peak as f64 / 1024.0,
        peak as f64 / n as f64,
        n as f64 / 1024.0 + 64.0,
    );
    println!(
        "(c) GET /metrics with {series} series, {:.1} MiB: median {:.1?}, min {:.1?}, max {:.1?} (request to last byte over loopback)",
        bytes as f64 / (1 << 20) as f64,
        percentile(&scrapes, 0.5),
        scrapes[0],
        scrapes[scrapes.len() - 1]
    );
    let _ = exporter.kill();
    let _ = sim.kill();
    let _ = exporter.wait();
    let _ = sim.wait();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Four-letter words: scrape latency of a 3-server ensemble against one raw
/// mntr round trip, a scrape with one member hung, and RSS over 1,000 scrapes.
fn ensemble_scrapes() {
    let ensemble = ZkEnsemble::start(3);
    let addresses: Vec<String> = ensemble.servers.iter().map(ZkServer::address).collect();
    let exporter_for = |servers: &[String], commands: &str| {
        let quoted: Vec<String> = servers.iter().map(|a| format!("\"{a}\"")).collect();
        let exporter = Exporter::start(&format!(
            "[[clusters]]\nname = \"bench\"\nservers = [{}]\n[clusters.four_letter_words]\ntimeout = \"1s\"\n{commands}\n",
            quoted.join(", ")
        ));
        let want = servers.len() as f64;
        wait_for("members up", Duration::from_secs(30), || {
            let m = exporter.metrics()?;
            (m.get("zookeeper_ensemble_servers_up", &[]) == Some(want))
                .then_some(())
                .ok_or("not yet".into())
        });
        exporter
    };
    let variants = [
        // The ghost check's own rounds are off here: the CPU figure is the
        // collection's.
        (
            "3 servers x 5 default commands",
            addresses.clone(),
            "min_interval = \"0s\"\n[clusters.diagnostics]\nenabled = false",
        ),
        (
            "3 servers x mntr only",
            addresses.clone(),
            "min_interval = \"0s\"\ncommands = [\"mntr\"]\n[clusters.diagnostics]\nenabled = false",
        ),
    ];
    let ports: Vec<u16> = ensemble.servers.iter().map(|s| s.port).collect();
    for (what, servers, commands) in variants {
        let exporter = exporter_for(&servers, commands);
        let (mut raw, mut minimal, mut scrape) = (Vec::new(), Vec::new(), Vec::new());
        let mut series = 0;
        let cpu_before = cpu_seconds(exporter.pid());
        let rounds = 300;
        let mut body = Vec::with_capacity(1 << 20);
        for _ in 0..rounds {
            let t = Instant::now();
            four_letter(ensemble.servers[0].port, "mntr").unwrap();
            raw.push(t.elapsed());
            // The floor: mntr and srvr of every member, all at once, each
            // on its own connection, replies read whole and dropped.
            let t = Instant::now();
            std::thread::scope(|scope| {
                for port in &ports {
                    for word in ["mntr", "srvr"] {
                        scope.spawn(move || four_letter(*port, word).unwrap());
                    }
                }
            });
            minimal.push(t.elapsed());
            let t = Instant::now();
            get_raw_into(exporter.port, &mut body);
            scrape.push(t.elapsed());
            series = body
                .split(|b| *b == b'\n')
                .filter(|l| l.first() == Some(&b'z'))
                .count();
        }
        let cpu = (cpu_seconds(exporter.pid()) - cpu_before) * 1000.0 / f64::from(rounds);
        let (raw, minimal, scrape) = (median(raw), median(minimal), median(scrape));
        println!(
            "(d) {what} ({series} series), every scrape a fresh collection: raw mntr round trip median {raw:.2?}; minimal parallel mntr+srvr client to the 3 members {minimal:.2?}; GET /metrics median {scrape:.2?}; ratio {:.2} to one mntr, {:.2} to the minimal client; exporter CPU {cpu:.2} ms per scrape",
            scrape.as_secs_f64() / raw.as_secs_f64(),
            scrape.as_secs_f64() / minimal.as_secs_f64()
        );
    }
    let cached_exporter = exporter_for(&addresses, "min_interval = \"60s\"");
    let mut body = Vec::with_capacity(1 << 20);
    get_raw_into(cached_exporter.port, &mut body);
    // The floor of the HTTP part: a bare server in this process answering
    // every connection with the same bytes (the agent's response, headers
    // and all), one connection at a time, read by the same client.
    let bare = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bare_port = bare.local_addr().unwrap().port();
    let response = body.clone();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in bare.incoming().flatten() {
            let mut request = [0u8; 1024];
            let mut got = 0;
            while !request[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut request[got..]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got += n,
                }
            }
            let _ = conn.write_all(&response);
        }
    });
    // The floor of the framework: the HTTP stack the agent serves with
    // (a multi-threaded tokio runtime, hyper under axum), answering with
    // the same body and nothing else: what any HTTP answer of this size
    // costs the agent before its own work.
    let split = body
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(0, |p| p + 4);
    let framework_port = framework_server(axum::body::Bytes::from(body[split..].to_vec()));
    let (mut cached, mut floor, mut framework) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..300 {
        let t = Instant::now();
        get_raw_into(cached_exporter.port, &mut body);
        cached.push(t.elapsed());
        let t = Instant::now();
        get_raw_into(bare_port, &mut body);
        floor.push(t.elapsed());
        let t = Instant::now();
        get_raw_into(framework_port, &mut body);
        framework.push(t.elapsed());
    }
    drop(cached_exporter);
    let exporter = exporter_for(&addresses, "min_interval = \"0s\"");
    println!(
        "(d) the same scrape answered from a collection younger than min_interval: median {:.2?}; the same {} KiB response from a bare server: median {:.2?}; its body from a minimal server on the agent's HTTP stack: median {:.2?}",
        median(cached),
        body.len() >> 10,
        median(floor),
        median(framework)
    );
    ensemble.servers[1].freeze();
    let hung: Vec<Duration> = (0..10)
        .map(|_| {
            let t = Instant::now();
            get_raw(exporter.port);
            t.elapsed()
        })
        .collect();
    ensemble.servers[1].thaw();
    let worst = *hung.iter().max().unwrap();
    println!(
        "(e) one member SIGSTOPped, timeout 1 s: scrape median {:.3?}, worst {worst:.3?} (target <= 1.1 s)",
        median(hung.clone())
    );
    let pid = exporter.pid();
    let before = rss_kib(pid, "VmRSS:");
    for _ in 0..1000 {
        get_raw(exporter.port);
    }
    println!(
        "(f) RSS before 1,000 scrapes {:.1} MiB, after {:.1} MiB (peak {:.1} MiB)",
        before as f64 / 1024.0,
        rss_kib(pid, "VmRSS:") as f64 / 1024.0,
        rss_kib(pid, "VmHWM:") as f64 / 1024.0
    );
}

/// A minimal server on the agent's HTTP stack (tokio's default
/// multi-threaded runtime, axum over hyper) answering `GET /metrics` with
/// `body`, on a thread of its own; returns its port.
fn framework_server(body: axum::body::Bytes) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new().route(
                "/metrics",
                axum::routing::get(move || {
                    let body = body.clone();
                    async move { ([("content-type", "text/plain; version=0.0.4")], body) }
                }),
            );
            let _ = axum::serve(listener, app).await;
        });
    });
    port
}

/// Creates `paths` (parents first) with pipelined requests.
async fn create_all(
    c: &zookeeper_client::Client,
    paths: &[String],
    mode: zookeeper_client::CreateMode,
) {
    let options = mode.with_acls(zookeeper_client::Acls::anyone_all());
    for chunk in paths.chunks(2000) {
        let results =
            futures::future::join_all(chunk.iter().map(|p| c.create(p, b"", &options))).await;
        for r in results {
            match r {
                Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
                Err(e) => panic!("create: {e}"),
            }
        }
    }
}

/// Discovery over 100,000 nodes, in-process: time, nodes, requests.
async fn discovery_walk(zk: &ZkServer) {
    let c = client(&zk.address()).await;
    let root = unique_path("bench_discovery");
    let persistent = zookeeper_client::CreateMode::Persistent;
    create_all(&c, std::slice::from_ref(&root), persistent).await;
    let level_a: Vec<String> = (0..100).map(|a| format!("{root}/a{a}")).collect();
    create_all(&c, &level_a, persistent).await;
    let level_b: Vec<String> = level_a
        .iter()
        .flat_map(|a| (0..100).map(move |b| format!("{a}/b{b}")))
        .collect();
    create_all(&c, &level_b, persistent).await;
    // Leaves: 90 % configuration nodes, 10 % elections with 9 ephemeral
    // candidates, so the walk meets both kinds.
    let mut leaves = Vec::new();
    let mut candidates = Vec::new();
    for (i, b) in level_b.iter().enumerate() {
        if i % 10 == 0 {
            candidates.extend((0..9).map(|_| format!("{b}/n_")));
        } else {
            leaves.extend((0..9).map(|c| format!("{b}/c{c}")));
        }
    }
    create_all(&c, &leaves, persistent).await;
    create_all(
        &c,
        &candidates,
        zookeeper_client::CreateMode::EphemeralSequential,
    )
    .await;
    let total = 1 + level_a.len() + level_b.len() + leaves.len() + candidates.len();
    let started = Instant::now();
    let walk = zk_election_exporter::sources::discovery::walk(&c, &root, &[], 200_000)
        .await
        .unwrap();
    let took = started.elapsed();
    println!(
        "(g) discovery over {total} nodes: {:.2?}, {} nodes listed, {} elections found, {} multi-read requests carrying {} operations",
        took,
        walk.walked,
        walk.elections().count(),
        walk.requests,
        walk.operations
    );
}

/// 1,000 groups x 10 members: process start to /ready, and RSS.
async fn groups_sync(zk: &ZkServer) {
    let c = client(&zk.address()).await;
    let root = unique_path("bench_groups");
    create_all(
        &c,
        std::slice::from_ref(&root),
        zookeeper_client::CreateMode::Persistent,
    )
    .await;
    let groups: Vec<String> = (0..1000).map(|g| format!("{root}/svc{g:04}")).collect();
    create_all(&c, &groups, zookeeper_client::CreateMode::Persistent).await;
    let members: Vec<String> = groups
        .iter()
        .flat_map(|g| (0..10).map(move |m| format!("{g}/10.0.{}.{m}:8080", m % 7)))
        .collect();
    create_all(&c, &members, zookeeper_client::CreateMode::Ephemeral).await;
    let (mut exporter, port, sync) = start_timed(&format!(
        "[[clusters]]\nservers = [\"{}\"]\n[clusters.four_letter_words]\nenabled = false\n[[clusters.groups]]\npath = \"{root}/*\"\nexport_members = true\n",
        zk.address()
    ));
    let body = get_raw(port);
    let series = body
        .split(|b| *b == b'\n')
        .filter(|l| l.first() == Some(&b'z'))
        .count();
    println!(
        "(h) 1,000 groups x 10 members (export_members on, {series} series): process start to /ready {sync:.2?}; RSS {:.1} MiB (peak {:.1} MiB)",
        rss_kib(exporter.id(), "VmRSS:") as f64 / 1024.0,
        rss_kib(exporter.id(), "VmHWM:") as f64 / 1024.0
    );
    let _ = exporter.kill();
    let _ = exporter.wait();
}

/// The failover probe's figure next to a plain client's watch latency.
async fn probe(zk: &ZkServer) {
    let path = unique_path("bench_probe");
    let exporter = Exporter::start(&format!(
        "[[clusters]]\nname = \"bench\"\nservers = [\"{}\"]\nsession_timeout = \"4s\"\n[clusters.four_letter_words]\nenabled = false\n[clusters.probe]\npath = \"{path}\"\ninterval = \"200ms\"\n",
        zk.address()
    ));
    let m = exporter
        .until("40 probe rounds", Duration::from_secs(120), |m| {
            m.get("zookeeper_probe_failover_seconds_count", &[])
                .is_some_and(|n| n >= 40.0)
        })
        .await;
    let mean = m.get("zookeeper_probe_failover_seconds_sum", &[]).unwrap()
        / m.get("zookeeper_probe_failover_seconds_count", &[])
            .unwrap();
    // The same ensemble, a plain client: delete a node another client watches.
    let (admin, watcher) = (client(&zk.address()).await, client(&zk.address()).await);
    let base = unique_path("bench_plain");
    mkdir(&admin, &base).await;
    let mut plain = Vec::new();
    for _ in 0..40 {
        let node = candidate(&admin, &base, "n_", b"").await;
        let path = format!("{base}/{node}");
        let (_, watch) = watcher.check_and_watch_stat(&path).await.unwrap();
        let t = Instant::now();
        admin.delete(&path, None).await.unwrap();
        watch.changed().await;
        plain.push(t.elapsed());
    }
    println!(
        "(i) probe failover (close master session -> standby sees itself master), mean of {} rounds: {:.2} ms; plain watch on a deletion, median of 40: {:.2?}",
        m.get("zookeeper_probe_failover_seconds_count", &[])
            .unwrap(),
        mean * 1000.0,
        median(plain)
    );
}

/// The bot-account scale: `n` elections under one parent (as
/// `/wechat/bots/bot_N`), half with one candidate and half with two, laid
/// out with multi-ops from four sessions that hold the candidates; then
/// the exporter with its defaults: start to `/ready`, RSS after sync and
/// around scrapes, `/metrics` at the default cap, switches at that size
/// against a bare watch, and a reload. `cargo bench --bench zookeeper --
/// million [N]` (a 6 GiB ZooKeeper heap, several minutes).
async fn million(zk: &ZkServer, n: usize) {
    let base = unique_path("million");
    let admin = layout_client(&zk.address()).await;
    mkdir(&admin, &base).await;
    let t = Instant::now();
    let parents: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| (format!("{base}/bot_{i}"), Vec::new()))
        .collect();
    multi_create(&admin, &parents, CreateMode::Persistent, 1000, 8).await;
    let parents_took = t.elapsed();
    let mut holders = Vec::new();
    for _ in 0..4 {
        holders.push(layout_client(&zk.address()).await);
    }
    let t = Instant::now();
    let mut masters = std::collections::HashMap::new();
    let mut candidates = 0;
    for (k, holder) in holders.iter().enumerate() {
        // Holder k: the first candidate of every election i with i % 4 == k,
        // and the second of every odd i with (i + 1) % 4 == k.
        let mut mine: Vec<(String, Vec<u8>)> = Vec::new();
        for i in (k..n).step_by(4) {
            mine.push((
                format!("{base}/bot_{i}/n_"),
                format!("dev-{i}-a").into_bytes(),
            ));
        }
        multi_create(holder, &mine, CreateMode::EphemeralSequential, 1000, 8)
            .await
            .into_iter()
            .zip(mine.iter())
            .for_each(|(made, _)| {
                masters.insert(made.rsplit_once('/').unwrap().0.to_owned(), (k, made));
            });
        candidates += mine.len();
    }
    for (k, holder) in holders.iter().enumerate() {
        let second: Vec<(String, Vec<u8>)> = (0..n)
            .filter(|i| i % 2 == 1 && (i + 1) % 4 == k)
            .map(|i| {
                (
                    format!("{base}/bot_{i}/n_"),
                    format!("dev-{i}-b").into_bytes(),
                )
            })
            .collect();
        candidates += second.len();
        multi_create(holder, &second, CreateMode::EphemeralSequential, 1000, 8).await;
    }
    println!(
        "(m) layout: {n} elections, {candidates} candidates from 4 sessions with multi-ops of 1,000: parents {parents_took:.1?}, candidates {:.1?}",
        t.elapsed()
    );
    let (mut exporter, port, sync) = start_timed(&format!(
        "[[clusters]]\nname = \"million\"\nservers = [\"{}\"]\n[[clusters.elections]]\npath = \"{base}/*\"\n",
        zk.address()
    ));
    let rss_synced = rss_kib(exporter.id(), "VmRSS:");
    let mut scrapes = Vec::new();
    let mut bytes = 0;
    for _ in 0..5 {
        let t = Instant::now();
        bytes = get_raw(port).len();
        scrapes.push(t.elapsed());
    }
    scrapes.sort();
    let (after, peak) = (
        rss_kib(exporter.id(), "VmRSS:"),
        rss_kib(exporter.id(), "VmHWM:"),
    );
    println!(
        "(m) exporter, defaults (max_elections 10,000): process start to /ready 200 in {sync:.2?} ({:.2?} per 100k; target 2 s); RSS {:.0} MiB after sync, {:.0} MiB after 5 scrapes, peak {:.0} MiB (target 1 KiB x elections + 64 MiB = {:.0} MiB); GET /metrics {:.1} MiB: median {:.0?}, max {:.0?}",
        sync / (n as u32 / 100_000).max(1),
        rss_synced as f64 / 1024.0,
        after as f64 / 1024.0,
        peak as f64 / 1024.0,
        n as f64 / 1024.0 + 64.0,
        bytes as f64 / (1 << 20) as f64,
        percentile(&scrapes, 0.5),
        scrapes[scrapes.len() - 1],
    );
    // The lookup of one election by path (past the cap: the latest
    // scrape's choice, no survey), for an exported and a calm one.
    let mut lookups = Vec::new();
    for i in 0..20 {
        let path = format!("/api/v1/elections{base}/bot_{}", i * 49_999 % n);
        let t = Instant::now();
        let (status, body) = http_get(port, &path).unwrap();
        lookups.push(t.elapsed());
        assert_eq!(status, 200, "{body}");
    }
    lookups.sort();
    println!(
        "(m) GET /api/v1/elections/PATH at {n} elections, default cap: median {:.2?}, max {:.2?}",
        percentile(&lookups, 0.5),
        lookups[lookups.len() - 1]
    );
    // Switches at this size: the master's node of an election with two
    // candidates is deleted; a bare `exists` watch on it against the
    // agent's timeline naming the switch.
    let watcher = layout_client(&zk.address()).await;
    let (mut plain, mut agent) = (Vec::new(), Vec::new());
    for round in 0..10 {
        let i = n / 2 + 4 * round + 1;
        let election = format!("{base}/bot_{i}");
        let (k, node) = masters[&election].clone();
        let (_, watch) = watcher.check_and_watch_stat(&node).await.unwrap();
        let t0 = Instant::now();
        let plain_task = tokio::spawn(async move {
            watch.changed().await;
            t0.elapsed()
        });
        holders[k].delete(&node, None).await.unwrap();
        let query = format!("/api/v1/events?election={election}&kind=switch");
        let agent_task = tokio::task::spawn_blocking(move || {
            loop {
                if let Ok((200, body)) = http_get(port, &query)
                    && body.contains("\"switch\"")
                {
                    return t0.elapsed();
                }
            }
        });
        plain.push(plain_task.await.unwrap());
        agent.push(agent_task.await.unwrap());
    }
    plain.sort();
    agent.sort();
    println!(
        "(m) a switch at {n} elections: bare watch median {:.2?}, the agent's timeline median {:.2?} p90 {:.2?}; ratio of medians {:.2} (target 2)",
        percentile(&plain, 0.5),
        percentile(&agent, 0.5),
        percentile(&agent, 0.9),
        percentile(&agent, 0.5).as_secs_f64() / percentile(&plain, 0.5).as_secs_f64()
    );
    let t = Instant::now();
    let reload = http_post_json(port, "/-/reload", "");
    println!(
        "(m) POST /-/reload of the unchanged file at {n} elections: {:.2?} ({reload:?})",
        t.elapsed()
    );
    let _ = exporter.kill();
    let _ = exporter.wait();
    // Every election exported (about 12 series each).
    let (mut exporter, port, sync) = start_timed(&format!(
        "[[clusters]]\nname = \"million\"\nservers = [\"{}\"]\nmax_elections = {n}\n[[clusters.elections]]\npath = \"{base}/*\"\n",
        zk.address()
    ));
    // As Prometheus scrapes (gzip), then as a client without gzip, each
    // with its own peak.
    let synced = rss_kib(exporter.id(), "VmRSS:");
    reset_peak(exporter.id());
    let mut zipped = Vec::new();
    let mut zipped_bytes = 0;
    for _ in 0..2 {
        let t = Instant::now();
        zipped_bytes = get_raw_gzip(port).len();
        zipped.push(t.elapsed());
    }
    let zipped_peak = rss_kib(exporter.id(), "VmHWM:");
    reset_peak(exporter.id());
    let mut scrapes = Vec::new();
    for _ in 0..2 {
        let t = Instant::now();
        bytes = get_raw(port).len();
        scrapes.push(t.elapsed());
    }
    println!(
        "(m) every election exported (max_elections = {n}): /ready in {sync:.2?}, RSS {:.0} MiB; gzip: GET /metrics {:.1} MiB in {:.1?} and {:.1?}, RSS peak {:.0} MiB; plain: {:.0} MiB in {:.1?} and {:.1?}, RSS peak {:.0} MiB (target 1 KiB x elections + 64 MiB = {:.0} MiB)",
        synced as f64 / 1024.0,
        zipped_bytes as f64 / (1 << 20) as f64,
        zipped[0],
        zipped[1],
        zipped_peak as f64 / 1024.0,
        bytes as f64 / (1 << 20) as f64,
        scrapes[0],
        scrapes[1],
        rss_kib(exporter.id(), "VmHWM:") as f64 / 1024.0,
        (n as f64 + 65536.0) / 1024.0
    );
    let _ = exporter.kill();
    let _ = exporter.wait();
}

fn main() {
    // `cargo bench --bench zookeeper -- million [N]`: a million elections.
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "million") {
        let n = args
            .get(at + 1)
            .and_then(|a| a.parse().ok())
            .unwrap_or(1_000_000);
        // SAFETY: set before any thread of this process reads the environment.
        unsafe { std::env::set_var("ZKEE_ZK_HEAP", "6g") };
        // No snapshot while the layout is written (each would serialise the
        // whole tree on these two cores).
        let zk = ZkServer::start_custom(ServerOptions::default(), "snapCount=100000000\n", "");
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(million(&zk, n));
        return;
    }
    // `cargo bench --bench zookeeper -- scale`: 100,000 and 200,000
    // elections (minutes, and a 3 GiB ZooKeeper heap), apart from the rest.
    if std::env::args().any(|a| a == "scale200") {
        // SAFETY: set before any thread of this process reads the environment.
        unsafe { std::env::set_var("ZKEE_ZK_HEAP", "3g") };
        let zk = ZkServer::start();
        scale(&zk, 200_000, "");
        return;
    }
    if std::env::args().any(|a| a == "scale") {
        // SAFETY: set before any thread of this process reads the environment.
        unsafe { std::env::set_var("ZKEE_ZK_HEAP", "3g") };
        let zk = ZkServer::start();
        scale(&zk, 100_000, "");
        scale(&zk, 100_000, "max_elections = 100000");
        // 200,000 with every election exported would make ZooKeeper itself
        // (1.2 million nodes on these two cores) stop answering simulate.
        scale(&zk, 200_000, "");
        return;
    }
    if std::env::args().any(|a| a == "chroot") {
        let zk = ZkServer::start();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(chroot_switch_latency(&zk, 0));
        runtime.block_on(chroot_switch_latency(&zk, 4));
        return;
    }
    if std::env::args().any(|a| a == "ensemble") {
        ensemble_scrapes();
        return;
    }
    let zk = ZkServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(switch_latency(&zk, false));
    runtime.block_on(switch_latency(&zk, true));
    runtime.block_on(node_switch_latency(&zk));
    large_tree(&zk);
    runtime.block_on(discovery_walk(&zk));
    runtime.block_on(groups_sync(&zk));
    runtime.block_on(probe(&zk));
    drop(zk);
    ensemble_scrapes();
}
