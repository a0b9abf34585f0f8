//! A webhook receiver that records every notification Alertmanager sends,
//! and Debian's Alertmanager routed to it: what an on-call engineer's pager
//! would have received, in order.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::program::Program;

/// Every notification body, in arrival order.
#[derive(Clone)]
pub struct Receiver {
    pub port: u16,
    got: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_ok()
                    && let Ok(v) = serde_json::from_slice(&body)
                {
                    sink.lock().unwrap().push(v);
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Self { port, got }
    }

    /// Every notification so far.
    pub fn all(&self) -> Vec<Value> {
        self.got.lock().unwrap().clone()
    }

    /// Notifications about `alertname` whose labels include `labels`, as
    /// their statuses in order (`firing`, `resolved`).
    pub fn statuses(&self, alertname: &str, labels: &[(&str, &str)]) -> Vec<String> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|n| n["commonLabels"]["alertname"] == alertname)
            .filter(|n| labels.iter().all(|(k, v)| n["commonLabels"][*k] == *v))
            .map(|n| n["status"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// How many notifications about `alertname` had `status`.
    pub fn count(&self, alertname: &str, status: &str) -> usize {
        self.statuses(alertname, &[])
            .iter()
            .filter(|s| *s == status)
            .count()
    }
}

/// The Alertmanager configuration that notifies `hook` of every alert
/// group (one per alertname, cluster, ensemble and election) at once and every
/// second after, resolutions too; `extra` is appended (inhibit rules).
pub fn hooked_config(hook: u16, extra: &str) -> String {
    format!(
        "route:\n  receiver: hook\n  group_by: [alertname, cluster, ensemble, election]\n  group_wait: 0s\n  group_interval: 1s\n  repeat_interval: 1h\n\
         receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:{hook}/\n        send_resolved: true\n{extra}"
    )
}

/// Debian's Alertmanager notifying `hook` (see [`hooked_config`]).
pub fn hooked_alertmanager(tag: &str, hook: &Receiver) -> Program {
    let config = hooked_config(hook.port, "");
    Program::start(tag, |dir, port| {
        std::fs::write(dir.join("am.yml"), config).unwrap();
        format!(
            "prometheus-alertmanager --config.file={d}/am.yml --storage.path={d}/data --web.listen-address=127.0.0.1:{port} --cluster.listen-address=",
            d = dir.display()
        )
    })
}
