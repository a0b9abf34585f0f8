//! Building a client for a cluster, backing off between failed attempts,
//! and saying in operator terms why a connect or a tree sync failed.

use std::time::{Duration, SystemTime};

use zookeeper_client::Client;

use crate::config::kerberos::Kerberos;
use crate::config::{Auth, AuthScheme, ClusterConfig};
use crate::model::backoff::Backoff;
use crate::model::tree::TreePattern;

/// The wait between connect attempts: from a quarter second up to 30 s,
/// with a little jitter so several agents do not reconnect in lockstep.
pub fn connect_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(250), Duration::from_secs(30))
}

/// A jitter of 0 to 99 thousandths, from the clock's nanoseconds.
pub fn jitter() -> u32 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() % 100)
}

/// Explains a connect failure; when TLS is on and no server took the
/// session, one handshake of our own says why (the library only says "no
/// hosts").
pub async fn explain_connect_error(cfg: &ClusterConfig, e: &zookeeper_client::Error) -> String {
    let message = describe_connect_error(cfg, e);
    let (Some(tls), zookeeper_client::Error::NoHosts) = (&cfg.tls, e) else {
        return message;
    };
    for server in cfg.servers.iter().take(3) {
        let attempt = async {
            let stream = tokio::net::TcpStream::connect(server).await.ok()?;
            let failed = crate::sources::fourlw::client::handshake(server, stream, tls)
                .await
                .err()?;
            Some(format!(
                "the TLS handshake with {server} failed: {failed} (is its certificate signed by tls.ca_file {} and does it carry the name dialled? does the server take the client certificate?)",
                tls.ca_file.display()
            ))
        };
        if let Ok(Some(why)) = tokio::time::timeout(Duration::from_secs(3), attempt).await {
            return format!("{message}: {why}");
        }
    }
    message
}

/// Explains a connect failure in operator terms.
pub fn describe_connect_error(cfg: &ClusterConfig, e: &zookeeper_client::Error) -> String {
    let servers = cfg.servers.join(",");
    match e {
        zookeeper_client::Error::NoHosts => {
            format!(
                "no ZooKeeper server of [{servers}] accepted a session (refused or unreachable)"
            )
        }
        zookeeper_client::Error::Timeout => {
            format!("no session established with [{servers}] within the session timeout")
        }
        zookeeper_client::Error::AuthFailed => match &cfg.auth {
            Some(Auth::Kerberos(k)) => format!(
                "[{servers}] refused the agent's Kerberos ticket for {} ({}): see the servers' log (their keytab and principal, their clock against the KDC's)",
                k.service_for(cfg.servers.first().map_or("", String::as_str)),
                cfg.auth.as_ref().map(Auth::origin).unwrap_or_default()
            ),
            Some(a) => format!(
                "authentication to [{servers}] failed with the {} credentials from {}",
                a.label(),
                a.origin()
            ),
            None if cfg.tls.is_some() => format!(
                "[{servers}] refused the session: it requires authentication (a TLS client certificate it accepts, or SASL when enforce.auth.enabled / sessionRequireClientSASLAuth is set); check tls or configure [clusters.auth]"
            ),
            None => format!(
                "[{servers}] refused the session: it requires authentication (enforce.auth.enabled or sessionRequireClientSASLAuth on the servers); configure [clusters.auth] (SASL GSSAPI for Kerberos, DIGEST-MD5)"
            ),
        },
        other => format!("cannot connect to [{servers}]: {other}"),
    }
}

/// Explains a tree sync failure, with what to do about it.
pub fn describe_sync_error(
    cfg: &ClusterConfig,
    pattern: &TreePattern,
    e: &zookeeper_client::Error,
) -> String {
    match e {
        zookeeper_client::Error::NoAuth => format!(
            "not authorized to read {} (ACL); {}",
            pattern.root(),
            match &cfg.auth {
                Some(a) => format!(
                    "check the {} credentials from {} and that its ACL grants them read",
                    a.label(),
                    a.origin()
                ),
                None => "configure `auth` for this cluster".to_owned(),
            }
        ),
        zookeeper_client::Error::Unimplemented => format!(
            "the server does not support persistent recursive watches on {} (needs ZooKeeper 3.6 or newer; set watch_mode = \"oneshot\" for older servers)",
            pattern.root()
        ),
        other => format!("cannot watch and list {}: {other}", pattern.root()),
    }
}

/// A new client for the cluster, with its credentials.
pub async fn connect(cfg: &ClusterConfig) -> Result<Client, zookeeper_client::Error> {
    let connector = Client::connector()
        .with_connection_timeout(cfg.session_timeout.min(Duration::from_secs(5)));
    dial(cfg, connector).await
}

/// Connects `connector` with the cluster's session timeout, credentials
/// (digest or SASL) and TLS.
pub async fn dial(
    cfg: &ClusterConfig,
    mut connector: zookeeper_client::Connector,
) -> Result<Client, zookeeper_client::Error> {
    connector = connector
        .with_session_timeout(cfg.session_timeout)
        .with_fail_eagerly();
    match &cfg.auth {
        Some(Auth::Password(auth)) => {
            connector = match auth.scheme {
                AuthScheme::Digest => {
                    connector.with_auth("digest", auth.credentials.expose().as_bytes())
                }
                AuthScheme::SaslDigestMd5 => {
                    let (user, password) = auth.user_password();
                    connector.with_sasl(zookeeper_client::SaslOptions::digest_md5(
                        user.to_owned(),
                        password.to_owned(),
                    ))
                }
            };
        }
        Some(Auth::Kerberos(k)) => connector = with_kerberos(connector, k)?,
        None => {}
    }
    match &cfg.tls {
        Some(tls) => {
            let options = tls.session_options().map_err(|_| {
                // Checked when the config was loaded; only a file swapped
                // since could fail here.
                zookeeper_client::Error::BadArguments(&"TLS certificates unusable")
            })?;
            connector
                .with_tls(options)
                .secure_connect(&cfg.connect_string())
                .await
        }
        None => connector.connect(&cfg.connect_string()).await,
    }
}

/// GSSAPI with the servers' principal: `service_name` and, when set,
/// `server_name` for its host (else each server's host as dialled).
#[cfg(feature = "kerberos")]
fn with_kerberos(
    connector: zookeeper_client::Connector,
    k: &Kerberos,
) -> Result<zookeeper_client::Connector, zookeeper_client::Error> {
    let mut options = zookeeper_client::SaslOptions::gssapi().with_username(k.service_name.clone());
    if let Some(host) = &k.server_name {
        options = options.with_hostname(host.clone());
    }
    Ok(connector.with_sasl(options))
}

/// Never reached: configuration refuses GSSAPI in a build without it.
#[cfg(not(feature = "kerberos"))]
fn with_kerberos(
    _connector: zookeeper_client::Connector,
    _k: &Kerberos,
) -> Result<zookeeper_client::Connector, zookeeper_client::Error> {
    Err(zookeeper_client::Error::BadArguments(
        &"this build has no Kerberos support",
    ))
}
