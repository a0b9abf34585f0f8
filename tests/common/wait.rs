//! Waits with deadlines: poll a condition until it holds, or fail with
//! what was waited for and the last thing seen. Never a bare sleep.

use std::time::{Duration, Instant};

use zookeeper_client::Client;

/// How often a wait polls its condition.
const POLL: Duration = Duration::from_millis(50);

/// The deadline of one wait, and how it fails: with what was waited for
/// and the last thing seen.
struct Deadline<'a> {
    what: &'a str,
    timeout: Duration,
    at: Instant,
}

impl<'a> Deadline<'a> {
    fn new(what: &'a str, timeout: Duration) -> Self {
        Self {
            what,
            timeout,
            at: Instant::now() + timeout,
        }
    }

    /// Panics with `last` once the deadline has passed.
    fn check(&self, last: String) {
        if Instant::now() >= self.at {
            panic!(
                "timed out after {:?} waiting for {}; last seen: {last}",
                self.timeout, self.what
            );
        }
    }
}

/// Polls `check` until it returns `Ok`, or panics after `timeout` with the
/// last error it returned.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Deadline::new(what, timeout);
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) => deadline.check(last),
        }
        std::thread::sleep(POLL);
    }
}

/// [`wait_for`] inside tokio: the checks do blocking HTTP on loopback, so
/// they run off the reactor, and the pause between them is async.
pub async fn wait_for_async<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Deadline::new(what, timeout);
    loop {
        match tokio::task::block_in_place(&mut check) {
            Ok(v) => return v,
            Err(last) => deadline.check(last),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`wait_for_async`] for checks that await (ZooKeeper calls): polls
/// `check` until it returns `Ok`, or panics after `timeout` with the last
/// error.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Deadline::new(what, timeout);
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) => deadline.check(last),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until `path` no longer exists (a closed session's ephemeral node
/// is deleted by the server a moment later).
pub async fn until_gone(c: &Client, path: &str, timeout: Duration) {
    eventually(&format!("{path} to vanish"), timeout, || async {
        match c.check_stat(path).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err("still there".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
}
