//! Heap bytes per election held by the model: 100,000 elections x 3
//! candidates laid out as the seeds' bots (`/wechat/bots/bot_N`, Curator
//! latch names, device identities in the data), filled through the same
//! listing call the watcher makes.
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
}
