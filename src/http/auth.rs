//! The live web configuration: basic authentication (bcrypt, checked once
//! per password and then remembered) and the configured response headers,
//! applied to every request; reloaded when its files change.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use tokio::sync::{Semaphore, watch};
use tracing::{info, warn};

use crate::config::webfile::{self, WebFile};
use crate::model::web::WebStats;

/// A cost-10 hash checked (and its result discarded) for unknown users, so
/// that a wrong user name takes as long as a wrong password.
const DECOY: &str = "$2y$10$qCDRYhssom.6KWvxbiz48OF6cXnkhGCu3rt5LUKYIY46sfNX2VEa6";
/// Remembered good credentials at most (then forgotten all at once).
const CACHE_MAX: usize = 1024;

/// The web configuration in force, its counters and the credentials
/// already checked.
#[derive(Debug)]
pub struct Web {
    current: RwLock<Arc<WebFile>>,
    pub stats: Arc<WebStats>,
    /// SHA-256 of user, hash and password that bcrypt accepted: a scrape
    /// every 15 s must not cost a bcrypt each (70 ms at cost 10).
    checked: Mutex<HashSet<[u8; 32]>>,
    /// bcrypt runs at most two at a time: a flood of wrong passwords takes
    /// two threads, not the blocking pool.
    bcrypt: Semaphore,
}

impl Web {
    pub fn new(config: WebFile, stats: Arc<WebStats>) -> Self {
        stats.set_tls(config.tls.is_some());
        Self {
            current: RwLock::new(Arc::new(config)),
            stats,
            checked: Mutex::default(),
            bcrypt: Semaphore::new(2),
        }
    }

    pub fn current(&self) -> Arc<WebFile> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn replace(&self, config: WebFile) {
        self.stats.reloaded(true, config.tls.is_some());
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
    }

    /// Whether `user`/`password` is allowed by `config`.
    async fn allows(&self, config: &WebFile, user: &str, password: &str) -> bool {
        let hash = config.users.get(user);
        let key = digest(user, hash.map_or("", String::as_str), password);
        if hash.is_some()
            && self
                .checked
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&key)
        {
            return true;
        }
        let Ok(_permit) = self.bcrypt.acquire().await else {
            return false;
        };
        let (hash_owned, password) = (
            hash.cloned().unwrap_or_else(|| DECOY.to_owned()),
            password.to_owned(),
        );
        let ok = tokio::task::spawn_blocking(move || {
            bcrypt::verify(password, &hash_owned).unwrap_or(false)
        })
        .await
        .unwrap_or(false)
            && hash.is_some();
        if ok {
            let mut checked = self.checked.lock().unwrap_or_else(|p| p.into_inner());
            if checked.len() >= CACHE_MAX {
                checked.clear();
            }
            checked.insert(key);
        }
        ok
    }
}

fn digest(user: &str, hash: &str, password: &str) -> [u8; 32] {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for part in [user, hash, password] {
        ctx.update(&(part.len() as u64).to_le_bytes());
        ctx.update(part.as_bytes());
    }
    let mut out = [0; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// `Authorization: Basic …` as user and password.
fn credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// Middleware: basic auth on every path but `/healthz` and `/-/healthy`
/// (a liveness probe carries no credentials and learns nothing but "ok"),
/// then the configured headers on every response.
pub async fn guard(State(web): State<Arc<Web>>, request: Request, next: Next) -> Response {
    let config = web.current();
    let open = config.users.is_empty() || matches!(request.uri().path(), "/healthz" | "/-/healthy");
    let allowed = open
        || match credentials(request.headers()) {
            Some((user, password)) => web.allows(&config, &user, &password).await,
            None => false,
        };
    let mut response = if allowed {
        next.run(request).await
    } else {
        web.stats.refused_credentials();
        let mut r = (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"zk-election-exporter\""),
        );
        r
    };
    for (name, value) in &config.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}

/// How often the web config and the files it names are looked at.
pub const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// Re-reads the web config when it or a file it names changes; a broken
/// edit keeps the config in force, is logged once and counted.
pub async fn watch_file(
    web: Arc<Web>,
    path: PathBuf,
    mut files: Vec<PathBuf>,
    mut stop: watch::Receiver<bool>,
) {
    let mut seen = webfile::fingerprint(&files);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(RELOAD_CHECK) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let now = {
            let files = files.clone();
            tokio::task::spawn_blocking(move || webfile::fingerprint(&files))
                .await
                .unwrap_or(seen)
        };
        if now == seen {
            continue;
        }
        let loaded = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || webfile::load(&path)).await
        };
        match loaded {
            Ok(Ok(loaded)) => {
                info!(file = %path.display(), tls = loaded.config.tls.is_some(), "web config reloaded");
                files = loaded.files;
                web.replace(loaded.config);
                seen = webfile::fingerprint(&files);
            }
            Ok(Err(e)) => {
                web.stats.reloaded(false, false);
                warn!("{e}; keeping the web config in force until the file is fixed");
                seen = now;
            }
            Err(_) => seen = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_from_a_basic_header_only() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::AUTHORIZATION, v.parse().unwrap());
            credentials(&m)
        };
        // "prom:se:cret" — a password may hold colons.
        assert_eq!(
            h("Basic cHJvbTpzZTpjcmV0"),
            Some(("prom".into(), "se:cret".into()))
        );
        assert_eq!(h("bearer cHJvbTpzZWNyZXQ="), None);
        assert_eq!(h("Basic !!!"), None);
        assert_eq!(credentials(&HeaderMap::new()), None);
    }

    #[test]
    fn the_decoy_is_a_bcrypt_hash_at_the_usual_cost() {
        let parts: bcrypt::HashParts = DECOY.parse().unwrap();
        assert_eq!(parts.get_cost(), 10);
    }

    #[tokio::test]
    async fn a_checked_password_is_remembered_and_a_wrong_one_is_not() {
        let hash = bcrypt::hash("secret", 4).unwrap();
        let mut file = WebFile::default();
        file.users.insert("prom".into(), hash);
        let web = Web::new(file.clone(), Arc::new(WebStats::new(8)));
        assert!(web.allows(&file, "prom", "secret").await);
        assert!(!web.allows(&file, "prom", "wrong").await);
        assert!(!web.allows(&file, "nobody", "secret").await);
        assert_eq!(web.checked.lock().unwrap().len(), 1);
        // The hash changed (a reload): the remembered check no longer applies.
        file.users
            .insert("prom".into(), bcrypt::hash("other", 4).unwrap());
        assert!(!web.allows(&file, "prom", "secret").await);
    }
}
