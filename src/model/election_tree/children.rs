//! A child of an election created, changed or deleted: a candidate
//! joining or leaving (and the switch or masterless period that makes), or
//! a sibling the node style reads (epoch, record).

use super::super::timeline::{Cause, Master, election_events};
use super::{ChildNode, ElectionTree, Facts, Now, notice_shortfall};

impl ElectionTree {
    /// A child of an election was created or its data changed.
    pub(super) fn upsert_child(&mut self, parent: &str, child: ChildNode, now: Now) {
        if !self.concerns(&child.name) {
            let key = self.key(parent);
            if let Some(entry) = self.elections.get_mut(key.as_str()) {
                let mut facts = entry.facts.take().map(|f| *f).unwrap_or_default();
                Self::sibling(&self.spec, &mut facts, &child.name, Some(&child.data));
                entry.facts = (facts != Facts::default()).then(|| Box::new(facts));
            }
            self.handover_evidence(&key, now);
            return;
        }
        let election = self.key(parent);
        if !self.elections.contains_key(election.as_str()) {
            // Within the change its caller keeps the tally of.
            self.insert_fresh(&election, now);
        }
        let candidate = self.candidate(&election, &child);
        let Some(entry) = self.elections.get_mut(election.as_str()) else {
            return;
        };
        match candidate {
            Some(c) => {
                let before = entry.election.candidate_count();
                let was = entry.election.master().map(|m| Master::of(&m));
                let outcome = entry.election.join(c, now);
                let what =
                    election_events(was, entry.election.master(), &outcome, Cause::Preempted);
                notice_shortfall(&self.spec, &mut entry.election, before, now);
                self.outcome(outcome);
                self.happened(&election, what);
            }
            None if child.ephemeral_owner != 0 => {
                entry.others_mut().ephemeral.insert(child.name);
            }
            None => {
                entry.others_mut().persistent.insert(child.name);
            }
        }
        self.handover_evidence(&election, now);
    }

    /// A child of an election was deleted.
    pub(super) fn delete_child(&mut self, parent: &str, name: &str, now: Now) {
        if !self.concerns(name) {
            let key = self.key(parent);
            if let Some(entry) = self.elections.get_mut(key.as_str()) {
                let mut facts = entry.facts.take().map(|f| *f).unwrap_or_default();
                Self::sibling(&self.spec, &mut facts, name, None);
                entry.facts = (facts != Facts::default()).then(|| Box::new(facts));
            }
            return;
        }
        let election = self.key(parent);
        let sequence = self.sequence(name, true);
        let Some(entry) = self.elections.get_mut(election.as_str()) else {
            return;
        };
        if let Some(others) = &mut entry.others {
            others.remove(name);
            if others.len() == 0 {
                entry.others = None;
            }
        }
        if let Some(seq) = sequence {
            let before = entry.election.candidate_count();
            let was = entry.election.master().map(|m| Master::of(&m));
            let outcome = entry.election.leave(name, seq, now);
            let master_went = was.as_ref().is_some_and(|w| w.node == name);
            let what = election_events(was, entry.election.master(), &outcome, Cause::NodeDeleted);
            notice_shortfall(&self.spec, &mut entry.election, before, now);
            self.outcome(outcome);
            self.happened(&election, what);
            if master_went {
                self.handover_starts(&election, now);
            }
        }
    }
}
