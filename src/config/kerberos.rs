//! `auth = { scheme = "sasl", mechanism = "GSSAPI", … }`: who the agent is
//! to a Kerberos-secured ZooKeeper and where its ticket comes from.
//!
//! The GSSAPI library reads the ticket per process (the default
//! credential: `KRB5CCNAME`, `KRB5_CLIENT_KTNAME`, `KRB5_CONFIG`), not per
//! connection, so one agent holds one Kerberos identity: every cluster that
//! uses GSSAPI must name the same principal, keytab or cache and krb5.conf
//! ([`shared_identity`]). What is per connection (the server's principal)
//! may differ between clusters.

use std::path::PathBuf;

use super::ConfigError;
use super::raw::RawAuth;

/// Where the agent's ticket comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TicketSource {
    /// A keytab: the agent obtains and renews its own tickets, kept in a
    /// private in-memory cache.
    Keytab(PathBuf),
    /// A credential cache somebody else fills and renews (`kinit`,
    /// `k5start`, a sidecar): `FILE:/path`, `KEYRING:…`, `DIR:…`.
    Cache(String),
    /// Neither configured: the process environment's default cache.
    Environment,
}

/// The part of a Kerberos configuration that holds for the whole process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KerberosIdentity {
    /// `agent@REALM`; `None` takes the cache's default principal.
    pub principal: Option<String>,
    pub source: TicketSource,
    /// `krb5_conf`; `None` leaves `KRB5_CONFIG` or `/etc/krb5.conf`.
    pub krb5_conf: Option<PathBuf>,
}

impl KerberosIdentity {
    /// The principal for messages: configured, or the cache's.
    pub fn principal_label(&self) -> String {
        self.principal
            .clone()
            .unwrap_or_else(|| "the cache's default principal".to_owned())
    }

    /// Where the ticket comes from, for messages (never a secret: keytab
    /// and cache are named, not read).
    pub fn source_label(&self) -> String {
        match &self.source {
            TicketSource::Keytab(p) => format!("keytab {}", p.display()),
            TicketSource::Cache(c) => format!("credential cache {c}"),
            TicketSource::Environment => "the default credential cache".to_owned(),
        }
    }
}

/// SASL GSSAPI settings of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Kerberos {
    pub identity: KerberosIdentity,
    /// Primary of the servers' principal (`zookeeper/host@REALM`); the Java
    /// client's `zookeeper.sasl.client.username`.
    pub service_name: String,
    /// Instance (host) of the servers' principal; `None` takes each
    /// server's host as written in `servers`.
    pub server_name: Option<String>,
}

impl Kerberos {
    /// The service the agent asks a ticket for when talking to `server`
    /// (`host:port`): `zookeeper@host`, host-based as GSSAPI names it.
    pub fn service_for(&self, server: &str) -> String {
        let host = match &self.server_name {
            Some(h) => h.clone(),
            None => host_of(server).to_owned(),
        };
        format!("{}@{host}", self.service_name)
    }
}

/// The host of `host:port` or `[v6]:port`.
fn host_of(server: &str) -> &str {
    let host = server.rsplit_once(':').map_or(server, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Whether this build can speak GSSAPI (the `kerberos` cargo feature).
pub const BUILT_WITH_KERBEROS: bool = cfg!(feature = "kerberos");

/// The keys only GSSAPI takes, as written, for "applies to GSSAPI only".
pub(super) fn gssapi_keys(a: &RawAuth) -> Vec<&'static str> {
    [
        ("principal", a.principal.is_some()),
        ("keytab", a.keytab.is_some()),
        ("credential_cache", a.credential_cache.is_some()),
        ("krb5_conf", a.krb5_conf.is_some()),
        ("service_name", a.service_name.is_some()),
        ("server_name", a.server_name.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect()
}

/// Validates a GSSAPI `auth` table; `built` is [`BUILT_WITH_KERBEROS`]
/// (a parameter so that the refusal of a build without it is tested).
pub(super) fn validate(key: &str, a: RawAuth, built: bool) -> Result<Kerberos, ConfigError> {
    if !built {
        return Err(ConfigError::new(
            format!("{key}.mechanism"),
            "this build has no Kerberos (GSSAPI) support: it was built without the `kerberos` \
             feature (which needs libkrb5-dev and libclang-dev); use a release artefact (the \
             tarball, the Debian package or the image) or `cargo build --release --features \
             kerberos`, or DIGEST-MD5, digest or TLS client certificates",
        ));
    }
    if a.credentials.is_some() || a.credentials_file.is_some() {
        return Err(ConfigError::new(
            key,
            "GSSAPI takes no password: set `principal` and `keytab`, or `credential_cache`, \
             instead of `credentials`/`credentials_file`",
        ));
    }
    let principal = a
        .principal
        .map(|p| {
            let p = p.trim().to_owned();
            if p.is_empty() || p.contains(char::is_whitespace) || p.starts_with('@') {
                Err(ConfigError::new(
                    format!("{key}.principal"),
                    format!("`{p}` is not a Kerberos principal; write \"name@REALM\""),
                ))
            } else {
                Ok(p)
            }
        })
        .transpose()?;
    let source = ticket_source(key, a.keytab, a.credential_cache, principal.is_some())?;
    if let Some(conf) = &a.krb5_conf
        && let Err(e) = std::fs::File::open(conf)
    {
        return Err(ConfigError::new(
            format!("{key}.krb5_conf"),
            format!("cannot read {}: {e}", conf.display()),
        ));
    }
    let service_name = a.service_name.unwrap_or_else(|| "zookeeper".to_owned());
    if service_name.is_empty() || service_name.contains(['/', '@', ' ']) {
        return Err(ConfigError::new(
            format!("{key}.service_name"),
            format!(
                "`{service_name}` is not the primary of a principal (the `zookeeper` of \
                 zookeeper/host@REALM)"
            ),
        ));
    }
    let server_name = a.server_name.map(|s| s.trim().to_owned());
    if let Some(s) = &server_name
        && (s.is_empty() || s.contains(['/', '@', ' ', ':']))
    {
        return Err(ConfigError::new(
            format!("{key}.server_name"),
            format!("`{s}` is not a host name (the `host` of zookeeper/host@REALM)"),
        ));
    }
    Ok(Kerberos {
        identity: KerberosIdentity {
            principal,
            source,
            krb5_conf: a.krb5_conf,
        },
        service_name,
        server_name,
    })
}

/// Where the agent's tickets come from: a keytab (which needs the
/// principal the agent is), a credential cache, or the environment.
fn ticket_source(
    key: &str,
    keytab: Option<std::path::PathBuf>,
    credential_cache: Option<String>,
    has_principal: bool,
) -> Result<TicketSource, ConfigError> {
    Ok(match (keytab, credential_cache) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::new(
                key,
                "set either `keytab` (the agent renews its own tickets) or `credential_cache` \
                 (renewed by kinit/k5start), not both",
            ));
        }
        (Some(keytab), None) => {
            if !has_principal {
                return Err(ConfigError::new(
                    format!("{key}.principal"),
                    format!(
                        "is required with a keytab: which of its principals the agent is \
                         (`klist -kt {}` lists them)",
                        keytab.display()
                    ),
                ));
            }
            if let Err(e) = std::fs::File::open(&keytab) {
                return Err(ConfigError::new(
                    format!("{key}.keytab"),
                    format!("cannot read {}: {e}", keytab.display()),
                ));
            }
            TicketSource::Keytab(keytab)
        }
        (None, Some(cache)) => {
            let cache = cache.trim().to_owned();
            if cache.is_empty() {
                return Err(ConfigError::new(
                    format!("{key}.credential_cache"),
                    "is empty; write e.g. \"FILE:/run/zk-election-exporter/krb5cc\"",
                ));
            }
            TicketSource::Cache(cache)
        }
        (None, None) => TicketSource::Environment,
    })
}

/// The one Kerberos identity of a configuration, or why clusters disagree.
/// `clusters` pairs each cluster's key with its GSSAPI settings, if any.
pub(super) fn shared_identity<'a>(
    clusters: impl IntoIterator<Item = (String, Option<&'a Kerberos>)>,
) -> Result<Option<KerberosIdentity>, ConfigError> {
    let mut first: Option<(String, &KerberosIdentity)> = None;
    for (key, kerberos) in clusters {
        let Some(k) = kerberos else { continue };
        match &first {
            None => first = Some((key, &k.identity)),
            Some((first_key, identity)) if *identity != &k.identity => {
                return Err(ConfigError::new(
                    format!("{key}.auth"),
                    format!(
                        "uses another Kerberos identity than {first_key}.auth (principal, keytab or \
                         credential cache, krb5_conf): one agent holds one Kerberos identity, as \
                         GSSAPI reads the ticket per process; run one agent per principal"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(first.map(|(_, i)| i.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawAuth {
        RawAuth {
            scheme: Some("sasl".into()),
            mechanism: Some("GSSAPI".into()),
            credentials: None,
            credentials_file: None,
            principal: None,
            keytab: None,
            credential_cache: None,
            krb5_conf: None,
            service_name: None,
            server_name: None,
        }
    }

    #[test]
    fn a_build_without_the_feature_refuses_gssapi_and_says_what_to_do() {
        let e = validate("clusters[0].auth", raw(), false).unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("clusters[0].auth.mechanism: this build has no Kerberos"));
        assert!(text.contains("libkrb5-dev"), "{text}");
    }

    #[test]
    fn the_service_is_the_servers_host_unless_named() {
        let mut k = validate("a", raw(), true).unwrap();
        assert_eq!(k.identity.source, TicketSource::Environment);
        assert_eq!(
            k.service_for("zk1.example.com:2181"),
            "zookeeper@zk1.example.com"
        );
        assert_eq!(k.service_for("[::1]:2181"), "zookeeper@::1");
        k.server_name = Some("zk.internal".into());
        k.service_name = "zk".into();
        assert_eq!(k.service_for("10.0.0.1:2181"), "zk@zk.internal");
    }

    #[test]
    fn a_keytab_needs_a_principal_and_passwords_are_refused() {
        let mut a = raw();
        a.keytab = Some("/etc/hostname".into());
        let e = validate("k", a, true).unwrap_err().to_string();
        assert!(
            e.starts_with("k.principal: is required with a keytab"),
            "{e}"
        );
        let mut a = raw();
        a.credentials = Some(super::super::Secret::new("a:b"));
        let e = validate("k", a, true).unwrap_err().to_string();
        assert!(e.contains("GSSAPI takes no password"), "{e}");
        let mut a = raw();
        a.keytab = Some("/nonexistent/agent.keytab".into());
        a.principal = Some("agent@R".into());
        let e = validate("k", a, true).unwrap_err().to_string();
        assert!(
            e.starts_with("k.keytab: cannot read /nonexistent/agent.keytab"),
            "{e}"
        );
    }

    #[test]
    fn clusters_must_share_one_identity() {
        let mut a = raw();
        a.principal = Some("agent@R".into());
        let one = validate("a", a, true).unwrap();
        let mut other = one.clone();
        other.server_name = Some("elsewhere".into());
        let shared = shared_identity([
            ("clusters[0]".to_owned(), Some(&one)),
            ("clusters[1]".to_owned(), None),
            ("clusters[2]".to_owned(), Some(&other)),
        ])
        .unwrap();
        assert_eq!(shared.unwrap().principal.as_deref(), Some("agent@R"));
        let mut third = one.clone();
        third.identity.principal = Some("other@R".into());
        let e = shared_identity([
            ("clusters[0]".to_owned(), Some(&one)),
            ("clusters[1]".to_owned(), Some(&third)),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("clusters[1].auth: uses another Kerberos identity than clusters[0].auth"),
            "{e}"
        );
    }
}
