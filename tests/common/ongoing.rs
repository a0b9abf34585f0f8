//! A trouble a test keeps up (mastership moving, a stale writer) until it
//! stops it.

use std::time::Duration;

/// A trouble kept up by a task until stopped.
pub struct Ongoing {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Ongoing {
    /// Runs `step` every `every` until [`Ongoing::stop`].
    pub fn start<F, Fut>(every: Duration, mut step: F) -> Self
    where
        F: FnMut(u64) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let mut round = 0;
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                round += 1;
                step(round).await;
                tokio::time::sleep(every).await;
            }
        });
        Self { stop, task }
    }

    /// Stops it and waits for the step under way to finish.
    pub async fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.task.await.expect("the trouble's task");
    }
}
