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
