//! `--web.config.file`: the exporter-toolkit web configuration every
//! Prometheus exporter takes (YAML: `tls_server_config`,
//! `http_server_config`, `basic_auth_users`), turned into a rustls server
//! config, bcrypt users and response headers. Relative paths are read
//! from the file's directory, as the toolkit does.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

mod client_auth;
mod yaml;

/// A usable web configuration.
#[derive(Debug, Clone, Default)]
pub struct WebFile {
    /// `None`: plain HTTP.
    pub tls: Option<Arc<ServerConfig>>,
    /// User name → bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
    /// Extra response headers (`http_server_config.headers`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// What is wrong with a web config, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key, dotted (`tls_server_config.cert_file`), or empty for the
    /// whole file.
    pub key: String,
    pub message: String,
}

impl fmt::Display for WebConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "web config {}: {}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "web config {}: {}: {}",
                self.file.display(),
                self.key,
                self.message
            )
        }
    }
}

impl std::error::Error for WebConfigError {}

/// A loaded config and every file it was made from, so a change to any of
/// them (a rotated certificate) triggers a reload.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: WebFile,
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebConfig {
    tls_server_config: Option<RawTls>,
    http_server_config: Option<RawHttp>,
    basic_auth_users: Option<BTreeMap<String, String>>,
    rate_limit: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    client_ca_file: Option<String>,
    client_ca: Option<String>,
    client_auth_type: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    cipher_suites: Option<Vec<String>>,
    curve_preferences: Option<Vec<String>>,
    prefer_server_cipher_suites: Option<bool>,
    client_allowed_sans: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

/// Headers the toolkit allows, with the values it allows (`None`: any).
const HEADERS: [(&str, Option<&[&str]>); 5] = [
    ("Content-Security-Policy", None),
    ("X-Frame-Options", Some(&["deny", "sameorigin"])),
    ("X-Content-Type-Options", Some(&["nosniff"])),
    ("X-XSS-Protection", None),
    ("Strict-Transport-Security", None),
];

/// Reads and checks `path` and every file it names.
pub fn load(path: &Path) -> Result<Loaded, WebConfigError> {
    let err = |key: &str, message: String| WebConfigError {
        file: path.to_owned(),
        key: key.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err("", format!("cannot read: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = vec![path.to_owned()];
    let config = parse(&text, dir, &mut files).map_err(|(key, message)| err(&key, message))?;
    Ok(Loaded { config, files })
}

/// A web config from `text`, with files named in it read relative to
/// `dir` (for checks and fuzzing).
pub fn parse_text(text: &str, dir: &Path) -> Result<WebFile, WebConfigError> {
    parse(text, dir, &mut Vec::new()).map_err(|(key, message)| WebConfigError {
        file: PathBuf::from("<text>"),
        key,
        message,
    })
}

/// A fingerprint of the files' contents (missing files included), cheap
/// enough to take every second: a change means "reload".
pub fn fingerprint(files: &[PathBuf]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        f.hash(&mut h);
        match std::fs::read(f) {
            Ok(bytes) => bytes.hash(&mut h),
            Err(e) => e.kind().hash(&mut h),
        }
    }
    h.finish()
}

type Invalid = (String, String);

fn invalid(key: &str, message: impl Into<String>) -> Invalid {
    (key.to_owned(), message.into())
}

/// Parses the YAML text; files named in it are read relative to `dir` and
/// appended to `files`.
fn parse(text: &str, dir: &Path, files: &mut Vec<PathBuf>) -> Result<WebFile, Invalid> {
    let raw: RawWebConfig =
        yaml::from_str(text).map_err(|(key, message)| invalid(&key, message))?;
    if raw.rate_limit.is_some() {
        return Err(invalid(
            "rate_limit",
            "is not supported by this exporter; remove it (scrapes share one rendered body, so a burst of scrapes costs one render)",
        ));
    }
    let mut config = WebFile::default();
    let http = raw.http_server_config.unwrap_or_default();
    let http2 = http.http2.unwrap_or(true);
    for (name, value) in http.headers.unwrap_or_default() {
        let key = format!("http_server_config.headers.{name}");
        let Some((canonical, allowed)) =
            HEADERS.iter().find(|(h, _)| h.eq_ignore_ascii_case(&name))
        else {
            let names: Vec<&str> = HEADERS.iter().map(|(h, _)| *h).collect();
            return Err(invalid(
                &key,
                format!(
                    "is not a header that may be set; one of {}",
                    names.join(", ")
                ),
            ));
        };
        if value.trim().is_empty() {
            continue;
        }
        if let Some(allowed) = allowed
            && !allowed.iter().any(|a| a.eq_ignore_ascii_case(value.trim()))
        {
            return Err(invalid(
                &key,
                format!("`{value}` is not allowed; one of {}", allowed.join(", ")),
            ));
        }
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| invalid(&key, "is not a valid header value"))?;
        let name = HeaderName::from_bytes(canonical.as_bytes())
            .map_err(|_| invalid(&key, "is not a valid header name"))?;
        config.headers.push((name, value));
    }
    for (user, hash) in raw.basic_auth_users.unwrap_or_default() {
        let key = format!("basic_auth_users.{user}");
        if user.is_empty() || user.contains(':') {
            return Err(invalid(&key, "a user name must be non-empty without `:`"));
        }
        if hash.parse::<bcrypt::HashParts>().is_err() {
            return Err(invalid(
                &key,
                "is not a bcrypt hash; make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
            ));
        }
        config.users.insert(user, hash);
    }
    if let Some(tls) = raw.tls_server_config {
        config.tls = Some(Arc::new(tls_config(tls, http2, dir, files)?));
    }
    Ok(config)
}

/// A PEM given inline or as a file (relative to `dir`), not both.
fn pem(
    inline: Option<String>,
    file: Option<String>,
    keys: (&str, &str),
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<Option<(Vec<u8>, String)>, Invalid> {
    let key = |k: &str| format!("tls_server_config.{k}");
    match (inline, file) {
        (Some(_), Some(_)) => Err(invalid(
            &key(keys.1),
            format!("set either `{}` or `{}`, not both", keys.0, keys.1),
        )),
        (Some(text), None) => Ok(Some((text.into_bytes(), key(keys.0)))),
        (None, Some(path)) => {
            let path = dir.join(path);
            files.push(path.clone());
            let bytes = std::fs::read(&path).map_err(|e| {
                invalid(&key(keys.1), format!("cannot read {}: {e}", path.display()))
            })?;
            Ok(Some((bytes, key(keys.1))))
        }
        (None, None) => Ok(None),
    }
}

fn tls_config(
    raw: RawTls,
    http2: bool,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<ServerConfig, Invalid> {
    if raw.client_allowed_sans.is_some() {
        return Err(invalid(
            "tls_server_config.client_allowed_sans",
            "is not supported by this exporter; restrict clients with client_ca_file (a CA that signs only the scrapers) instead",
        ));
    }
    let (cert, cert_key) = pem(raw.cert, raw.cert_file, ("cert", "cert_file"), dir, files)?
        .ok_or_else(|| {
            invalid(
                "tls_server_config.cert_file",
                "is required with tls_server_config",
            )
        })?;
    let (key, key_key) =
        pem(raw.key, raw.key_file, ("key", "key_file"), dir, files)?.ok_or_else(|| {
            invalid(
                "tls_server_config.key_file",
                "is required with tls_server_config",
            )
        })?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(&cert_key, format!("is not a PEM certificate: {e}")))?;
    if chain.is_empty() {
        return Err(invalid(&cert_key, "holds no PEM certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|e| invalid(&key_key, format!("holds no PEM private key: {e}")))?;
    let client_ca = pem(
        raw.client_ca,
        raw.client_ca_file,
        ("client_ca", "client_ca_file"),
        dir,
        files,
    )?;
    let provider = provider(raw.cipher_suites, raw.curve_preferences)?;
    let versions = versions(raw.min_version.as_deref(), raw.max_version.as_deref())?;
    let verifier = client_auth::verifier(
        raw.client_auth_type.as_deref().unwrap_or("NoClientCert"),
        client_ca,
        &provider,
    )?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| invalid("tls_server_config.min_version", e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| invalid(&key_key, format!("does not fit the certificate: {e}")))?;
    config.ignore_client_order = raw.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// The crypto provider, with `cipher_suites` (Go's names, which are the
/// IANA names rustls uses too; TLS 1.3 suites are always on, as in Go)
/// and `curve_preferences` applied.
fn provider(
    suites: Option<Vec<String>>,
    curves: Option<Vec<String>>,
) -> Result<Arc<rustls::crypto::CryptoProvider>, Invalid> {
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    if let Some(names) = suites.filter(|n| !n.is_empty()) {
        let offered: Vec<String> = p
            .cipher_suites
            .iter()
            .filter(|s| s.tls13().is_none())
            .map(|s| format!("{:?}", s.suite()))
            .collect();
        for n in &names {
            if !offered.contains(n) {
                return Err(invalid(
                    "tls_server_config.cipher_suites",
                    format!("`{n}` is not offered; one of {}", offered.join(", ")),
                ));
            }
        }
        p.cipher_suites
            .retain(|s| s.tls13().is_some() || names.contains(&format!("{:?}", s.suite())));
    }
    if let Some(names) = curves.filter(|n| !n.is_empty()) {
        let mut groups = Vec::new();
        for n in &names {
            let want = match n.as_str() {
                "CurveP256" => "secp256r1",
                "CurveP384" => "secp384r1",
                "CurveP521" => "secp521r1",
                other => other,
            };
            let Some(g) = p
                .kx_groups
                .iter()
                .find(|g| format!("{:?}", g.name()) == want)
            else {
                return Err(invalid(
                    "tls_server_config.curve_preferences",
                    format!(
                        "`{n}` is not offered; one of CurveP256, CurveP384, X25519, X25519MLKEM768"
                    ),
                ));
            };
            groups.push(*g);
        }
        p.kx_groups = groups;
    }
    Ok(Arc::new(p))
}

/// The versions between `min` (default TLS12) and `max` (default TLS13).
/// TLS 1.0 and 1.1 are not spoken: a minimum below 1.2 means 1.2.
fn versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, Invalid> {
    let rank = |key: &str, v: Option<&str>, default: u8| -> Result<u8, Invalid> {
        match v {
            None | Some("") => Ok(default),
            Some("TLS10") => Ok(10),
            Some("TLS11") => Ok(11),
            Some("TLS12") => Ok(12),
            Some("TLS13") => Ok(13),
            Some(other) => Err(invalid(
                key,
                format!("`{other}` is not a TLS version; one of TLS10, TLS11, TLS12, TLS13"),
            )),
        }
    };
    let min = rank("tls_server_config.min_version", min, 12)?;
    let max = rank("tls_server_config.max_version", max, 13)?;
    let versions: Vec<_> = [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
        .into_iter()
        .filter(|(v, _)| (min..=max).contains(v))
        .map(|(_, p)| p)
        .collect();
    if versions.is_empty() {
        return Err(invalid(
            "tls_server_config.max_version",
            "leaves no version this exporter speaks (TLS12, TLS13) between min_version and max_version",
        ));
    }
    Ok(versions)
}

#[cfg(test)]
pub(crate) mod tests;
