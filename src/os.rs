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
