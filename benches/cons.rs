//! `cons` parsing for 10,000 connections: time and peak heap, for the whole
//! reply at once and line by line as the diagnostics stream it.
//! Run: cargo bench --bench cons

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use zk_election_exporter::fourlw::parse::{parse_cons, parse_cons_line};

/// Counts live and peak heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
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

/// Peak heap growth while `f` runs.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - base)
}

fn main() {
    // Lines shaped like a 3.8 server's, 10,000 sessions.
    let reply: String = (0..10_000u64)
        .map(|i| {
            format!(
                " /10.1.{}.{}:{}[1](queued=0,recved={},sent={},sid=0x{:x},lop=PING,est=1796031007537,to=30000,lcxid=0x3,lzxid=0x63,lresp=3948256,llat=0,minlat=0,avglat=0,maxlat=11)\n",
                i / 250,
                i % 250,
                40_000 + i,
                i * 7,
                i * 7,
                0x1000_03c2_c100_0000u64 + i
            )
        })
        .collect();
    let mut whole = Vec::new();
    let mut streamed = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        let (parsed, peak) = peak_during(|| parse_cons(&reply));
        whole.push((t.elapsed(), peak, parsed.len()));
        let t = Instant::now();
        let (parsed, peak) = peak_during(|| {
            reply
                .lines()
                .filter_map(parse_cons_line)
                .collect::<Vec<_>>()
        });
        streamed.push((t.elapsed(), peak, parsed.len()));
    }
    whole.sort();
    streamed.sort();
    println!(
        "cons, 10,000 connections ({:.1} MiB reply): parse whole median {:.2?}, heap growth {:.2} MiB (plus the reply itself when read whole)",
        reply.len() as f64 / (1 << 20) as f64,
        whole[5].0,
        whole[5].1 as f64 / (1 << 20) as f64
    );
    println!(
        "cons, line by line as streamed: median {:.2?}, heap growth {:.2} MiB ({} connections)",
        streamed[5].0,
        streamed[5].1 as f64 / (1 << 20) as f64,
        streamed[5].2
    );
}
