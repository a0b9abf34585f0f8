//! /metrics render time for 10,000 to 200,000 elections x 3 candidates, all
//! exported and at the default export cap, in-process and without
//! ZooKeeper: the model is filled directly.
//! Run: cargo bench --bench render

use std::time::{Duration, Instant};

use zk_election_exporter::metrics;
use zk_election_exporter::model::Now;
use zk_election_exporter::model::candidate::IdentityMode;
use zk_election_exporter::model::cluster::{Limits, Setup};
use zk_election_exporter::model::tree::{ChildNode, Tree, TreePattern};
use zk_election_exporter::model::{ClusterState, SharedCluster};

fn main() {
    // As the binary does at start.
    zk_election_exporter::os::cap_allocator_arenas();
    // `cargo bench --bench render -- million`: the default cap at a
    // million elections, apart from the rest.
    // `cargo bench --bench render -- status`: the status page's body at
    // 100,000 elections, the default cap, a busy hour in the timeline.
    if std::env::args().any(|a| a == "status") {
        status(100_000, 10_000);
        return;
    }
    if std::env::args().any(|a| a == "million") {
        scaled(1_000_000, 10_000, &[false]);
        return;
    }
    // `cargo bench --bench render -- zipped`: a body past the threshold
    // at which it is compressed while written, against the same body
    // written whole, and how long each keeps a writer waiting.
    if std::env::args().any(|a| a == "zipped") {
        zipped(200_000);
        return;
    }
    // `cargo bench --bench render -- collection`: one fresh collection's
    // parse, typing and render, alone.
    if std::env::args().any(|a| a == "collection") {
        ensemble_cost();
        return;
    }
    ensemble_cost();
    for elections in [10_000, 100_000, 200_000] {
        // Every election exported: the per-series cost as size grows.
        scaled(elections, elections, &[false, true]);
    }
    for elections in [100_000, 200_000] {
        // The default cap: 10,000 elections with series, all counted.
        scaled(elections, 10_000, &[false]);
    }
}

/// One cluster of `elections` bots x 3 candidates, as listed, with
/// per-election series for at most `cap` of them.
fn bots(elections: usize, cap: usize) -> ClusterState {
    let mut tree = Tree::elections(
        TreePattern::parse("/wechat/bots/*").unwrap(),
        IdentityMode::Data,
    );
    let listing = (0..elections)
        .map(|i| {
            let children = (0..3)
                .map(|j| ChildNode {
                    name: format!("instance_{:010}", j),
                    data: format!("device-{i}-{j}").into_bytes(),
                    ephemeral_owner: 1,
                    ctime_ms: 1_700_000_000_000,
                })
                .collect();
            (format!("/wechat/bots/bot_{i:06}"), children)
        })
        .collect();
    tree.apply_listing(listing, Now::current());
    ClusterState::new("bench".into(), vec![tree], false).set_up(Setup {
        limits: Limits {
            max_elections: cap,
            max_tracked_elections: elections,
            ..Limits::default()
        },
        ..Setup::default()
    })
}

/// Renders `elections` x 3 candidates with `max_elections = cap`.
fn scaled(elections: usize, cap: usize, formats: &[bool]) {
    let cluster = SharedCluster::new(bots(elections, cap));
    let exposition = metrics::Exposition::new(vec![cluster]);
    let runs = if elections > 50_000 { 11 } else { 31 };
    for &openmetrics in formats {
        let mut times: Vec<Duration> = Vec::new();
        let mut size = (0, 0);
        for _ in 0..runs {
            let start = Instant::now();
            let out = exposition.render(openmetrics).unwrap();
            times.push(start.elapsed());
            size = (
                out.len(),
                out.lines().filter(|l| !l.starts_with('#')).count(),
            );
        }
        times.sort();
        let median = times[times.len() / 2];
        if !openmetrics && elections <= 100_000 && cap == elections {
            gzip_cost(&exposition.render(false).unwrap());
        }
        println!(
            "render {elections} elections, cap {cap}, {}: {} series, {:.1} MiB, median {:.1?} ({:.3} us/series), min {:.1?}, max {:.1?}",
            if openmetrics {
                "openmetrics"
            } else {
                "text 0.0.4"
            },
            size.1,
            size.0 as f64 / (1 << 20) as f64,
            median,
            median.as_secs_f64() * 1e6 / size.1 as f64,
            times[0],
            times[times.len() - 1]
        );
    }
}

/// Every one of `elections` exported: the render `/metrics` makes (past
/// `ZIP_PAST`, compressed as it is written) against the same text written
/// whole, alternately; with each, how long a writer (the watch applying
/// an event) that came 20 ms into the render waited for its read locks.
fn zipped(elections: usize) {
    let cluster = SharedCluster::new(bots(elections, elections));
    let exposition = std::sync::Arc::new(metrics::Exposition::new(vec![cluster.clone()]));
    // Sizes the next bodies from this one, as in a running agent.
    let plain_len = exposition.render(false).unwrap().len();
    let mut results: [Vec<(Duration, Duration)>; 2] = Default::default();
    let mut zipped_len = 0;
    for round in 0..10 {
        let compressed = round % 2 == 1;
        let start = Instant::now();
        let writer = {
            let cluster = cluster.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                cluster.request_observed("bench", Duration::ZERO);
                start.elapsed()
            })
        };
        if compressed {
            match exposition.render_timed(false).unwrap() {
                metrics::Encoded::Gzip { zipped, .. } => zipped_len = zipped.len(),
                metrics::Encoded::Plain(_) => panic!("not compressed past ZIP_PAST"),
            }
        } else {
            exposition.render(false).unwrap();
        }
        let took = start.elapsed();
        let writer_in = writer.join().unwrap();
        results[usize::from(compressed)].push((took, writer_in));
    }
    for (compressed, runs) in results.iter_mut().enumerate() {
        runs.sort();
        let (took, _) = runs[runs.len() / 2];
        let mut waits: Vec<Duration> = runs.iter().map(|r| r.1).collect();
        waits.sort();
        println!(
            "zipped: {elections} elections exported, {:.0} MiB of text{}: render median {took:.0?} (min {:.0?}, max {:.0?}); a writer 20 ms in got its lock at median {:.0?}",
            plain_len as f64 / (1 << 20) as f64,
            if compressed == 1 {
                format!(
                    ", compressed as written to {:.1} MiB",
                    zipped_len as f64 / (1 << 20) as f64
                )
            } else {
                ", written whole".to_owned()
            },
            runs[0].0,
            runs[runs.len() - 1].0,
            waits[waits.len() / 2],
        );
    }
}

/// The status page's body (`ClusterStatus::of`, as `/status` and
/// `/api/v1/status` build it under the read lock) for `elections` x 3
/// candidates at `max_elections = cap`, with a full ring of switches
/// (`timeline_size`, 10,000) in the last hour: a mass failover, when the
/// page is opened.
fn status(elections: usize, cap: usize) {
    use zk_election_exporter::api::status::ClusterStatus;
    use zk_election_exporter::model::cluster::TreeChange;
    let mut state = bots(elections, cap);
    let id = state.trees()[0].id();
    let wall = std::time::SystemTime::now();
    // Each switch deletes an election's master and adds a candidate after
    // the other two, as an instance restarting would.
    let mut next = std::collections::HashMap::new();
    for k in 0..10_000 {
        let i = k * 7 % elections;
        let parent = format!("/wechat/bots/bot_{i:06}");
        let n = next.entry(i).or_insert(3);
        let at = Now {
            mono: Instant::now(),
            wall: wall - Duration::from_millis(300 * (10_000 - k as u64)),
        };
        let name = |n: usize| format!("instance_{n:010}");
        let change = TreeChange::ChildDeleted {
            parent: parent.clone(),
            name: name(*n - 3),
        };
        state.apply(id, change, at);
        let child = ChildNode {
            name: name(*n),
            data: format!("device-{i}-{n}").into_bytes(),
            ephemeral_owner: 1,
            ctime_ms: 1_700_000_000_000,
        };
        state.apply(id, TreeChange::ChildUpserted { parent, child }, at);
        *n += 1;
    }
    assert!(
        state.timeline().last_seq() >= 10_000,
        "every deletion is a switch"
    );
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..11 {
        let start = Instant::now();
        let body = ClusterStatus::of(&state, Instant::now(), wall);
        times.push(start.elapsed());
        rows = body.elections.len();
    }
    times.sort();
    println!(
        "status body at {elections} elections, cap {cap}, 10,000 switches in the last hour: {rows} rows, median {:.1?}, min {:.1?}, max {:.1?}",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
}

/// Cost of one four-letter-word collection inside the exporter: parse and
/// type three real mntr/srvr/ruok/isro/conf replies, then render.
fn ensemble_cost() {
    use zk_election_exporter::fourlw::{self, Command};
    use zk_election_exporter::model::ensemble::{Exchange, ServerPoll};
    let fixture = |role: &str, c: Command| {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/3.8.0/{role}/{}.txt",
            env!("CARGO_MANIFEST_DIR"),
            c.name()
        ))
        .unwrap()
    };
    let replies: Vec<(String, Vec<(Command, String)>)> = ["leader", "follower", "standalone"]
        .iter()
        .map(|role| {
            let r = Command::DEFAULT
                .iter()
                .map(|c| (*c, fixture(role, *c)))
                .collect();
            (format!("{role}:2181"), r)
        })
        .collect();
    let cluster = SharedCluster::new(ClusterState::new("bench".into(), vec![], true));
    let exposition = metrics::Exposition::new(vec![cluster.clone()]);
    let (mut apply, mut render) = (Vec::new(), Vec::new());
    for _ in 0..101 {
        let start = Instant::now();
        let polls = replies
            .iter()
            .map(|(server, r)| ServerPoll {
                server: server.clone(),
                exchanges: r
                    .iter()
                    .map(|(c, raw)| Exchange {
                        command: *c,
                        duration: Duration::from_millis(1),
                        result: fourlw::interpret(*c, raw),
                    })
                    .collect(),
            })
            .collect();
        cluster.ensemble_feed().collected(polls);
        apply.push(start.elapsed());
        let start = Instant::now();
        let out = exposition.render(false).unwrap();
        render.push(start.elapsed());
        assert!(out.len() > 1000);
    }
    // The same body again, no collection between: the mntr section is
    // the cached text.
    let mut cached: Vec<Duration> = (0..101)
        .map(|_| {
            let start = Instant::now();
            let out = exposition.render(false).unwrap();
            let took = start.elapsed();
            assert!(out.len() > 1000);
            took
        })
        .collect();
    apply.sort();
    render.sort();
    cached.sort();
    println!(
        "ensemble of 3 (real 3.8 replies, 5 commands): parse median {:.2?}, type and render median {:.2?}, render without a new collection median {:.2?}",
        apply[50], render[50], cached[50]
    );
    // What a Prometheus scrape adds: it always asks for gzip.
    gzip_cost(&exposition.render(false).unwrap());
}

/// Compressing one body at gzip levels 1 and 6: time and size.
fn gzip_cost(body: &str) {
    use std::io::Write;
    for level in [1, 6] {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..5 {
            let start = Instant::now();
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
            e.write_all(body.as_bytes()).unwrap();
            size = e.finish().unwrap().len();
            times.push(start.elapsed());
        }
        times.sort();
        println!(
            "gzip level {level} of {:.1} MiB: median {:.1?}, {:.2} MiB ({:.1}x smaller)",
            body.len() as f64 / (1 << 20) as f64,
            times[2],
            size as f64 / (1 << 20) as f64,
            body.len() as f64 / size as f64
        );
    }
}
