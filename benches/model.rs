//! Heap bytes per election held by the model: 100,000 elections x 3
//! candidates laid out as one election per bot account (`/wechat/bots/bot_N`, Curator
//! latch names, device identities in the data), filled through the same
//! listing call the watcher makes. Then the same elections with a lease
//! table of one row each: the bytes a reading holds, and the time to
//! judge every election against it (under the cluster's write lock).
//! Run: cargo bench --bench model

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use zk_election_exporter::model::Now;
use zk_election_exporter::model::candidate::IdentityMode;
use zk_election_exporter::model::tree::{ChildNode, Tree, TreePattern};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn listing(from: usize, to: usize) -> Vec<(String, Vec<ChildNode>)> {
    (from..to)
        .map(|i| {
            let children = (0..3)
                .map(|k| ChildNode {
                    name: format!(
                        "_c_{:08x}-{:04x}-4a1b-9c2d-{:012x}-latch-{:010}",
                        i * 3 + k,
                        k,
                        i,
                        k
                    ),
                    data: format!("device-{}-{k}", i % 50_000).into_bytes(),
                    ephemeral_owner: 0x1000_0000_0000 + (i * 3 + k) as i64,
                    ctime_ms: 1_700_000_000_000 + i as i64,
                })
                .collect();
            (format!("/wechat/bots/bot_{i}"), children)
        })
        .collect()
}

fn main() {
    const N: usize = 100_000;
    let pattern = TreePattern::parse("/wechat/bots/*").unwrap();
    let base = LIVE.load(Ordering::Relaxed);
    let mut tree = Tree::elections(pattern, IdentityMode::Data);
    let started = Instant::now();
    // In slices, as the watcher's batches arrive, so the listing's own
    // buffers are not counted as held.
    let chunk = 10_000;
    let mut loaded = Vec::new();
    for from in (0..N).step_by(chunk) {
        let l = listing(from, from + chunk);
        loaded.extend(l);
    }
    let before_apply = LIVE.load(Ordering::Relaxed);
    tree.apply_listing(loaded, Now::current());
    let took = started.elapsed();
    let held = LIVE.load(Ordering::Relaxed) - base;
    println!(
        "{N} elections x 3 candidates: {} bytes per election held by the model ({:.1} MiB), listing applied in {took:.2?} (listing buffers were {:.1} MiB)",
        held / N,
        held as f64 / (1 << 20) as f64,
        (before_apply - base) as f64 / (1 << 20) as f64,
    );
    assert_eq!(tree.parent_count(), N);
    lease(N);
}

/// The lease table's side: one reading of `n` rows judged against `n`
/// elections.
fn lease(n: usize) {
    use std::time::Duration;
    use zk_election_exporter::model::election_tree::ElectionSpec;
    use zk_election_exporter::model::lease::{
        KeyPaths, LeaseKey, LeaseReading, LeaseSpec, Verdict,
    };
    let mut spec = ElectionSpec::from(IdentityMode::Data);
    let pattern = TreePattern::parse("/wechat/bots/*").unwrap();
    spec.lease = Some(LeaseSpec {
        paths: KeyPaths::of(&LeaseKey::Name, pattern.segments(), None),
        key: LeaseKey::Name,
        split_brain_for: Duration::from_secs(60),
        expired_for: Duration::from_secs(120),
    });
    let mut tree = Tree::elections(pattern, spec);
    tree.apply_listing(listing(0, n), Now::current());
    let base = LIVE.load(Ordering::Relaxed);
    let now = Now::current();
    let started = Instant::now();
    let read = || {
        let mut reading = LeaseReading::at(now);
        for i in 0..n {
            // The master (lowest sequence) of each election is its first candidate.
            reading.add(
                Some((format!("bot_{i}"), false)),
                Some(format!("device-{}-0", i % 50_000)),
                Some(5.0),
                Some(0.5),
            );
        }
        reading
    };
    let reading = read();
    let built = started.elapsed();
    let held = LIVE.load(Ordering::Relaxed) - base;
    let elections = tree.as_elections_mut().unwrap();
    let started = Instant::now();
    elections.lease_succeeded(reading, now, true);
    let first = started.elapsed();
    // The steady state: the next reading, every verdict known.
    let reading = read();
    let started = Instant::now();
    elections.lease_succeeded(reading, now, true);
    let judged = started.elapsed();
    let with_verdicts = LIVE.load(Ordering::Relaxed) - base;
    let agree = elections
        .elections()
        .filter(|(p, e)| elections.lease_verdict(p, e) == Some(Verdict::Agrees))
        .count();
    println!(
        "lease: a reading of {n} rows holds {} bytes per row ({:.1} MiB, built in {built:.2?}); judging {n} elections against it took {judged:.2?} ({first:.2?} the first time), with their verdicts {:.1} MiB in all",
        held / n,
        held as f64 / (1 << 20) as f64,
        with_verdicts as f64 / (1 << 20) as f64,
    );
    assert_eq!(agree, n);
    // Between readings of every row: a reading of the rows written lately
    // (10,000: heartbeats of 2,000 rows a second over one 5 s interval).
    let changed = (n / 100).max(1);
    let later = Now {
        mono: now.mono + Duration::from_secs(5),
        wall: now.wall + Duration::from_secs(5),
    };
    let mut reading = LeaseReading::changed_at(later);
    for i in (0..n).step_by((n / changed).max(1)) {
        reading.add(
            Some((format!("bot_{i}"), false)),
            Some(format!("device-{}-0", i % 50_000)),
            Some(5.0),
            Some(0.5),
        );
    }
    let rows = reading.rows.len();
    let started = Instant::now();
    elections.lease_succeeded(reading, later, true);
    println!(
        "lease: a reading of the {rows} rows written lately, laid over the {n} and judged: {:.2?}",
        started.elapsed()
    );
}
