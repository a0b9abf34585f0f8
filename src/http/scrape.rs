//! `/metrics`: the four-letter-word collection (bounded by its timeout),
//! then one body per format shared by every scrape that asked before its
//! render began, kept compressed once a scraper asked for gzip (or always,
//! when large), inflated as it is sent for a scraper that did not.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::join_all;

use super::AppState;
use crate::metrics::{self, Encoded, Exposition};

/// The last rendered body per format (text, OpenMetrics) with the moment
/// its render began, and its gzip once a scraper asked for one. A scrape
/// that finds a render begun after it asked takes that body instead of
/// rendering its own: N concurrent or slow scrapers cost one render, one
/// compression and one body, and none gets a body older than its request.
#[derive(Debug, Default)]
pub struct Bodies {
    slots: [tokio::sync::Mutex<Option<Rendered>>; 2],
}

#[derive(Debug)]
struct Rendered {
    began: Instant,
    /// The text, unless the body was compressed while it was written (a
    /// large one): then only `gzip` is kept.
    plain: Option<Bytes>,
    gzip: Option<Bytes>,
}

/// A body as one scrape gets it.
#[derive(Debug)]
enum Served {
    /// As it is sent: the text, or its gzip to a scraper that asked.
    Whole(Bytes),
    /// A body kept only compressed, for a scraper that did not ask for
    /// gzip: inflated as it is sent.
    Inflated(Bytes),
}

impl Bodies {
    /// The body for a scrape that asked at `asked`, gzipped when `gzip`:
    /// shared if a render began since, else rendered now (one render at a
    /// time per format).
    async fn get(
        &self,
        exposition: &Arc<Exposition>,
        openmetrics: bool,
        asked: Instant,
        gzip: bool,
    ) -> Option<Served> {
        let mut slot = self.slots[usize::from(openmetrics)].lock().await;
        let fresh = slot.as_ref().is_some_and(|r| r.began >= asked);
        if !fresh {
            // The old body goes before the new one is written: both at
            // once were twice a large body's memory. A large one is kept
            // compressed, whoever asked (see `metrics::body`).
            *slot = None;
            let began = Instant::now();
            // Encoding a large model takes milliseconds of CPU: off the
            // reactor, in the blocking pool. A small one (the last render
            // took under a millisecond, nothing grew) is rendered here:
            // the hand-over to a blocking thread and back cost two
            // wake-ups, each waiting for a core beside the ZooKeeper JVMs,
            // more than such a render (docs/benchmarks.md).
            let body = if exposition.is_cheap(openmetrics) {
                exposition.render_timed(openmetrics).ok()?
            } else {
                let exposition = exposition.clone();
                tokio::task::spawn_blocking(move || exposition.render_timed(openmetrics))
                    .await
                    .ok()?
                    .ok()?
            };
            *slot = Some(match body {
                Encoded::Plain(text) => Rendered {
                    began,
                    plain: Some(Bytes::from(text)),
                    gzip: None,
                },
                Encoded::Gzip { zipped, .. } => Rendered {
                    began,
                    plain: None,
                    gzip: Some(Bytes::from(zipped)),
                },
            });
        }
        let rendered = slot.as_mut()?;
        match (gzip, &rendered.plain, &rendered.gzip) {
            (true, _, Some(zipped)) => Some(Served::Whole(zipped.clone())),
            (true, Some(plain), None) => {
                let plain = plain.clone();
                let zipped = tokio::task::spawn_blocking(move || metrics::body::compress(&plain))
                    .await
                    .ok()??;
                let zipped = Bytes::from(zipped);
                rendered.gzip = Some(zipped.clone());
                Some(Served::Whole(zipped))
            }
            (false, Some(plain), _) => Some(Served::Whole(plain.clone())),
            (false, None, Some(zipped)) => Some(Served::Inflated(zipped.clone())),
            (_, None, None) => None,
        }
    }
}

/// Text inflated from a gzipped body at a time: a fraction of a
/// millisecond of the runtime's thread per piece.
const INFLATED_PIECE: usize = 64 << 10;

/// The text of a gzipped body, inflated piece by piece as the client
/// takes it: a scraper that does not ask for gzip never makes the agent
/// hold the whole text of a large body.
fn inflated(zipped: Bytes) -> axum::body::Body {
    use std::io::Read;
    let decoder = flate2::read::GzDecoder::new(std::io::Cursor::new(zipped));
    let pieces = futures::stream::unfold(Some(decoder), |decoder| async move {
        let mut decoder = decoder?;
        let mut piece = vec![0; INFLATED_PIECE];
        let mut filled = 0;
        while filled < piece.len() {
            match decoder.read(&mut piece[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                // Our own gzip does not fail to inflate; if it did, the
                // response ends early rather than with wrong text.
                Err(e) => return Some((Err(e), None)),
            }
        }
        if filled == 0 {
            return None;
        }
        piece.truncate(filled);
        Some((Ok(Bytes::from(piece)), Some(decoder)))
    });
    axum::body::Body::from_stream(pieces)
}

/// Whether the request accepts a gzip body (`Accept-Encoding: gzip`, not
/// with `q=0`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/openmetrics-text"))
}

pub(super) async fn metrics_handler(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let openmetrics = wants_openmetrics(&headers);
    let gzip = accepts_gzip(&headers);
    // Bounded by each poller's timeout; the only wait a scrape has.
    let pollers = state.pollers.now();
    join_all(pollers.iter().map(|p| p.collect())).await;
    let asked = Instant::now();
    match state
        .bodies
        .get(&state.exposition, openmetrics, asked, gzip)
        .await
    {
        Some(body) => {
            let content_type = if openmetrics {
                metrics::OPENMETRICS_CONTENT_TYPE
            } else {
                metrics::TEXT_CONTENT_TYPE
            };
            let body = match body {
                Served::Whole(bytes) => axum::body::Body::from(bytes),
                Served::Inflated(zipped) => inflated(zipped),
            };
            let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
            let h = response.headers_mut();
            h.insert(
                header::VARY,
                header::HeaderValue::from_static("Accept-Encoding"),
            );
            if gzip {
                h.insert(
                    header::CONTENT_ENCODING,
                    header::HeaderValue::from_static("gzip"),
                );
            }
            response
        }
        _ => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "encoding metrics failed\n",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::body::gunzip;
    use crate::model::testing::bots;
    use crate::model::{ClusterState, SharedCluster};

    /// The bytes of a body served whole.
    fn whole(served: Option<Served>) -> Bytes {
        match served {
            Some(Served::Whole(bytes)) => bytes,
            other => panic!("not a whole body: {other:?}"),
        }
    }

    /// The text a response body carries, however it is sent.
    async fn collect(body: axum::body::Body) -> Vec<u8> {
        axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_scrapes_share_one_body_and_none_gets_an_older_one() {
        let cluster = SharedCluster::new(ClusterState::new("c".into(), Vec::new(), false));
        let exposition = Arc::new(Exposition::new(vec![cluster]));
        let bodies = Arc::new(Bodies::default());
        let asked = Instant::now();
        let scrapes = (0..8).map(|_| {
            let (bodies, exposition) = (bodies.clone(), exposition.clone());
            tokio::spawn(async move { whole(bodies.get(&exposition, false, asked, false).await) })
        });
        let got: Vec<Bytes> = join_all(scrapes)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert!(
            got.iter().all(|b| b.as_ptr() == got[0].as_ptr()),
            "one render for eight scrapes that asked before it began"
        );
        // Asked after that render began: a fresh body, never the old one.
        let later = whole(bodies.get(&exposition, false, Instant::now(), false).await);
        assert_ne!(later.as_ptr(), got[0].as_ptr());
        // The other format has its own body.
        let om = whole(bodies.get(&exposition, true, asked, false).await);
        assert!(String::from_utf8_lossy(&om).ends_with("# EOF\n"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_gzip_body_is_the_plain_body_compressed_once() {
        let cluster = SharedCluster::new(ClusterState::new("c".into(), Vec::new(), false));
        let exposition = Arc::new(Exposition::new(vec![cluster]));
        let bodies = Bodies::default();
        let asked = Instant::now();
        let zipped = whole(bodies.get(&exposition, false, asked, true).await);
        let plain = whole(bodies.get(&exposition, false, asked, false).await);
        let again = whole(bodies.get(&exposition, false, asked, true).await);
        assert_eq!(zipped.as_ptr(), again.as_ptr(), "compressed once");
        assert_eq!(
            gunzip(&zipped).as_bytes(),
            &plain[..],
            "exactly the plain body"
        );
        assert!(zipped.len() < plain.len());
    }

    /// A body past the threshold is kept only compressed, whoever asked
    /// first; a scraper that does not take gzip gets it inflated as it is
    /// sent, the same text as a plain render; one below the threshold
    /// stays as it was (text, compressed on demand).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_body_is_kept_compressed_and_inflated_for_a_plain_scraper() {
        let cluster = SharedCluster::new(bots(500));
        let exposition = Arc::new(Exposition::new(vec![cluster.clone()]).zipping_past(4096));
        let reference = Exposition::new(vec![cluster]);
        let bodies = Bodies::default();
        let asked = Instant::now();
        let zipped = whole(bodies.get(&exposition, false, asked, true).await);
        {
            let slot = bodies.slots[0].lock().await;
            let kept = slot.as_ref().unwrap();
            assert!(kept.plain.is_none(), "the text is not kept beside its gzip");
            assert_eq!(kept.gzip.as_ref().unwrap().as_ptr(), zipped.as_ptr());
        }
        let text = gunzip(&zipped);
        assert!(
            text.len() > 20 * 4096,
            "the body is well past the threshold"
        );
        let plain = match bodies.get(&exposition, false, asked, false).await {
            Some(Served::Inflated(z)) => collect(inflated(z)).await,
            other => panic!("not inflated: {other:?}"),
        };
        assert_eq!(plain, text.as_bytes(), "inflated: the text of the gzip");
        // The same text a plain render makes (the families' values do not
        // move between the two renders of a model nothing writes to).
        let rendered = reference.render(false).unwrap();
        let strip = |t: &[u8]| {
            String::from_utf8(t.to_vec())
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with("zookeeper_election_masterless_seconds"))
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        };
        assert_eq!(strip(&plain), strip(rendered.as_bytes()));
        // Asked first without gzip: kept compressed all the same.
        let bodies = Bodies::default();
        let first = match bodies.get(&exposition, false, Instant::now(), false).await {
            Some(Served::Inflated(z)) => collect(inflated(z)).await,
            other => panic!("not inflated: {other:?}"),
        };
        assert_eq!(strip(&first), strip(rendered.as_bytes()));
        assert!(
            bodies.slots[0]
                .lock()
                .await
                .as_ref()
                .unwrap()
                .plain
                .is_none()
        );
        // Small (the default threshold): the text is kept, gzip on demand.
        let small = Arc::new(Exposition::new(vec![SharedCluster::new(bots(2))]));
        let bodies = Bodies::default();
        let zipped = whole(bodies.get(&small, false, Instant::now(), true).await);
        let kept = bodies.slots[0].lock().await;
        let kept = kept.as_ref().unwrap();
        assert_eq!(
            gunzip(&zipped).as_bytes(),
            &kept.plain.as_ref().unwrap()[..]
        );
    }

    #[test]
    fn gzip_is_used_only_when_asked() {
        let asks = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
            accepts_gzip(&h)
        };
        assert!(asks("gzip"));
        assert!(asks("identity, GZIP;q=0.5"));
        assert!(asks("*"));
        assert!(!asks("gzip;q=0"));
        assert!(!asks("br, deflate"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
