//! The JSON the agent writes, as types: every `/api/v1/*` body, the status
//! page's data (the page renders from these structs, `/api/v1/status`
//! serializes them), the timeline's log fields and the alerts pushed to
//! Alertmanager. Each body is made from the models by a constructor here;
//! handlers only pick what to show and serialize.
//!
//! Fields are declared in alphabetical order, the order the hand-written
//! bodies these replaced had (their keys were sorted): a reader diffing
//! two versions of the agent's output sees no change.

pub(crate) mod alerts;
pub(crate) mod elections;
pub(crate) mod events;
pub mod status;

use std::time::SystemTime;

use serde::Serialize;

/// A session id as ZooKeeper's logs and `cons` print it (`0x…`).
pub fn session_hex(id: i64) -> String {
    format!("0x{id:x}")
}

/// A wall-clock time as RFC 3339 with milliseconds.
pub fn rfc3339_millis(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// An RFC 3339 time, `Z` or with a numeric offset (Alertmanager's, a
/// user's `since`).
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    // The weak parser takes "…+01:00" as if it said "Z": the offset is
    // read here.
    if text.ends_with('Z') {
        return humantime::parse_rfc3339(text).ok();
    }
    let cut = text.len().checked_sub(6)?;
    let (base, offset) = (text.get(..cut)?, text.get(cut..)?);
    let (sign, hh_mm) = offset.split_at_checked(1)?;
    let (hours, minutes) = hh_mm.split_once(':')?;
    if hours.len() != 2 || minutes.len() != 2 {
        return None;
    }
    let secs = hours.parse::<u64>().ok()? * 3600 + minutes.parse::<u64>().ok()? * 60;
    let local = humantime::parse_rfc3339_weak(base).ok()?;
    let shift = std::time::Duration::from_secs(secs);
    match sign {
        "+" => local.checked_sub(shift),
        "-" => local.checked_add(shift),
        _ => None,
    }
}

/// A wall-clock time as RFC 3339 to the second (the status page's).
pub fn rfc3339_seconds(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Seconds since the Unix epoch (0 before it).
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `{"error": "..."}`: what a request got wrong, and what to do instead.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorBody {
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_with_any_offset_are_read() {
        let z = humantime::parse_rfc3339("2026-12-04T13:00:00Z").unwrap();
        assert_eq!(parse_rfc3339("2026-12-04T13:00:00Z"), Some(z));
        assert_eq!(parse_rfc3339("2026-12-04T15:30:00+02:30"), Some(z));
        assert_eq!(parse_rfc3339("2026-12-04T08:00:00.000-05:00"), Some(z));
        for bad in [
            "",
            "+01:00",
            "2026-12-04T13:00:00+1:000",
            "2026-12-04T13:00:00*01:00",
            "2026-12-04T13:00:00+99999999999999999999:00",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        // The fraction does not hide an offset.
        assert_eq!(
            parse_rfc3339("2026-12-04T14:00:00.5+01:00"),
            Some(z + std::time::Duration::from_millis(500))
        );
    }
}
