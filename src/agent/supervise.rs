//! Every background task of the agent runs under a supervisor: a task that
//! panics, or returns while the agent is still running, is reported here
//! instead of vanishing. The agent then fails `/ready`, stops and exits
//! non-zero, so that systemd, Kubernetes or whatever supervises the process
//! starts it again with a fresh session and a fresh listing of every tree.
//!
//! Why not restart the task in place: a task that died took its state with
//! it half-way (a session between a listing and its watches, a pusher
//! between a firing and its resolution), and the models it fed would go on
//! showing their last values as current while nobody writes to them. A new
//! process rebuilds everything from what ZooKeeper and the lease source say
//! now; Prometheus sees the restart (`up`, `process_start_time_seconds`) and
//! the log says which task died and where.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// A background task that ended on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFailure {
    /// Which task (`cluster prod: ZooKeeper session`, `alert pusher`, ...).
    pub task: String,
    /// How it ended: `panicked: <message>` or that it returned.
    pub how: String,
}

impl std::fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "background task `{}` {}", self.task, self.how)
    }
}

/// Whether a task may end before it is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    /// Only when asked (its stop signal turned true): ending earlier is a
    /// failure.
    WhenStopped,
    /// Whenever it likes (it logs why); only a panic is a failure.
    WhenItLikes,
}

/// Spawns tasks and tells the agent when one died.
#[derive(Debug, Clone)]
pub struct Supervisor {
    failures: mpsc::UnboundedSender<TaskFailure>,
}

impl Supervisor {
    /// A supervisor and where its reports arrive.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<TaskFailure>) {
        let (failures, reports) = mpsc::unbounded_channel();
        (Self { failures }, reports)
    }

    /// Spawns `work` as the task `name`; `stop` is the signal it is asked
    /// to stop by. Its handle behaves as a plain spawn's: a panic still
    /// reaches whoever awaits it.
    pub fn spawn<T: Send + 'static>(
        &self,
        name: impl Into<String>,
        ends: Ends,
        stop: watch::Receiver<bool>,
        work: impl Future<Output = T> + Send + 'static,
    ) -> JoinHandle<T> {
        let (name, failures) = (name.into(), self.failures.clone());
        tokio::spawn(async move {
            #[cfg(test)]
            let work = async {
                faults::strike(&name);
                work.await
            };
            match AssertUnwindSafe(work).catch_unwind().await {
                Ok(done) => {
                    if ends == Ends::WhenStopped && !*stop.borrow() {
                        let _ = failures.send(TaskFailure {
                            task: name,
                            how: "returned while the agent was still running".into(),
                        });
                    }
                    done
                }
                Err(payload) => {
                    let _ = failures.send(TaskFailure {
                        task: name,
                        how: format!("panicked: {}", crate::panics::message(&*payload)),
                    });
                    std::panic::resume_unwind(payload)
                }
            }
        })
    }
}

/// Faults injected into named tasks, in test builds only.
#[cfg(test)]
pub(crate) mod faults {
    use std::sync::Mutex;

    static ARMED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    /// The next start of the task `name` panics at once.
    pub fn arm(name: &str) {
        ARMED.lock().unwrap().push(name.to_owned());
    }

    pub(super) fn strike(name: &str) {
        let armed = {
            let mut armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
            let at = armed.iter().position(|n| n == name);
            at.map(|i| armed.remove(i))
        };
        if armed.is_some() {
            panic!("a fault injected into `{name}`");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const T: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn a_panic_and_an_early_return_are_reported_a_stop_is_not() {
        let (supervisor, mut reports) = Supervisor::new();
        let (stop, stopped) = watch::channel(false);
        let panicking = supervisor.spawn("broken", Ends::WhenStopped, stopped.clone(), async {
            if std::hint::black_box(true) {
                panic!("out of range");
            }
        });
        assert!(
            panicking.await.unwrap_err().is_panic(),
            "the handle sees the panic"
        );
        let report = tokio::time::timeout(T, reports.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(report.task, "broken");
        assert_eq!(report.how, "panicked: out of range");

        supervisor
            .spawn("quitter", Ends::WhenStopped, stopped.clone(), async {})
            .await
            .unwrap();
        let report = tokio::time::timeout(T, reports.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(report.task, "quitter");
        assert!(report.how.starts_with("returned"), "{}", report.how);

        // May end by itself: no report.
        supervisor
            .spawn("free", Ends::WhenItLikes, stopped.clone(), async {})
            .await
            .unwrap();
        // Asked to stop: no report, and the value comes back.
        let mut asked = stopped.clone();
        let waiting = supervisor.spawn("worker", Ends::WhenStopped, stopped, async move {
            let _ = asked.wait_for(|s| *s).await;
            7
        });
        stop.send(true).unwrap();
        assert_eq!(waiting.await.unwrap(), 7);
        drop(supervisor);
        assert_eq!(reports.recv().await, None, "nothing else was reported");
    }
}
