//! AdminServer fallback: ZooKeeper 3.5+ disables most four-letter words by
//! default but serves the same data as JSON at
//! `http://host:8080/commands/<command>`. When `admin_url` is configured and
//! a word is refused by the whitelist, the poller asks here instead.
//!
//! The HTTP exchange is a minimal GET over plain TCP under the same deadline
//! as the four-letter word; AdminServer answers small JSON documents.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::zktls::ZkTls;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, header};
use serde_json::Value;

use crate::fourlw::parse::{Conf, Mntr, Role, Srvr};
use crate::fourlw::{Command, Failure, Reply};
use crate::web_client;

const MAX_BODY_BYTES: usize = 8 << 20;

/// The commands AdminServer can stand in for.
pub fn supports(command: Command) -> bool {
    matches!(
        command,
        Command::Mntr | Command::Srvr | Command::Ruok | Command::Isro | Command::Conf
    )
}

/// `{host}` of `server` substituted into the template, without a trailing `/`.
pub fn base_url(template: &str, server: &str) -> String {
    let host = match server.rsplit_once(':') {
        Some((h, _)) => h,
        None => server,
    };
    template
        .replace("{host}", host)
        .trim_end_matches('/')
        .to_owned()
}

/// Splits `http://host:port/path` into (`host:port`, `/path`), and says
/// whether it is `https://`.
fn split_url(url: &str) -> Option<(String, String, bool)> {
    let (rest, https) = match url.strip_prefix("https://") {
        Some(rest) => (rest, true),
        None => (url.strip_prefix("http://")?, false),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if https { 443 } else { 80 })
    };
    Some((authority, path.to_owned(), https))
}

/// GETs `url` and returns the body of a 200 answer; `https://` with the
/// cluster's TLS certificates.
async fn get(url: &str, tls: Option<&ZkTls>) -> Result<Vec<u8>, Failure> {
    let (authority, path, https) = split_url(url).ok_or(Failure::Connect)?;
    let tls = if https {
        Some(tls.ok_or(Failure::Tls)?)
    } else {
        None
    };
    let stream = super::client::open(&authority, tls).await?;
    let request = Request::get(path)
        .header(header::HOST, &authority)
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|_| Failure::Connect)?;
    let (status, body) = web_client::exchange(stream, request, MAX_BODY_BYTES)
        .await
        .map_err(|e| match e {
            web_client::Failure::Io(_) => Failure::Connect,
            web_client::Failure::Protocol(_) | web_client::Failure::TooLarge => Failure::Parse,
        })?;
    match status.as_u16() {
        200 => Ok(body.to_vec()),
        // The command is not served (an older server, or not enabled).
        404 => Err(Failure::NotAllowed),
        _ => Err(Failure::Parse),
    }
}

/// Fetches `command` for `server` from the AdminServer at `template`.
pub async fn fetch(
    template: &str,
    server: &str,
    command: Command,
    timeout: Duration,
    tls: Option<&ZkTls>,
) -> Result<Reply, Failure> {
    let url = format!("{}/{}", base_url(template, server), command.name());
    let body = tokio::time::timeout(timeout, get(&url, tls))
        .await
        .unwrap_or(Err(Failure::Timeout))?;
    let json: Value = serde_json::from_slice(&body).map_err(|_| Failure::Parse)?;
    interpret_json(command, &json)
}

/// Maps AdminServer JSON onto the replies the four-letter words give.
pub fn interpret_json(command: Command, json: &Value) -> Result<Reply, Failure> {
    let object = json.as_object().ok_or(Failure::Parse)?;
    if object.get("error").is_some_and(|e| !e.is_null()) {
        return Err(Failure::NotServing);
    }
    let number = |v: Option<&Value>| v.and_then(Value::as_f64);
    match command {
        Command::Mntr => {
            let mut mntr = Mntr::default();
            for (key, value) in object {
                if key == "command" || key == "error" {
                    continue;
                }
                let key = format!("zk_{key}");
                match value {
                    Value::Number(n) => match n.as_f64() {
                        Some(f) if f.is_finite() && !key.contains('\n') => mntr.push(&key, f),
                        _ => mntr.skipped += 1,
                    },
                    Value::String(s) => {
                        mntr.strings.insert(key, s.clone());
                    }
                    _ => mntr.skipped += 1,
                }
            }
            Ok(Reply::Mntr(mntr))
        }
        Command::Srvr => {
            let stats = object
                .get("server_stats")
                .and_then(Value::as_object)
                .ok_or(Failure::Parse)?;
            let count = |v: Option<&Value>| v.and_then(Value::as_u64);
            Ok(Reply::Srvr(Srvr {
                version: object
                    .get("version")
                    .and_then(Value::as_str)
                    .map(|v| v.split(", built on").next().unwrap_or(v).trim().to_owned()),
                role: stats
                    .get("server_state")
                    .and_then(Value::as_str)
                    .and_then(Role::parse),
                zxid: count(stats.get("last_processed_zxid")),
                node_count: count(object.get("node_count")),
                connections: count(stats.get("num_alive_client_connections")),
                outstanding: count(stats.get("outstanding_requests")),
                received: count(stats.get("packets_received")),
                sent: count(stats.get("packets_sent")),
                latency: match (
                    number(stats.get("min_latency")),
                    number(stats.get("avg_latency")),
                    number(stats.get("max_latency")),
                ) {
                    (Some(a), Some(b), Some(c)) => Some((a, b, c)),
                    _ => None,
                },
            }))
        }
        Command::Ruok => Ok(Reply::Ruok(true)),
        Command::Isro => Ok(Reply::Isro(
            object.get("read_only").and_then(Value::as_bool),
        )),
        Command::Conf => {
            let mut values = BTreeMap::new();
            for (json_key, conf_key) in [
                ("tick_time", "tickTime"),
                ("min_session_timeout", "minSessionTimeout"),
                ("max_session_timeout", "maxSessionTimeout"),
                ("server_id", "serverId"),
                ("client_port", "clientPort"),
            ] {
                if let Some(v) = object.get(json_key) {
                    values.insert(
                        conf_key.to_owned(),
                        v.to_string().trim_matches('"').to_owned(),
                    );
                }
            }
            if values.is_empty() {
                return Err(Failure::Parse);
            }
            Ok(Reply::Conf(Conf {
                values,
                members: Vec::new(),
            }))
        }
        _ => Err(Failure::NotAllowed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!(
            "{}/tests/fixtures/3.8.0/admin/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn admin_json_maps_onto_the_word_replies() {
        let Ok(Reply::Mntr(m)) = interpret_json(Command::Mntr, &fixture("mntr")) else {
            panic!()
        };
        assert_eq!(m.role(), Some(Role::Standalone));
        assert!(m.numbers().any(|(k, _)| k == "zk_znode_count"));
        assert!(m.numbers().any(|(k, _)| k == "zk_p99_readlatency"));
        let Ok(Reply::Srvr(s)) = interpret_json(Command::Srvr, &fixture("srvr")) else {
            panic!()
        };
        assert_eq!(s.role, Some(Role::Standalone));
        assert_eq!(s.node_count, Some(5));
        assert_eq!(s.zxid, Some(0));
        assert_eq!(
            interpret_json(Command::Ruok, &fixture("ruok")),
            Ok(Reply::Ruok(true))
        );
        assert_eq!(
            interpret_json(Command::Isro, &fixture("isro")),
            Ok(Reply::Isro(Some(false)))
        );
        let Ok(Reply::Conf(c)) = interpret_json(Command::Conf, &fixture("conf")) else {
            panic!()
        };
        assert_eq!(c.tick_time_ms(), Some(200.0));
        assert_eq!(c.server_id(), Some("0"));
        assert_eq!(
            interpret_json(Command::Cons, &fixture("ruok")),
            Err(Failure::NotAllowed)
        );
        assert_eq!(
            interpret_json(Command::Mntr, &Value::Null),
            Err(Failure::Parse)
        );
    }

    #[test]
    fn urls() {
        assert_eq!(
            base_url("http://{host}:8080/commands/", "zk1:2181"),
            "http://zk1:8080/commands"
        );
        assert_eq!(
            split_url("https://zk1/commands/mntr"),
            Some(("zk1:443".into(), "/commands/mntr".into(), true))
        );
        assert_eq!(
            split_url("http://zk1:8080/commands/mntr"),
            Some(("zk1:8080".into(), "/commands/mntr".into(), false))
        );
        assert_eq!(
            split_url("http://zk1/x"),
            Some(("zk1:80".into(), "/x".into(), false))
        );
        assert_eq!(split_url("ftp://zk1/x"), None);
    }
}
