//! `[clusters.tls]`: TLS to ZooKeeper's `secureClientPort`, for the
//! session (the client library's rustls support) and for the four-letter
//! words and the AdminServer (our own rustls client, same certificates).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawZkTls {
    ca_file: Option<PathBuf>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    server_name: Option<String>,
}

/// Certificates for one cluster, read at start.
#[derive(Clone)]
pub struct ZkTls {
    ca_pem: String,
    identity: Option<(String, String)>,
    /// The name certificates must carry when `servers` are addresses.
    pub server_name: Option<String>,
    /// For four-letter words and the AdminServer.
    pub client: Arc<rustls::ClientConfig>,
    /// Where the CA came from, for messages.
    pub ca_file: PathBuf,
    /// Where the client certificate and its key came from (`check-config`).
    pub identity_files: Option<(PathBuf, PathBuf)>,
}

impl fmt::Debug for ZkTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkTls")
            .field("ca_file", &self.ca_file)
            .field("client_certificate", &self.identity.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl ZkTls {
    /// Feeds the certificate and key contents (which `Debug` hides) to a
    /// reload's fingerprint.
    pub(crate) fn hash_material(&self, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        self.ca_pem.hash(h);
        self.identity.hash(h);
    }

    /// Options for the ZooKeeper client library. With `server_name` set
    /// the library cannot check that name (it checks the host it dials),
    /// so only the chain is verified for the session: see
    /// docs/configuration.md.
    pub fn session_options(&self) -> Result<zookeeper_client::TlsOptions, String> {
        let mut o = zookeeper_client::TlsOptions::new()
            .with_pem_ca(&self.ca_pem)
            .map_err(|e| e.to_string())?;
        if let Some((cert, key)) = &self.identity {
            o = o.with_pem_identity(cert, key).map_err(|e| e.to_string())?;
        }
        if self.server_name.is_some() {
            // SAFETY (library contract): the chain is still verified
            // against `ca_file`; the four-letter words check the name.
            o = unsafe { o.with_no_hostname_verification() };
        }
        Ok(o)
    }

    /// The name to verify when dialling `server` (`host:port`).
    pub fn name_for(&self, server: &str) -> Option<ServerName<'static>> {
        let host = match &self.server_name {
            Some(n) => n.as_str(),
            None => host_of(server),
        };
        ServerName::try_from(host.to_owned()).ok()
    }
}

/// The host of `host:port` or `[v6]:port`.
fn host_of(server: &str) -> &str {
    let host = server.rsplit_once(':').map_or(server, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

pub(super) fn validate_tls(key: &str, raw: RawZkTls) -> Result<ZkTls, ConfigError> {
    let read = |k: &str, path: &Path| {
        std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new(
                format!("{key}.{k}"),
                format!("cannot read {}: {e}", path.display()),
            )
        })
    };
    let ca_file = raw.ca_file.ok_or_else(|| {
        ConfigError::new(
            format!("{key}.ca_file"),
            "is required: the CA that signed the servers' certificates (PEM)",
        )
    })?;
    let ca_pem = read("ca_file", &ca_file)?;
    let roots = roots(key, &ca_file, &ca_pem)?;
    let identity_files = raw.cert_file.clone().zip(raw.key_file.clone());
    let identity = match (raw.cert_file, raw.key_file) {
        (None, None) => None,
        (Some(c), Some(k)) => Some((read("cert_file", &c)?, read("key_file", &k)?)),
        _ => {
            return Err(ConfigError::new(
                key,
                "set both cert_file and key_file (a client certificate), or neither",
            ));
        }
    };
    if let Some(name) = &raw.server_name
        && ServerName::try_from(name.as_str()).is_err()
    {
        return Err(ConfigError::new(
            format!("{key}.server_name"),
            format!("`{name}` is not a DNS name or IP address"),
        ));
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| ConfigError::new(key, e.to_string()))?
    .with_root_certificates(roots);
    let client = match &identity {
        None => builder.with_no_client_auth(),
        Some((cert, pem_key)) => with_client_certificate(key, builder, cert, pem_key)?,
    };
    let tls = ZkTls {
        ca_pem,
        identity,
        server_name: raw.server_name,
        client: Arc::new(client),
        ca_file,
        identity_files,
    };
    // The library parses the same PEM again; refuse what it refuses now.
    tls.session_options()
        .map_err(|e| ConfigError::new(key, format!("unusable by the ZooKeeper client: {e}")))?;
    Ok(tls)
}

/// The CA certificates of `ca_pem` (read from `ca_file`): at least one.
fn roots(key: &str, ca_file: &Path, ca_pem: &str) -> Result<rustls::RootCertStore, ConfigError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert
            .map_err(|e| ConfigError::new(format!("{key}.ca_file"), format!("is not PEM: {e}")))?;
        roots.add(cert).map_err(|e| {
            ConfigError::new(
                format!("{key}.ca_file"),
                format!("holds an unusable certificate: {e}"),
            )
        })?;
    }
    if roots.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.ca_file"),
            format!("{} holds no PEM certificate", ca_file.display()),
        ));
    }
    Ok(roots)
}

/// The client configuration presenting the certificate chain `cert` with
/// its private key `pem_key`.
fn with_client_certificate(
    key: &str,
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>,
    cert: &str,
    pem_key: &str,
) -> Result<rustls::ClientConfig, ConfigError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| ConfigError::new(format!("{key}.cert_file"), format!("is not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(ConfigError::new(
            format!("{key}.cert_file"),
            "holds no PEM certificate",
        ));
    }
    let private = PrivateKeyDer::from_pem_slice(pem_key.as_bytes()).map_err(|e| {
        ConfigError::new(
            format!("{key}.key_file"),
            format!("holds no PEM private key: {e}"),
        )
    })?;
    builder.with_client_auth_cert(chain, private).map_err(|e| {
        ConfigError::new(
            format!("{key}.key_file"),
            format!("does not fit the certificate: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_what_is_verified_unless_a_name_is_given() {
        assert_eq!(host_of("zk1.example:2281"), "zk1.example");
        assert_eq!(host_of("[::1]:2281"), "::1");
        assert_eq!(host_of("127.0.0.1:2281"), "127.0.0.1");
    }
}
