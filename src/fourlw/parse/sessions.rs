//! `cons` and `dump`: the sessions a server holds, their connections and
//! their expiry, which the ghost check judges masters by.

use super::ParseError;

/// One client connection from `cons`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    /// The client's `host:port` as the server prints it (`127.0.0.1:50496`;
    /// an IPv6 host bare, `0:0:0:0:0:0:0:1:50496`, or in brackets,
    /// `[::1]:50496`, by the Java version).
    pub address: String,
    /// Session id, when the connection has a session (`sid=0x…`).
    pub session: Option<i64>,
    /// Packets received on this connection.
    pub received: Option<u64>,
    /// Negotiated session timeout in milliseconds (`to=`).
    pub timeout_ms: Option<u64>,
}

impl Connection {
    /// The client's host: the address without its port (and without the
    /// brackets of an IPv6 host).
    pub fn host(&self) -> &str {
        host_of(&self.address)
    }
}

/// The host of a `host:port` address as `cons` prints it.
pub fn host_of(address: &str) -> &str {
    match address.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(host, _)| host),
        None => address.rsplit_once(':').map_or(address, |(host, _)| host),
    }
}

/// Parses `cons`: one connection per line,
/// ` /addr:port[1](queued=0,recved=5,sent=5,sid=0x…,lop=PING,…,to=30000,…)`.
pub fn parse_cons(reply: &str) -> Vec<Connection> {
    reply.lines().filter_map(parse_cons_line).collect()
}

/// One line of `cons`; `None` for blank or foreign lines. Used on its own
/// to parse a large reply as it streams in.
pub fn parse_cons_line(line: &str) -> Option<Connection> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    // `[1]` after the address counts its pending requests; a bracketed
    // IPv6 host comes before it and ends with `]:port`.
    let port_from = match rest.starts_with('[') {
        true => rest.find("]:")? + 1,
        false => 0,
    };
    let end = port_from + rest[port_from..].find('[')?;
    let mut c = Connection {
        address: rest[..end].to_owned(),
        ..Default::default()
    };
    let fields = line.split_once('(')?.1.trim_end_matches(')');
    for field in fields.split(',') {
        match field.split_once('=') {
            Some(("sid", v)) => c.session = hex_session(v),
            Some(("recved", v)) => c.received = v.parse().ok(),
            Some(("to", v)) => c.timeout_ms = v.parse().ok(),
            _ => {}
        }
    }
    Some(c)
}

/// `dump`: the sessions the server tracks, with their expiry times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dump {
    /// Session id and when the server will expire it unless it hears from it.
    /// The time is `None` when the server prints it in a zone other than
    /// UTC/GMT (Java's `Date.toString` uses the server's zone).
    pub sessions: Vec<(i64, Option<std::time::SystemTime>)>,
}

pub(super) fn hex_session(s: &str) -> Option<i64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16)
        .ok()
        .map(u64::cast_signed)
}

/// Parses Java's `Date.toString()` (`Mon Nov 30 09:30:13 UTC 2026`) when the
/// zone is UTC or GMT.
pub(super) fn parse_java_date(text: &str) -> Option<std::time::SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, month, day, time, zone, year] = parts[..] else {
        return None;
    };
    if zone != "UTC" && zone != "GMT" {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = i64::try_from(MONTHS.iter().position(|x| *x == month)?).ok()? + 1;
    let (d, y): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [hh, mm, ss] = hms[..] else { return None };
    // Out-of-range fields would overflow the arithmetic below (found by
    // fuzzing): no date ZooKeeper writes has them.
    if !(1..=31).contains(&d)
        || !(1970..=9999).contains(&y)
        || !(0..24).contains(&hh)
        || !(0..60).contains(&mm)
        || !(0..=60).contains(&ss)
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(
        std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::from_secs(u64::try_from(secs).ok()?),
    )
}

/// Parses `dump` (a whole reply; the agent reads it with [`DumpReader`]).
pub fn parse_dump(reply: &str) -> Result<Dump, ParseError> {
    let mut reader = DumpReader::default();
    for line in reply.lines() {
        if !reader.line(line) {
            break;
        }
    }
    reader.finish()
}

/// `dump` read line by line as it arrives. The reply lists the sessions
/// first, then every ephemeral path of every session, then connections;
/// only the sessions (their expiry times) are used, and at a million
/// elections the ephemeral section is tens of MiB per member per round, so
/// the reader says when it has what it needs and the rest is not parsed.
#[derive(Debug, Default)]
pub struct DumpReader {
    dump: Dump,
    in_sessions: bool,
    /// Whether the session section began (a reply without one is no dump).
    began: bool,
    expiry: Option<std::time::SystemTime>,
}

impl DumpReader {
    /// Takes one line; `false` once the session section is over (nothing
    /// after it is needed).
    pub fn line(&mut self, line: &str) -> bool {
        let trimmed = line.trim();
        if trimmed.starts_with("SessionTracker dump") {
            (self.in_sessions, self.began) = (true, true);
        } else if trimmed.starts_with("ephemeral nodes dump")
            || trimmed.starts_with("Connections dump")
        {
            if self.began {
                return false;
            }
            self.in_sessions = false;
        } else if self.in_sessions {
            if let Some((_, date)) = trimmed.split_once(" expire at ") {
                self.expiry = parse_java_date(date.trim_end_matches(':'));
            } else if let Some(id) = trimmed.strip_prefix("0x").and(hex_session(trimmed)) {
                self.dump.sessions.push((id, self.expiry));
            }
        }
        true
    }

    /// The sessions read; an error when the reply had no session section.
    pub fn finish(self) -> Result<Dump, ParseError> {
        if !self.began {
            return Err(ParseError("no session section in the dump reply".into()));
        }
        Ok(self.dump)
    }
}
