//! Pure parsers for four-letter-word replies. Every parser takes any text
//! and never panics; what it cannot read it skips and counts, or rejects
//! with a [`ParseError`] naming what was missing.

use std::collections::BTreeMap;
use std::fmt;

mod sessions;
pub use sessions::*;

/// Why a reply was not a usable answer to its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// "… is not executed because it is not in the whitelist."
    NotAllowed,
    /// "This ZooKeeper instance is not currently serving requests"
    NotServing,
}

/// A reply that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Recognises the two refusals every command can answer with.
pub fn refusal(reply: &str) -> Option<Refusal> {
    // A refusal is the whole reply, one line: only the first is searched
    // (a 30 KiB `mntr` reply was scanned twice per exchange, and a value
    // quoting these words further down is no refusal).
    let reply = reply.lines().next().unwrap_or("");
    if reply.contains("is not executed because it is not in the whitelist") {
        Some(Refusal::NotAllowed)
    } else if reply.contains("is not currently serving requests") {
        Some(Refusal::NotServing)
    } else {
        None
    }
}

/// A server's role, from `srvr`'s `Mode:` or `mntr`'s `zk_server_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Leader,
    Follower,
    Observer,
    Standalone,
    ReadOnly,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Leader,
        Role::Follower,
        Role::Observer,
        Role::Standalone,
        Role::ReadOnly,
    ];

    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "leader" => Some(Self::Leader),
            "follower" => Some(Self::Follower),
            "observer" => Some(Self::Observer),
            "standalone" => Some(Self::Standalone),
            "read-only" | "read_only" | "readonly" => Some(Self::ReadOnly),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Leader => "leader",
            Self::Follower => "follower",
            Self::Observer => "observer",
            Self::Standalone => "standalone",
            Self::ReadOnly => "read_only",
        }
    }
}

/// `mntr`: numeric values in reply order, the string values, and how many
/// lines were skipped (no tab, bad key, unreadable value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mntr {
    /// The numeric keys in reply order, one per line: one string for the
    /// whole reply (no allocation per key), and the exact text a cached
    /// typing of the same key set is recognised by.
    keys: String,
    values: Vec<f64>,
    pub strings: BTreeMap<String, String>,
    pub skipped: usize,
}

impl Mntr {
    /// Adds a numeric key (without line breaks) and its value.
    pub fn push(&mut self, key: &str, value: f64) {
        if !self.values.is_empty() {
            self.keys.push('\n');
        }
        self.keys.push_str(key);
        self.values.push(value);
    }

    /// The numeric keys, one per line, in reply order.
    pub fn keys(&self) -> &str {
        &self.keys
    }

    /// The numeric values, in the order of [`keys`](Self::keys).
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Numeric keys with their values, in reply order.
    pub fn numbers(&self) -> impl Iterator<Item = (&str, f64)> {
        self.keys
            .split('\n')
            .zip(self.values.iter().copied())
            .take(self.values.len())
    }

    pub fn version(&self) -> Option<&str> {
        self.strings
            .get("zk_version")
            .map(|v| v.split(", built on").next().unwrap_or(v).trim())
    }

    pub fn role(&self) -> Option<Role> {
        self.strings
            .get("zk_server_state")
            .and_then(|s| Role::parse(s))
    }
}

/// Whether `key` can become part of a metric name (ASCII only, so its
/// bytes are checked, not its chars).
fn is_metric_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses `mntr` (`key<TAB>value` lines). Keys that are not plain
/// identifiers (labels, dots, dashes in newer versions) are skipped and
/// counted rather than risked in the exposition.
pub fn parse_mntr(reply: &str) -> Result<Mntr, ParseError> {
    // Keys are nine tenths of a reply (a 3.8 leader's: 16 KiB in 530
    // lines); sized for it, neither is copied again while growing.
    let mut mntr = Mntr {
        keys: String::with_capacity(reply.len()),
        values: Vec::with_capacity(reply.len() / 30),
        ..Mntr::default()
    };
    // One pass over the bytes finds each line's end and first tab (a
    // line search and then a tab search per line cost more than the rest
    // of the parse on 500 short lines). Both are ASCII: every index is a
    // char boundary. A `\r` before a line feed is trimmed with the line.
    let bytes = reply.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let (mut end, mut tab) = (start, None);
        while let Some(&b) = bytes.get(end) {
            match b {
                b'\n' => break,
                b'\t' if tab.is_none() => tab = Some(end),
                _ => {}
            }
            end += 1;
        }
        let (line, line_start) = (&reply[start..end], start);
        start = end + 1;
        if line.trim().is_empty() {
            continue;
        }
        let Some(tab) = tab else {
            mntr.skipped += 1;
            continue;
        };
        let (key, value) = (reply[line_start..tab].trim(), reply[tab + 1..end].trim());
        if !is_metric_key(key) {
            mntr.skipped += 1;
            continue;
        }
        match whole_number(value).map_or_else(|| value.parse::<f64>(), Ok) {
            Ok(v) if v.is_finite() => mntr.push(key, v),
            Ok(_) => mntr.skipped += 1,
            Err(_) => {
                mntr.strings.insert(key.to_owned(), value.to_owned());
            }
        }
    }
    if mntr.values.is_empty() && mntr.strings.is_empty() {
        return Err(ParseError(
            "no `key<TAB>value` line in the mntr reply".into(),
        ));
    }
    Ok(mntr)
}

/// `text` as `f64::from_str` reads it, when it is a plain whole number of
/// at most 15 digits (an optional `-`, then digits): nearly every `mntr`
/// value, read here without the float parser. Below 10^15 the number is
/// exact in an `f64`; `-0` stays negative zero, as the parser makes it.
fn whole_number(text: &str) -> Option<f64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        bytes => (false, bytes),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut n: u64 = 0;
    for d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    let n = n as f64;
    Some(if negative { -n } else { n })
}

/// `srvr` (and the header of `stat`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Srvr {
    pub version: Option<String>,
    pub role: Option<Role>,
    pub zxid: Option<u64>,
    pub node_count: Option<u64>,
    pub connections: Option<u64>,
    pub outstanding: Option<u64>,
    pub received: Option<u64>,
    pub sent: Option<u64>,
    /// min/avg/max request latency in milliseconds.
    pub latency: Option<(f64, f64, f64)>,
}

impl Srvr {
    /// High 32 bits of the zxid: the leader epoch.
    pub fn zxid_epoch(&self) -> Option<u64> {
        self.zxid.map(|z| z >> 32)
    }
    /// Low 32 bits: the transaction counter within the epoch. Near 2^32 the
    /// ensemble must elect a new leader to start a new epoch.
    pub fn zxid_counter(&self) -> Option<u64> {
        self.zxid.map(|z| z & 0xffff_ffff)
    }
}

/// Parses `srvr` or `stat`.
pub fn parse_srvr(reply: &str) -> Result<Srvr, ParseError> {
    let mut s = Srvr::default();
    for line in reply.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Zookeeper version" => {
                s.version = Some(
                    value
                        .split(", built on")
                        .next()
                        .unwrap_or(value)
                        .trim()
                        .to_owned(),
                )
            }
            "Mode" => s.role = Role::parse(value),
            "Zxid" => {
                s.zxid = u64::from_str_radix(value.trim_start_matches("0x"), 16).ok();
            }
            "Node count" => s.node_count = value.parse().ok(),
            "Connections" => s.connections = value.parse().ok(),
            "Outstanding" => s.outstanding = value.parse().ok(),
            "Received" => s.received = value.parse().ok(),
            "Sent" => s.sent = value.parse().ok(),
            "Latency min/avg/max" => {
                let parts: Vec<f64> = value
                    .split('/')
                    .filter_map(|p| p.trim().parse().ok())
                    .collect();
                if let [min, avg, max] = parts[..] {
                    s.latency = Some((min, avg, max));
                }
            }
            _ => {}
        }
    }
    if s.version.is_none() && s.role.is_none() && s.zxid.is_none() {
        return Err(ParseError(
            "no `Zookeeper version`, `Mode` or `Zxid` line in the srvr reply".into(),
        ));
    }
    Ok(s)
}

/// `ruok`: true for `imok`.
pub fn parse_ruok(reply: &str) -> bool {
    reply.trim() == "imok"
}

/// `isro`: `Some(true)` read-only, `Some(false)` read-write, `None` when the
/// server cannot say (3.8 answers `null` while it has no quorum).
pub fn parse_isro(reply: &str) -> Result<Option<bool>, ParseError> {
    match reply.trim() {
        "ro" => Ok(Some(true)),
        "rw" => Ok(Some(false)),
        "null" => Ok(None),
        other => Err(ParseError(format!(
            "isro answered `{}`, expected rw or ro",
            other.chars().take(40).collect::<String>()
        ))),
    }
}

/// An ensemble member from `conf`'s membership or `/zookeeper/config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    /// `host:port` clients connect to, when the member publishes it.
    pub client_address: Option<String>,
    pub role: String,
}

/// Parses `server.N=host:quorum:election[:role][;[client_host:]client_port]`
/// lines, as written in `/zookeeper/config` and `conf`.
pub fn parse_members(text: &str) -> Vec<Member> {
    let mut members = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        let Some(id) = key.strip_prefix("server.").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let (quorum, client) = match value.split_once(';') {
            Some((q, c)) => (q, Some(c.trim())),
            None => (value, None),
        };
        let mut parts = quorum.split(':');
        let host = parts.next().unwrap_or_default().trim().to_owned();
        let role = parts.nth(2).unwrap_or("participant").trim().to_owned();
        let client_address = client.and_then(|c| {
            let (chost, port) = match c.rsplit_once(':') {
                Some((h, p)) => (h.trim(), p.trim()),
                None => ("", c),
            };
            let port: u16 = port.parse().ok()?;
            let chost = if chost.is_empty() || chost == "0.0.0.0" || chost == "[0:0:0:0:0:0:0:0]" {
                host.as_str()
            } else {
                chost
            };
            Some(format!("{chost}:{port}"))
        });
        members.push(Member {
            id,
            client_address,
            role,
        });
    }
    members
}

/// `conf`: the settings the exporter reports, plus every `key=value`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conf {
    pub values: BTreeMap<String, String>,
    pub members: Vec<Member>,
}

impl Conf {
    fn millis(&self, key: &str) -> Option<f64> {
        self.values.get(key).and_then(|v| v.parse::<f64>().ok())
    }
    pub fn tick_time_ms(&self) -> Option<f64> {
        self.millis("tickTime")
    }
    pub fn min_session_timeout_ms(&self) -> Option<f64> {
        self.millis("minSessionTimeout")
    }
    pub fn max_session_timeout_ms(&self) -> Option<f64> {
        self.millis("maxSessionTimeout")
    }
    pub fn server_id(&self) -> Option<&str> {
        self.values.get("serverId").map(String::as_str)
    }
}

/// Parses `conf` (`key=value` lines; `membership:` section in 3.5+).
pub fn parse_conf(reply: &str) -> Result<Conf, ParseError> {
    let mut conf = Conf::default();
    for line in reply.lines() {
        if let Some((k, v)) = line.split_once('=')
            && !k.trim().starts_with("server.")
        {
            conf.values.insert(k.trim().to_owned(), v.trim().to_owned());
        }
    }
    conf.members = parse_members(reply);
    if conf.values.is_empty() {
        return Err(ParseError("no `key=value` line in the conf reply".into()));
    }
    Ok(conf)
}

/// Parses `wchp`: each watched path followed by the sessions watching it
/// (tab-indented `0x…` lines).
pub fn parse_wchp(reply: &str) -> Result<BTreeMap<String, Vec<i64>>, ParseError> {
    let mut map: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in reply.lines() {
        if line.starts_with('/') {
            current = Some(line.trim_end().to_owned());
            map.entry(line.trim_end().to_owned()).or_default();
        } else if let (Some(path), Some(id)) = (
            &current,
            hex_session(line.trim()).filter(|_| line.trim().starts_with("0x")),
        ) {
            map.entry(path.clone()).or_default().push(id);
        } else if !line.trim().is_empty() {
            return Err(ParseError("unexpected line in the wchp reply".into()));
        }
    }
    Ok(map)
}

/// `wchs`: watch summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wchs {
    pub connections: u64,
    pub paths: u64,
    pub watches: u64,
}

/// Parses `wchs`: `N connections watching M paths` / `Total watches:K`.
pub fn parse_wchs(reply: &str) -> Result<Wchs, ParseError> {
    let mut w = Wchs::default();
    let mut seen = 0;
    for line in reply.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [n, "connections", "watching", m, "paths"] = words[..] {
            if let (Ok(n), Ok(m)) = (n.parse(), m.parse()) {
                (w.connections, w.paths) = (n, m);
                seen += 1;
            }
        } else if let Some(total) = line.trim().strip_prefix("Total watches:")
            && let Ok(t) = total.trim().parse()
        {
            w.watches = t;
            seen += 1;
        }
    }
    if seen == 0 {
        return Err(ParseError("no watch summary in the wchs reply".into()));
    }
    Ok(w)
}

/// Parses `envi`: `key=value` lines after `Environment:`.
pub fn parse_envi(reply: &str) -> Result<BTreeMap<String, String>, ParseError> {
    let env: BTreeMap<String, String> = reply
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    if env.is_empty() {
        return Err(ParseError("no `key=value` line in the envi reply".into()));
    }
    Ok(env)
}

#[cfg(test)]
mod tests;
