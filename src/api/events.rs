//! Timeline entries: `/api/v1/events`, the status page's latest events and
//! the fields of each entry's log line.

use serde::Serialize;

use super::{rfc3339_millis, session_hex};
use crate::model::timeline::{Event, Master, What};

/// A master (or holder, or member) as the timeline names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MasterBody {
    pub identity: String,
    pub node: String,
    /// The owner session, `0x…`.
    pub session: String,
}

impl MasterBody {
    pub fn of(m: &Master) -> Self {
        Self {
            identity: m.identity.clone(),
            node: m.node.clone(),
            session: session_hex(m.owner),
        }
    }
}

/// One timeline entry. Which fields are present depends on `kind`; `from`
/// and `cause` of a switch are present as `null` when unknown (the
/// election was first seen masterless), absent for kinds that never have
/// them. A switch that ends a masterless period names the master whose
/// going began it, how it went, and `masterless_seconds`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventBody {
    /// RFC 3339 with milliseconds.
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Option<&'static str>>,
    pub cluster: String,
    /// Absent for the agent's own session events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub election: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Option<MasterBody>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_seconds: Option<f64>,
    /// A lease verdict's holder of the lease (`null`: no row).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<Option<String>>,
    pub kind: &'static str,
    /// A lease verdict's ZooKeeper master identity (`null`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub masterless_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub seq: u64,
    /// A ghost's liveness (`disconnected`, `silent`), the session's
    /// state after a loss, or a lease verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<MasterBody>,
}

impl EventBody {
    pub fn of(cluster: &str, e: &Event) -> Self {
        let mut body = Self {
            at: rfc3339_millis(e.at),
            cause: None,
            cluster: cluster.to_owned(),
            election: (!e.election.is_empty()).then(|| e.election.clone()),
            from: None,
            held_seconds: None,
            holder: None,
            kind: e.what.kind(),
            master: None,
            masterless_seconds: None,
            reason: None,
            seq: e.seq,
            state: None,
            to: None,
        };
        let some = |m: &Master| Some(Some(MasterBody::of(m)));
        match &e.what {
            What::Switch {
                from,
                to,
                cause,
                masterless,
            } => {
                body.from = Some(from.as_ref().map(MasterBody::of));
                body.to = Some(MasterBody::of(to));
                body.cause = Some(cause.map(|c| c.label()));
                body.masterless_seconds = masterless.map(|d| d.as_secs_f64());
            }
            What::MasterlessStarted { last, cause } => {
                body.from = some(last);
                body.cause = Some(Some(cause.label()));
            }
            What::MasterlessEnded { lasted, to } => {
                body.to = Some(MasterBody::of(to));
                body.masterless_seconds = Some(lasted.as_secs_f64());
            }
            What::GhostFlagged { master, liveness } => {
                body.from = some(master);
                body.state = Some(liveness);
            }
            What::GhostCleared { master: m } | What::MemberLeft { member: m } => {
                body.from = some(m);
            }
            What::LockAcquired { holder: m }
            | What::MemberJoined { member: m }
            | What::MasterNamed { master: m } => {
                body.to = Some(MasterBody::of(m));
            }
            What::LockHeldLong { holder, held } => {
                body.to = Some(MasterBody::of(holder));
                body.held_seconds = Some(held.as_secs_f64());
            }
            What::SessionLost { state, reason } => {
                body.state = Some(state);
                body.reason = Some(reason.clone());
            }
            What::LeaseVerdict {
                verdict,
                master,
                holder,
            } => {
                body.state = Some(verdict.label());
                body.master = Some(master.clone());
                body.holder = Some(holder.clone());
            }
            What::SessionRestored => {}
        }
        body
    }

    /// The identity this entry moved away from, if it names one.
    pub fn previous_identity(&self) -> Option<&str> {
        self.from.as_ref()?.as_ref().map(|m| m.identity.as_str())
    }

    /// The identity this entry moved to, if it names one.
    pub fn to_identity(&self) -> Option<&str> {
        self.to.as_ref().map(|m| m.identity.as_str())
    }

    /// The cause's label, if known.
    pub fn cause_label(&self) -> Option<&'static str> {
        self.cause.flatten()
    }
}

/// `GET /api/v1/events`.
#[derive(Debug, Clone, Serialize)]
pub struct EventsBody {
    pub events: Vec<EventBody>,
    /// More entries matched than `limit`.
    pub truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::timeline::Cause;
    use std::time::{Duration, SystemTime};

    fn event(election: &str, what: What) -> Event {
        Event {
            seq: 7,
            at: SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_000_250),
            election: election.into(),
            what,
        }
    }

    fn master(identity: &str, owner: i64) -> Master {
        Master {
            node: "n_0000000001".into(),
            identity: identity.into(),
            owner,
        }
    }

    fn json(e: &Event) -> String {
        serde_json::to_string(&EventBody::of("prod", e)).unwrap()
    }

    /// The shapes readers (and the status page) rely on: a switch always
    /// has `from` and `cause`, `null` when unknown; session events have no
    /// `election`; keys sorted.
    #[test]
    fn each_kind_has_the_fields_it_always_had() {
        let switch = What::Switch {
            from: None,
            to: master("b", 0x1f),
            cause: None,
            masterless: None,
        };
        assert_eq!(
            json(&event("/bots/bot_1", switch)),
            r#"{"at":"2026-11-30T00:53:20.250Z","cause":null,"cluster":"prod","election":"/bots/bot_1","from":null,"kind":"switch","seq":7,"to":{"identity":"b","node":"n_0000000001","session":"0x1f"}}"#
        );
        let switch = What::Switch {
            from: Some(master("a", 1)),
            to: master("b", 2),
            cause: Some(Cause::SessionExpired),
            masterless: Some(Duration::from_millis(2500)),
        };
        let body = EventBody::of("prod", &event("/e", switch));
        assert_eq!(
            (
                body.previous_identity(),
                body.to_identity(),
                body.cause_label()
            ),
            (Some("a"), Some("b"), Some("session_expired"))
        );
        assert_eq!(body.masterless_seconds, Some(2.5));
        let lost = What::SessionLost {
            state: "expired",
            reason: "session expired".into(),
        };
        assert_eq!(
            json(&event("", lost)),
            r#"{"at":"2026-11-30T00:53:20.250Z","cluster":"prod","kind":"session_lost","reason":"session expired","seq":7,"state":"expired"}"#
        );
        let held = What::LockHeldLong {
            holder: master("w", 3),
            held: Duration::from_millis(1500),
        };
        assert_eq!(
            json(&event("/locks/l", held)),
            r#"{"at":"2026-11-30T00:53:20.250Z","cluster":"prod","election":"/locks/l","held_seconds":1.5,"kind":"lock_held_long","seq":7,"to":{"identity":"w","node":"n_0000000001","session":"0x3"}}"#
        );
    }
}
