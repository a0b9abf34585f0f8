//! The agent's own session as the cluster's models see it: started,
//! reconnected, lost, failed to connect, ended. A lost session leaves
//! every tree stale until its next listing.

use std::time::Duration;

use super::ClusterState;
use crate::model::session::SessionState;
use crate::model::timeline::What;

impl ClusterState {
    /// A new client holds a session; after a loss the timeline says the
    /// session is restored.
    pub fn session_started(&mut self, id: i64, timeout: Duration, at: std::time::SystemTime) {
        if !self.session.is_connected() && self.timeline.last_seq() > 0 {
            self.note(at, What::SessionRestored);
        }
        self.session.id = Some(id);
        self.session.timeout = Some(timeout);
        self.session_state(SessionState::Connected, None);
    }

    /// The client reconnected; after a disconnect that is a reconnect.
    pub fn session_reconnected(
        &mut self,
        read_only: bool,
        after_disconnect: bool,
        at: std::time::SystemTime,
    ) {
        if after_disconnect {
            self.session.reconnects += 1;
            self.note(at, What::SessionRestored);
        }
        let state = if read_only {
            SessionState::ReadOnly
        } else {
            SessionState::Connected
        };
        self.session_state(state, None);
    }

    /// The session stopped reflecting ZooKeeper (`Disconnected` while the
    /// client reconnects, `Expired`): every tree keeps its last values but
    /// is stale until its next listing.
    pub fn session_lost(
        &mut self,
        state: SessionState,
        error: impl Into<String>,
        at: std::time::SystemTime,
    ) {
        let reason = error.into();
        let what = What::SessionLost {
            state: state.label(),
            reason: reason.clone(),
        };
        self.note(at, what);
        self.mark_lost(state, reason);
    }

    /// The session is down (`state`) for `reason`: every tree is stale.
    fn mark_lost(&mut self, state: SessionState, reason: String) {
        if state == SessionState::Expired {
            self.session.expirations += 1;
        }
        self.session_state(state, Some(reason));
        for tree in &mut self.trees {
            tree.mark_unsynced();
        }
    }

    /// No session could be established.
    pub fn connect_failed(&mut self, auth_failed: bool, message: String) {
        self.session.connect_failures += 1;
        let state = if auth_failed {
            SessionState::AuthFailed
        } else {
            SessionState::Disconnected
        };
        self.mark_lost(state, message);
    }

    /// The client ended (closed, auth failed, shut down); `error` replaces
    /// the last error when given.
    pub fn session_ended(&mut self, state: SessionState, error: Option<String>) {
        self.session_state(state, error);
    }

    fn session_state(&mut self, state: SessionState, error: Option<String>) {
        self.session.state = state;
        let healthy = matches!(state, SessionState::Connected | SessionState::ReadOnly);
        if error.is_some() || healthy {
            self.session.last_error = error;
        }
    }

    /// One request round trip of the agent's session (`op`: read,
    /// multi_read, write).
    pub fn request_observed(&mut self, op: &'static str, took: Duration) {
        self.session.observe_request(op, took);
    }
}
