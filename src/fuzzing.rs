//! Entry points for the fuzz targets (`fuzz/`, run by `scripts/fuzz.sh`):
//! every parser that reads the outside world, fed arbitrary bytes. Each
//! must return, never panic. Kept in the library so the unit tests below
//! run every target over the fixtures on stable Rust, and a crash the
//! fuzzer finds becomes a regression test here.

use std::path::Path;

use crate::fourlw::{Command, interpret_detailed, parse};
use crate::model::candidate::{IdentityMode, parse_sequence};
use crate::sources::fourlw::admin::interpret_json;

/// The command a first byte selects.
fn command(selector: u8) -> Command {
    Command::ALL[usize::from(selector) % Command::ALL.len()]
}

/// A four-letter-word reply (first byte: which command), as it arrives:
/// bytes made text, interpreted; `cons` line by line too; the
/// `/zookeeper/config` member list.
pub fn fourlw_reply(data: &[u8]) {
    let Some((&selector, reply)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(reply);
    let _ = interpret_detailed(command(selector), &text);
    let _ = parse::refusal(&text);
    for line in text.lines() {
        if let Some(c) = parse::parse_cons_line(line) {
            let _ = c.host();
        }
    }
    let _ = parse::parse_members(&text);
}

/// An AdminServer answer (first byte: which command): its JSON. (The HTTP
/// answer around it is read by hyper's client.)
pub fn admin_json(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        let _ = interpret_json(command(selector), &json);
    }
}

/// Identities from node names and data under every mode, a mode spec
/// itself, and sequence suffixes. Layout: selector, name length, name,
/// data.
pub fn identity(data: &[u8]) {
    const MODES: [&str; 10] = [
        "data",
        "node",
        "json:/id",
        "json:/host/0/name",
        "regex:^([^-]+)-",
        "protobuf:1",
        "protobuf:1.2.3",
        "hbase",
        "hdfs",
        "flink",
    ];
    let [selector, len, rest @ ..] = data else {
        return;
    };
    let split = usize::from(*len).min(rest.len());
    let (name, node_data) = rest.split_at(split);
    let name = String::from_utf8_lossy(name);
    let _ = parse_sequence(&name);
    if let Ok(mode) = IdentityMode::parse(MODES[usize::from(*selector) % MODES.len()]) {
        let _ = mode.extract(&name, node_data);
    }
    if let Ok(mode) = IdentityMode::parse(&String::from_utf8_lossy(node_data)) {
        let _ = mode.extract(&name, node_data);
    }
}

/// A TOML configuration file.
pub fn config_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::parse_toml(text);
    }
}

/// A web configuration file (YAML); files it names are looked for in an
/// empty directory.
pub fn web_config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::webfile::parse_text(text, Path::new("/nonexistent"));
    }
}

/// The HTTP router as the server runs it, built once: over a cluster of
/// elections, plain (lifecycle on, its reloads answered) and behind basic
/// auth (user `fuzz`, password `fuzz`; lifecycle off).
struct Routers {
    runtime: tokio::runtime::Runtime,
    plain: axum::Router,
    secured: axum::Router,
}

fn routers() -> &'static Routers {
    use std::sync::{Arc, OnceLock};
    static ROUTERS: OnceLock<Routers> = OnceLock::new();
    ROUTERS.get_or_init(|| {
        use crate::http::{self, AppState};
        use crate::model::SharedCluster;
        use crate::model::web::WebStats;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the router");
        // Connected and listed: `/ready` answers 200, so any 5xx at all
        // is a defect.
        let cluster = SharedCluster::new(crate::model::testing::bots(50));
        cluster.session_started(
            7,
            std::time::Duration::from_secs(10),
            crate::model::now::Now::current(),
        );
        let clusters = vec![cluster];
        let stats = Arc::new(WebStats::new(64));
        let (state, mut reloads) = AppState::detached(clusters.clone(), stats.clone(), true);
        runtime.spawn(async move {
            while let Some(reply) = reloads.recv().await {
                let _ = reply.send(Ok("nothing changed".into()));
            }
        });
        let plain = http::secured(
            state,
            Arc::new(http::auth::Web::new(Default::default(), stats)),
        );
        let stats = Arc::new(WebStats::new(64));
        let (state, _) = AppState::detached(clusters, stats.clone(), false);
        let users = [(
            "fuzz".to_owned(),
            bcrypt::hash("fuzz", 4).expect("a bcrypt hash"),
        )]
        .into_iter()
        .collect();
        let web = crate::config::webfile::WebFile {
            users,
            ..Default::default()
        };
        let secured = http::secured(state, Arc::new(http::auth::Web::new(web, stats)));
        Routers {
            runtime,
            plain,
            secured,
        }
    })
}

/// Methods a first byte selects (the last one no server knows).
const METHODS: [&str; 10] = [
    "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "FUZZ",
];

/// The longest answer the router may give this model (its largest body,
/// `/metrics` for 50 elections, is far below).
const ROUTER_ANSWER_MAX: usize = 8 << 20;

/// A request target as a client may send it: bytes a URI cannot hold are
/// percent-encoded, so that nearly every input reaches the router.
fn target(raw: &[u8]) -> String {
    let mut t = String::with_capacity(raw.len() + 1);
    if raw.first() != Some(&b'/') {
        t.push('/');
    }
    for &b in raw {
        if b.is_ascii_graphic() && !b"\"#<>\\^`{|}".contains(&b) {
            t.push(char::from(b));
        } else {
            t.push_str(&format!("%{b:02X}"));
        }
    }
    t
}

/// One HTTP request to the real router, in process. Layout: method byte,
/// flags byte (bit 0: behind basic auth), the target up to `\n`, header
/// lines `name:value` up to an empty line, then the body. Whatever it is,
/// the router must answer, below 500, within a bounded size and time.
pub fn router(data: &[u8]) {
    let [method, flags, rest @ ..] = data else {
        return;
    };
    let mut lines = rest.splitn(2, |b| *b == b'\n');
    let raw_target = lines.next().unwrap_or_default();
    let mut rest = lines.next().unwrap_or_default();
    let mut request = axum::http::Request::builder()
        .method(METHODS[usize::from(*method) % METHODS.len()])
        .uri(target(raw_target));
    loop {
        let (line, after) = match rest.iter().position(|b| *b == b'\n') {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => (rest, &[][..]),
        };
        rest = after;
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            break;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name),
            axum::http::HeaderValue::from_bytes(value.trim_ascii()),
        ) {
            request = request.header(name, value);
        }
    }
    let Ok(request) = request.body(axum::body::Body::from(rest.to_vec())) else {
        return;
    };
    let routers = routers();
    let router = if flags & 1 == 1 {
        routers.secured.clone()
    } else {
        routers.plain.clone()
    };
    let shown = format!("{} {}", request.method(), request.uri());
    routers.runtime.block_on(async move {
        use tower::ServiceExt;
        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            let response = router
                .oneshot(request)
                .await
                .expect("the router never fails");
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), ROUTER_ANSWER_MAX).await;
            (status, body)
        })
        .await;
        let Ok((status, body)) = answer else {
            panic!("{shown}: no answer within 10 s");
        };
        assert!(
            !status.is_server_error(),
            "{shown}: {status} {:?}",
            body.as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
        );
        assert!(
            body.is_ok(),
            "{shown}: the body is over {ROUTER_ANSWER_MAX} bytes"
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `dir`, recursively.
    fn files(dir: &Path, out: &mut Vec<Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else {
                out.push(std::fs::read(&path).unwrap());
            }
        }
    }

    /// Inputs the fuzzer once crashed on, per target
    /// (`tests/fuzz-regressions/<target>/`).
    #[test]
    fn inputs_that_once_crashed_are_taken() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
        type Target = fn(&[u8]);
        let targets: [(&str, Target); 6] = [
            ("fourlw_reply", fourlw_reply),
            ("admin_json", admin_json),
            ("identity", identity),
            ("config_toml", config_toml),
            ("web_config", web_config),
            ("router", router),
        ];
        let mut seen = 0;
        for (name, target) in targets {
            let mut inputs = Vec::new();
            let dir = root.join(name);
            if dir.is_dir() {
                files(&dir, &mut inputs);
            }
            for input in inputs {
                target(&input);
                seen += 1;
            }
        }
        assert!(seen >= 1);
    }

    /// The `since`/`until` values that once panicked the timeline's
    /// handler (and leaked the connection's slot) answer 400 now.
    #[test]
    fn the_timeline_bounds_that_once_panicked_are_refused() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions/router");
        let mut inputs = Vec::new();
        files(&root, &mut inputs);
        assert!(inputs.len() >= 4);
        for input in inputs {
            router(&input);
        }
    }

    /// Paths the router serves, and a few it does not.
    const PATHS: [&str; 14] = [
        "/",
        "/metrics",
        "/healthz",
        "/-/healthy",
        "/ready",
        "/-/ready",
        "/-/reload",
        "/api/v1/status",
        "/api/v1/trees",
        "/api/v1/elections/bots/bot_1",
        "/api/v1/elections/",
        "/api/v1/events",
        "/api/v1/nothing",
        "/%2e%2e/etc/passwd",
    ];
    /// Query keys the handlers read.
    const KEYS: [&str; 6] = ["since", "until", "limit", "kind", "cluster", "election"];
    /// Values near the edges of what a number or a time can hold.
    const EDGES: [&str; 14] = [
        "1e19",
        "9223372036854775807",
        "18446744073709551616",
        "1e308",
        "-1",
        "inf",
        "NaN",
        "0",
        "2026-11-30T03:12:00Z",
        "99999-01-01T00:00:00Z",
        "switch,masterless",
        "%ff%fe",
        "/bots/bot_1",
        "",
    ];
    /// Headers that change what a handler does.
    const HEADERS: [&str; 6] = [
        "accept",
        "accept-encoding",
        "authorization",
        "content-type",
        "content-length",
        "x-forwarded-for",
    ];

    fn request_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let path = prop_oneof![
            3 => proptest::sample::select(&PATHS[..]).prop_map(str::to_owned),
            1 => "/[ -~]{0,40}",
        ];
        let value = prop_oneof![
            2 => proptest::sample::select(&EDGES[..]).prop_map(str::to_owned),
            1 => "[ -~]{0,24}",
        ];
        let key = prop_oneof![
            3 => proptest::sample::select(&KEYS[..]).prop_map(str::to_owned),
            1 => "[a-z]{0,8}",
        ];
        let auth = prop_oneof![
            Just("Basic ZnV6ejpmdXp6".to_owned()),
            Just("Basic ZnV6ejp3cm9uZw==".to_owned()),
            "[ -~]{0,30}",
        ];
        let header = (proptest::sample::select(&HEADERS[..]), "[ -~]{0,40}", auth).prop_map(
            |(name, value, auth)| {
                let value = if name == "authorization" { auth } else { value };
                format!("{name}:{value}")
            },
        );
        (
            any::<u8>(),
            any::<bool>(),
            path,
            proptest::collection::vec((key, value), 0..4),
            proptest::collection::vec(header, 0..4),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
            .prop_map(|(method, secured, path, query, headers, body)| {
                let mut bytes = vec![method, u8::from(secured)];
                bytes.extend_from_slice(path.as_bytes());
                for (i, (k, v)) in query.iter().enumerate() {
                    bytes.push(if i == 0 { b'?' } else { b'&' });
                    bytes.extend_from_slice(format!("{k}={v}").as_bytes());
                }
                bytes.push(b'\n');
                for h in headers {
                    bytes.extend_from_slice(h.as_bytes());
                    bytes.push(b'\n');
                }
                bytes.push(b'\n');
                bytes.extend_from_slice(&body);
                bytes
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(3000))]
        /// Requests built from what the handlers read, edge values and
        /// arbitrary text: every one answered below 500, bounded.
        #[test]
        fn the_router_answers_every_request_below_500(bytes in request_bytes()) {
            router(&bytes);
        }

        /// Arbitrary bytes in the router's layout.
        #[test]
        fn the_router_takes_arbitrary_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            router(&bytes);
        }
    }

    #[test]
    fn a_dump_expiry_date_out_of_range_is_no_date() {
        assert!(
            parse::parse_dump(
                "SessionTracker dump:\nexpire at Mon Nov 30 09:30:17 UTC 2026:\n\t0x1\n"
            )
            .is_ok()
        );
        let crash = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fuzz-regressions/fourlw_reply/dump-expiry-date-overflow"),
        )
        .unwrap();
        fourlw_reply(&crash);
    }

    #[test]
    fn every_target_takes_every_fixture_and_its_mutilations() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut corpus = Vec::new();
        files(&root.join("tests/fixtures"), &mut corpus);
        corpus.push(std::fs::read(root.join("examples/config.toml")).unwrap());
        corpus.push(b"tls_server_config:\n  cert_file: a\n  key_file: b\n".to_vec());
        assert!(corpus.len() > 40, "{}", corpus.len());
        for bytes in &corpus {
            for cut in [0, 1, bytes.len() / 3, bytes.len() / 2, bytes.len()] {
                let cut = &bytes[..cut.min(bytes.len())];
                for selector in 0..11u8 {
                    let mut input = vec![selector];
                    input.extend_from_slice(cut);
                    fourlw_reply(&input);
                    admin_json(&input);
                    identity(&input);
                }
                config_toml(cut);
                web_config(cut);
            }
        }
    }
}
