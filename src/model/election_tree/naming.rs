//! Candidates named by their owner session rather than by their node:
//! by the session's client address as the ghost check's `cons` rounds list
//! it (`owner-host`, `owner-address`: Spark), or by the election's record
//! when that session wrote it (`owner-record`: Flink's leader information).
//! Neither is in the candidate's node, so both arrive after it; until then
//! a candidate is unnamed (empty), never guessed.

use std::collections::HashMap;

use super::{Candidate, Election, ElectionTree, Master, Now, What};

impl ElectionTree {
    /// A new election of this tree, from its first candidates.
    pub(super) fn fresh(&self, candidates: Vec<Candidate>, now: Now) -> Election {
        let election = Election::new(candidates, now);
        match self.spec.identity.named_by_owner() {
            true => election.named_by_owner(),
            false => election,
        }
    }

    /// The identity of a new candidate owned by `owner`, for a tree whose
    /// candidates are named by their owner; `None` for other trees.
    pub(super) fn owner_identity(&self, election: &str, owner: i64) -> Option<String> {
        if let Some(part) = self.spec.identity.owner_part() {
            let address = self.owner_addresses.get(&owner);
            return Some(address.map_or_else(String::new, |a| part.of(a).to_owned()));
        }
        if !self.spec.identity.named_by_owner() {
            return None;
        }
        Some(match self.outer_records.get(election) {
            Some((named, by)) if *by == owner && owner != 0 => named.clone(),
            _ => String::new(),
        })
    }

    /// With an `owner-host`/`owner-address` identity, names every
    /// candidate by its owner session's client address as `address_of`
    /// (the ghost check) knows it; a master named anew is a timeline entry.
    /// A candidate whose session no round has listed stays unnamed.
    /// Returns whether anything changed.
    pub fn name_owners<'a>(&mut self, address_of: impl Fn(i64) -> Option<&'a str>) -> bool {
        let Some(part) = self.spec.identity.owner_part() else {
            return false;
        };
        let mut addresses = HashMap::new();
        for entry in self.elections.values() {
            for owner in entry.election.owners() {
                if let Some(address) = address_of(owner) {
                    addresses.insert(owner, Box::<str>::from(address));
                }
            }
        }
        let mut any = self.owner_addresses != addresses;
        self.owner_addresses = addresses;
        let names = &self.owner_addresses;
        let mut named = Vec::new();
        for (path, entry) in &mut self.elections {
            let renamed = entry
                .election
                .name_owners(|owner| names.get(&owner).map(|a| part.of(a)));
            any |= renamed;
            if let Some(m) = entry.election.master().filter(|_| renamed) {
                named.push((path.to_string(), Master::of(&m)));
            }
        }
        for (path, master) in named {
            self.events.push((path, What::MasterNamed { master }));
        }
        if any {
            self.restart_journal();
        }
        any
    }

    /// The record of sequential election `election` was read: its data and
    /// owner session (`None`: it does not exist). Kept even while the
    /// election is unknown: the record may be written before the election
    /// node is seen. With an `owner-record` identity the candidate of the
    /// record's session is named by it.
    pub fn outer_record_read(&mut self, election: &str, read: Option<(&[u8], i64)>, now: Now) {
        if self.spec.record.is_some() {
            self.changing(election, |t| t.record_read(election, read, now));
        }
    }

    fn record_read(&mut self, election: &str, read: Option<(&[u8], i64)>, now: Now) {
        let Some((name, mode)) = &self.spec.record else {
            return;
        };
        match read {
            Some((data, owner)) => {
                let named = mode.extract(name, data);
                self.outer_records
                    .insert(election.to_owned(), (named, owner));
            }
            None => {
                self.outer_records.remove(election);
            }
        }
        self.name_from_record(election);
        self.handover_evidence(election, now);
    }

    /// With an `owner-record` identity, names the candidate of election
    /// `path` whose session owns its record.
    pub(super) fn name_from_record(&mut self, path: &str) {
        if !self.spec.identity.named_by_owner() || self.spec.identity.owner_part().is_some() {
            return;
        }
        let Some((named, owner)) = self.outer_records.get(path).filter(|(_, o)| *o != 0) else {
            return;
        };
        let Some(entry) = self.elections.get_mut(path) else {
            return;
        };
        let renamed = entry
            .election
            .name_owners(|o| (o == *owner).then_some(named.as_str()));
        if let Some(m) = entry.election.master().filter(|_| renamed) {
            let master = Master::of(&m);
            self.events
                .push((path.to_owned(), What::MasterNamed { master }));
        }
    }
}
