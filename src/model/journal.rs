//! Which elections of a tree changed, in order: the feed through which the
//! readers that keep a view of every election (the alert reading) take
//! only what moved since they last looked, instead of walking the tree.
//!
//! A tree writes the key of every election it changes ([`Journal::touched`]),
//! and starts the journal over ([`Journal::restart`]) when a change is not
//! one election's: a listing, the tree's sync state, a lease reading. A
//! reader keeps a [`Cursor`] and asks [`Journal::since`] for what came after
//! it: the keys touched, or [`Since::Everything`] when the journal started
//! over or no longer holds them (a reader that fell behind by more than the
//! journal keeps walks the tree once, which is what that many changes cost
//! anyway).

use std::collections::VecDeque;

/// A value no stamp has had before in this process.
pub(crate) fn new_stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The fewest entries a journal keeps before it drops the oldest.
const MIN_KEPT: usize = 16_384;

/// The changed elections of one tree, oldest first.
#[derive(Debug, Clone)]
pub struct Journal {
    /// Never the same twice in a process: a reader's cursor from before a
    /// restart (or from another tree) can never match.
    generation: u64,
    /// The sequence number of `entries[0]`.
    first: u64,
    entries: VecDeque<Box<str>>,
    /// Most entries kept: a reader further behind walks the tree instead.
    cap: usize,
}

/// Where a reader stands in a tree's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    generation: u64,
    next: u64,
}

/// What changed after a cursor.
#[derive(Debug)]
pub enum Since<'a> {
    /// These elections (a key may repeat), oldest first.
    Changed(Vec<&'a str>),
    /// Anything may have: read every election again.
    Everything,
}

impl Default for Journal {
    fn default() -> Self {
        Self {
            generation: new_stamp(),
            first: 0,
            entries: VecDeque::new(),
            cap: MIN_KEPT,
        }
    }
}

impl Journal {
    /// Election `key` changed.
    pub fn touched(&mut self, key: &str) {
        if self.entries.len() >= self.cap {
            self.entries.pop_front();
            self.first += 1;
        }
        self.entries.push_back(Box::from(key));
    }

    /// Anything may have changed: every reader reads every election again.
    /// `size`, the tree's elections now, sizes what the journal keeps from
    /// here on (an eighth of the tree): enough for the changes of a
    /// reader's usual pause, small beside the tree.
    pub fn restart(&mut self, size: usize) {
        self.generation = new_stamp();
        self.first += self.entries.len() as u64;
        self.entries.clear();
        self.entries.shrink_to(MIN_KEPT);
        self.cap = MIN_KEPT.max(size / 8);
    }

    /// Where the journal ends now: a reader that has taken everything up
    /// to here keeps this.
    pub fn cursor(&self) -> Cursor {
        Cursor {
            generation: self.generation,
            next: self.first + self.entries.len() as u64,
        }
    }

    /// What changed after `cursor` (`None`: the reader has not read yet).
    pub fn since(&self, cursor: Option<Cursor>) -> Since<'_> {
        match cursor {
            Some(c) if c.generation == self.generation && c.next >= self.first => {
                let skip = usize::try_from(c.next - self.first).unwrap_or(usize::MAX);
                Since::Changed(self.entries.iter().skip(skip).map(|k| &**k).collect())
            }
            _ => Since::Everything,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(s: Since<'_>) -> Option<Vec<String>> {
        match s {
            Since::Changed(k) => Some(k.into_iter().map(str::to_owned).collect()),
            Since::Everything => None,
        }
    }

    #[test]
    fn a_reader_gets_what_changed_after_its_cursor() {
        let mut j = Journal::default();
        assert_eq!(keys(j.since(None)), None, "a first reading reads all");
        let start = j.cursor();
        assert_eq!(keys(j.since(Some(start))), Some(vec![]));
        j.touched("/a");
        j.touched("/b");
        let mid = j.cursor();
        j.touched("/a");
        assert_eq!(
            keys(j.since(Some(start))),
            Some(vec!["/a".into(), "/b".into(), "/a".into()])
        );
        assert_eq!(keys(j.since(Some(mid))), Some(vec!["/a".into()]));
        assert_eq!(keys(j.since(Some(j.cursor()))), Some(vec![]));
    }

    #[test]
    fn a_restart_or_a_reader_left_behind_reads_everything() {
        let mut j = Journal::default();
        let before = j.cursor();
        j.restart(0);
        assert_eq!(keys(j.since(Some(before))), None);
        let after = j.cursor();
        for i in 0..MIN_KEPT + 1 {
            j.touched(&format!("/e{i}"));
        }
        assert_eq!(keys(j.since(Some(after))), None, "one was dropped");
        let recent = Cursor {
            generation: after.generation,
            next: after.next + 1,
        };
        assert_eq!(keys(j.since(Some(recent))).map(|k| k.len()), Some(MIN_KEPT));
        // Another journal's cursor never reads as this one's.
        let other = Journal::default();
        assert_eq!(keys(j.since(Some(other.cursor()))), None);
    }

    #[test]
    fn a_large_tree_keeps_an_eighth_of_its_size() {
        let mut j = Journal::default();
        j.restart(1_000_000);
        let c = j.cursor();
        for i in 0..125_000 {
            j.touched(&format!("/e{i}"));
        }
        assert_eq!(keys(j.since(Some(c))).map(|k| k.len()), Some(125_000));
        j.touched("/one-more");
        assert_eq!(keys(j.since(Some(c))), None);
    }
}
