//! `GET /api/v1/events`: the timeline, newest first, filtered by cluster,
//! election, kind and time: "who was master of bot_1234 at 03:12, and why
//! did it move?" is `?election=…&kind=switch&until=03:12&limit=1`.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::AppState;
use crate::api::ErrorBody;
use crate::api::events::{EventBody, EventsBody};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Events returned when `limit` is not given, and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

/// `since` / `until`: RFC 3339 (`2026-11-30T03:12:00Z`) or Unix seconds.
/// Every conversion is checked: a number a `SystemTime` cannot hold
/// (`1e19`, `1e308`, `inf`) is no time at all, and the caller answers 400.
fn parse_since(text: &str) -> Option<SystemTime> {
    crate::api::parse_rfc3339(text).or_else(|| {
        let secs: f64 = text.parse().ok()?;
        if secs < 0.0 {
            return None;
        }
        let offset = Duration::try_from_secs_f64(secs).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(offset)
    })
}

pub(super) async fn events(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let bad =
        |error: String| (StatusCode::BAD_REQUEST, axum::Json(ErrorBody { error })).into_response();
    let mut bounds = [None, None];
    for (i, key) in ["since", "until"].into_iter().enumerate() {
        match query.get(key).map(|s| (s, parse_since(s))) {
            Some((s, None)) => {
                return bad(format!(
                    "{key}=`{s}` is neither RFC 3339 (2026-11-30T03:12:00Z) nor Unix seconds \
                     between 0 and the largest time this system holds"
                ));
            }
            Some((_, t)) => bounds[i] = t,
            None => {}
        }
    }
    // Entries are shown to the millisecond: `until` copied from one's `at`
    // includes it.
    let [since, until] = bounds;
    let until = until.map(|u| u.checked_add(Duration::from_nanos(999_999)).unwrap_or(u));
    let kinds: Option<Vec<&str>> = query.get("kind").map(|k| {
        k.split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .collect()
    });
    if let Some(unknown) = kinds
        .iter()
        .flatten()
        .find(|k| !crate::model::timeline::KINDS.contains(k))
    {
        return bad(format!(
            "kind=`{unknown}` is not a kind of event; kinds: {}",
            crate::model::timeline::KINDS.join(", ")
        ));
    }
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        Some(Ok(n)) if n > 0 => n.min(MAX_LIMIT),
        Some(_) => return bad("limit must be a positive number".into()),
        None => DEFAULT_LIMIT,
    };
    let (cluster, election) = (query.get("cluster"), query.get("election"));
    let mut all: Vec<(SystemTime, EventBody)> = Vec::new();
    for c in state.clusters.now().iter() {
        c.view(|c| {
            if cluster.is_some_and(|w| *w != c.name()) {
                return;
            }
            all.extend(
                c.timeline()
                    .newest_first()
                    .skip_while(|e| until.is_some_and(|u| e.at > u))
                    .filter(|e| election.is_none_or(|p| *p == e.election))
                    .filter(|e| kinds.as_ref().is_none_or(|k| k.contains(&e.what.kind())))
                    .take_while(|e| since.is_none_or(|s| e.at >= s))
                    .take(limit + 1)
                    .map(|e| (e.at, EventBody::of(c.name(), e))),
            );
        });
    }
    all.sort_by_key(|e| std::cmp::Reverse(e.0));
    let truncated = all.len() > limit;
    all.truncate(limit);
    let events = all.into_iter().map(|(_, e)| e).collect();
    axum::Json(EventsBody { events, truncated }).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_rfc3339_or_unix_seconds() {
        let t = parse_since("2026-11-30T03:12:00Z").unwrap();
        assert_eq!(parse_since("1796008320"), Some(t));
        assert_eq!(parse_since("yesterday"), None);
        assert_eq!(parse_since("-1"), None);
    }

    /// Numbers no `SystemTime` holds are refused, never a panic: each of
    /// these once panicked inside the handler.
    #[test]
    fn since_out_of_range_is_no_time() {
        for text in [
            "1e19",
            "9223372036854775807",
            "18446744073709551616",
            "1e308",
            "inf",
            "NaN",
            "-0.5",
            "-inf",
        ] {
            assert_eq!(parse_since(text), None, "{text}");
        }
        assert!(parse_since("0").is_some());
        assert!(parse_since("1796008320.25").is_some());
    }

    proptest::proptest! {
        /// Any text at all: a time or none, never a panic.
        #[test]
        fn since_never_panics(text in ".{0,40}", secs in proptest::num::f64::ANY) {
            let _ = parse_since(&text);
            let _ = parse_since(&secs.to_string());
            let _ = parse_since(&format!("{secs:e}"));
        }
    }
}
