//! Where a render writes its body: one string, or, once a body asked for
//! compressed grows past [`Body::zipping_past`], gzip made while it is
//! written.
//!
//! With every election of a million exported the body is over a GiB of
//! text. Written whole, it sat beside the model (and the previous body,
//! until the new one replaced it) at about three times the model's memory
//! (docs/benchmarks.md). Compressed as it goes it is a few dozen MiB;
//! the text in flight is one chunk. The compression runs on a thread of
//! its own, so that the render (which holds every cluster's read lock,
//! and so keeps the watch waiting) takes no longer than it did: on two
//! cores the two overlap.

use std::fmt;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// gzip level of the exposition: level 1 makes a 100,000-series body 27×
/// smaller in a quarter of its render time; level 6 gains 15 % of size for
/// eight times the CPU (docs/benchmarks.md).
pub const GZIP_LEVEL: u32 = 1;

/// Text handed to the compressing thread at a time.
const CHUNK: usize = 1 << 20;

/// Chunks that may wait for the compressing thread: if it falls behind,
/// the render waits rather than the text piling up.
const QUEUED: usize = 4;

/// A rendered body: the text itself, or its gzip and how long the text
/// was.
#[derive(Debug)]
pub enum Encoded {
    Plain(String),
    Gzip { zipped: Vec<u8>, plain_len: usize },
}

impl Encoded {
    /// Length of the text (before any compression).
    pub fn plain_len(&self) -> usize {
        match self {
            Encoded::Plain(text) => text.len(),
            Encoded::Gzip { plain_len, .. } => *plain_len,
        }
    }
}

/// The body being written.
#[derive(Debug)]
pub struct Body {
    text: String,
    /// Length at which [`Body::written`] has work to do: the threshold
    /// while the body is plain, a chunk once it is compressed, never
    /// (`usize::MAX`) without a threshold.
    spill_at: usize,
    zipper: Option<Zipper>,
    /// Text already handed to the compressing thread.
    handed: usize,
}

#[derive(Debug)]
struct Zipper {
    chunks: SyncSender<Vec<u8>>,
    done: JoinHandle<std::io::Result<Vec<u8>>>,
}

impl Body {
    /// A body written whole as text, however long it gets.
    pub fn plain(capacity: usize) -> Self {
        let mut text = String::with_capacity(capacity);
        crate::os::prefer_huge_pages(&mut text);
        Self {
            text,
            spill_at: usize::MAX,
            zipper: None,
            handed: 0,
        }
    }

    /// A body written as text up to `threshold` bytes and gzipped from
    /// there on (all of it, the first `threshold` bytes included).
    /// `capacity`: the length the body is expected to have (the last one).
    pub fn zipping_past(threshold: usize, capacity: usize) -> Self {
        let mut body = Self::plain(capacity.min(threshold + CHUNK));
        body.spill_at = threshold.max(1);
        body
    }

    /// Where text is written.
    #[inline]
    pub fn text(&mut self) -> &mut String {
        &mut self.text
    }

    /// Call after writing a little: compresses what has piled up when it
    /// is time. One comparison when it is not.
    #[inline]
    pub fn written(&mut self) -> fmt::Result {
        if self.text.len() >= self.spill_at {
            self.spill()
        } else {
            Ok(())
        }
    }

    #[cold]
    fn spill(&mut self) -> fmt::Result {
        if self.zipper.is_none() {
            match Zipper::start(self.text.len()) {
                Some(zipper) => self.zipper = Some(zipper),
                None => {
                    // No thread for it (a process at its thread limit): the
                    // body stays plain, as bodies were before.
                    self.spill_at = usize::MAX;
                    return Ok(());
                }
            }
            self.spill_at = CHUNK;
        }
        let chunk = std::mem::replace(&mut self.text, String::with_capacity(CHUNK + CHUNK / 8));
        self.handed += chunk.len();
        let sent = self
            .zipper
            .as_ref()
            .is_some_and(|z| z.chunks.send(chunk.into_bytes()).is_ok());
        // The thread only stops taking chunks on an error, which `finish`
        // reports.
        if sent { Ok(()) } else { Err(fmt::Error) }
    }

    /// The body: the text, or the gzip of all of it once it was
    /// compressed.
    pub fn finish(self) -> Result<Encoded, fmt::Error> {
        let Some(zipper) = self.zipper else {
            return Ok(Encoded::Plain(self.text));
        };
        let plain_len = self.handed + self.text.len();
        let _ = zipper.chunks.send(self.text.into_bytes());
        drop(zipper.chunks);
        match zipper.done.join() {
            Ok(Ok(zipped)) => Ok(Encoded::Gzip { zipped, plain_len }),
            _ => Err(fmt::Error),
        }
    }
}

impl Zipper {
    /// The compressing thread, fed by a short queue.
    fn start(first: usize) -> Option<Self> {
        let (chunks, queue) = sync_channel::<Vec<u8>>(QUEUED);
        let done = std::thread::Builder::new()
            .name("gzip".into())
            .spawn(move || compress_all(queue, first))
            .ok()?;
        Some(Self { chunks, done })
    }
}

/// An encoder at the exposition's level for about `plain` bytes of text.
fn encoder(plain: usize) -> flate2::write::GzEncoder<Vec<u8>> {
    flate2::write::GzEncoder::new(
        Vec::with_capacity(plain / 8),
        flate2::Compression::new(GZIP_LEVEL),
    )
}

fn compress_all(queue: Receiver<Vec<u8>>, first: usize) -> std::io::Result<Vec<u8>> {
    let mut encoder = encoder(first);
    for chunk in queue {
        encoder.write_all(&chunk)?;
    }
    encoder.finish()
}

/// gzip of a whole body, at the exposition's level.
pub fn compress(plain: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = encoder(plain.len());
    encoder.write_all(plain).ok()?;
    encoder.finish().ok()
}

/// The text a gzipped body holds, for the tests of what compresses.
#[cfg(test)]
pub(crate) fn gunzip(zipped: &[u8]) -> String {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(zipped), &mut text).unwrap();
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Writes `pieces` as a render does (a piece, then `written`).
    fn write(mut body: Body, pieces: &[String]) -> Encoded {
        for piece in pieces {
            body.text().push_str(piece);
            body.written().unwrap();
        }
        body.finish().unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Below the threshold a body is its text; past it, the gzip of
        /// exactly that text (every byte once, in order), whatever the
        /// pieces and the threshold.
        #[test]
        fn a_body_is_its_text_or_the_gzip_of_exactly_its_text(
            pieces in proptest::collection::vec("[a-z{}=\"\n]{0,3000}", 0..40),
            threshold in 1usize..40_000,
        ) {
            let text: String = pieces.concat();
            match write(Body::zipping_past(threshold, 0), &pieces) {
                Encoded::Plain(plain) => {
                    prop_assert!(text.len() < threshold, "plain at {} of {}", text.len(), threshold);
                    prop_assert_eq!(plain, text);
                }
                Encoded::Gzip { zipped, plain_len } => {
                    prop_assert!(text.len() >= threshold);
                    prop_assert_eq!(plain_len, text.len());
                    prop_assert_eq!(gunzip(&zipped), text);
                }
            }
        }
    }

    /// A body of many chunks (several queued while the thread works) comes
    /// out whole, and a plain body never compresses however long.
    #[test]
    fn a_long_body_is_compressed_across_chunks_and_a_plain_one_never() {
        let line = "zookeeper_election_has_master{ensemble=\"c\",election=\"/bots/bot_1\"} 1\n";
        let pieces: Vec<String> = (0..(6 * CHUNK / line.len())).map(|_| line.into()).collect();
        let text = pieces.concat();
        match write(Body::zipping_past(CHUNK / 2, text.len()), &pieces) {
            Encoded::Gzip { zipped, plain_len } => {
                assert_eq!(plain_len, text.len());
                assert!(zipped.len() < text.len() / 10);
                assert_eq!(gunzip(&zipped), text);
            }
            Encoded::Plain(_) => panic!("not compressed past the threshold"),
        }
        match write(Body::plain(0), &pieces) {
            Encoded::Plain(plain) => assert_eq!(plain, text),
            Encoded::Gzip { .. } => panic!("a plain body compressed"),
        }
    }
}
