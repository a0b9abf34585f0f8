//! The process's memory, where the C allocator needs telling. glibc gives
//! every thread that allocates its own arena (up to 8 per core) and keeps
//! freed memory for reuse: a full listing of a large tree, or a render on
//! one of tokio's blocking threads, leaves tens of MiB resident that nothing
//! reuses. Two arenas serve this process's handful of busy threads, and
//! memory freed after a large listing is given back to the system.

/// Caps the allocator's arenas; call once at start, before threads exist.
pub fn cap_allocator_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before
    // the runtime's threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        // A fixed threshold: buffers of a MiB and more (a scrape's body,
        // a survey of every election) are mapped apart and unmapped when
        // freed, instead of the heap keeping them after glibc raises the
        // threshold on its own.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Returns freed heap memory to the system (after a full listing, whose
/// buffers are gone once it is applied).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of the allocator's own
    // heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Asks for huge pages under a large buffer about to be written (a scrape's
/// body): a 100 MiB body is otherwise 25,000 page faults on every render,
/// the part of its cost that grew with size. Call before writing to it.
pub fn prefer_huge_pages(buffer: &mut String) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let (start, capacity) = (buffer.as_mut_ptr() as usize, buffer.capacity());
        if capacity < 2 * HUGE {
            return;
        }
        // madvise wants whole pages: the aligned middle of the buffer.
        let page = 4096;
        let from = start.div_ceil(page) * page;
        let to = (start + capacity) / page * page;
        if to > from {
            // SAFETY: the range lies inside the buffer's own allocation, and
            // MADV_HUGEPAGE only changes how its pages are backed.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Raises the soft limit of open files to the hard limit, as Prometheus's
/// own exporters do: every scrape, four-letter word and ZooKeeper session
/// is a descriptor, and a soft limit of 1,024 (or 128 in some containers)
/// is reached long before the hard one. Returns (old, new) when it changed.
pub fn raise_open_files_limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit read and write the struct passed.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0
                || limit.rlim_cur >= limit.rlim_max
            {
                return None;
            }
            let old = limit.rlim_cur;
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return None;
            }
            #[allow(clippy::unnecessary_cast)]
            Some((old as u64, limit.rlim_cur as u64))
        }
    }
    #[cfg(not(unix))]
    None
}

/// The soft limit of open files now (`None` when unlimited or unknown).
pub fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct passed.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0
            || limit.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        #[allow(clippy::unnecessary_cast)]
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    None
}

/// What the kernel says of this process, for the standard `process_*`
/// families (see `metrics/process.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessStats {
    /// User and system CPU time.
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub threads: u64,
    /// Since the Unix epoch.
    pub start_time_seconds: f64,
    pub open_fds: u64,
    /// The soft open-files limit; `None` when unlimited.
    pub max_fds: Option<u64>,
}

/// The process's figures from /proc, or `None` where there is no /proc (or
/// it says something unexpected: then the families are left out, never
/// made up).
pub fn process_stats() -> Option<ProcessStats> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        // SAFETY: sysconf only reads a system constant.
        let (tick, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        let mut stats = parse_stat(
            &stat,
            &boot,
            u64::try_from(tick).ok()?,
            u64::try_from(page).ok()?,
        )?;
        stats.open_fds = open_fds;
        stats.max_fds = open_files_limit();
        Some(stats)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// `/proc/self/stat` and `/proc/stat`'s boot time, with the clock tick
/// and page size; the descriptors are left at zero.
fn parse_stat(stat: &str, proc_stat: &str, tick: u64, page: u64) -> Option<ProcessStats> {
    if tick == 0 {
        return None;
    }
    // The command name, in parentheses, may hold spaces and parentheses:
    // the fields start after the last `)`. They are numbered from 1 with
    // the pid; after the name comes field 3, the state.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    let btime: u64 = proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let tick = tick as f64;
    Some(ProcessStats {
        cpu_seconds: (field(14)? + field(15)?) as f64 / tick,
        threads: field(20)?,
        start_time_seconds: btime as f64 + field(22)? as f64 / tick,
        virtual_bytes: field(23)?,
        resident_bytes: field(24)?.checked_mul(page)?,
        open_fds: 0,
        max_fds: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_read_after_the_last_parenthesis() {
        // A command name with a space and a parenthesis, as a kernel shows it.
        let stat = "4242 (zk (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 7 0 \
                    12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0";
        let proc_stat = "cpu  1 2 3\nbtime 1796000000\nprocesses 9\n";
        let s = parse_stat(stat, proc_stat, 100, 4096).unwrap();
        assert_eq!(s.cpu_seconds, 3.0);
        assert_eq!(s.threads, 7);
        assert_eq!(s.start_time_seconds, 1_796_000_000.0 + 123.45);
        assert_eq!(s.virtual_bytes, 104_857_600);
        assert_eq!(s.resident_bytes, 2560 * 4096);
    }

    #[test]
    fn what_is_not_a_stat_line_gives_nothing() {
        for stat in ["", "4242 (zk", "4242 (zk) S 1 2", "4242 (zk) S x y z"] {
            assert_eq!(parse_stat(stat, "btime 1\n", 100, 4096), None, "{stat}");
        }
        let stat = "1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 1 1";
        assert!(parse_stat(stat, "btime 1\n", 100, 4096).is_some());
        assert_eq!(parse_stat(stat, "no boot time\n", 100, 4096), None);
        assert_eq!(parse_stat(stat, "btime 1\n", 0, 4096), None);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let s = process_stats().expect("Linux has /proc");
        assert!(
            s.threads >= 1 && s.resident_bytes > 0 && s.open_fds >= 3,
            "{s:?}"
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(s.start_time_seconds <= now + 1.0 && s.start_time_seconds > now - 86_400.0 * 365.0);
    }
}
