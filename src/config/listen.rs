//! `--web.listen-address` as Prometheus exporters take it (exporter-toolkit):
//! `:PORT` for every address of the host, `HOST:PORT` with a name resolved
//! when the agent binds, `IP:PORT` and `[IPv6]:PORT`; the flag may be given
//! more than once, and `[web] listen_address` may be one address or a list.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// One address the web server listens on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListenAddress {
    /// `:PORT`: every address of the host, IPv6 and IPv4.
    Any(u16),
    /// `0.0.0.0:9141`, `[::1]:9141`.
    Ip(SocketAddr),
    /// `localhost:9141`: every address the name resolves to when the agent
    /// starts.
    Name(String, u16),
}

impl ListenAddress {
    /// Reads one address; the error says what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bad = |why: &str| {
            format!(
                "`{text}` {why}: give `:PORT` (every address), `HOST:PORT`, `IP:PORT` or \
                 `[IPv6]:PORT`, e.g. \":9141\", \"localhost:9141\", \"0.0.0.0:9141\", \"[::1]:9141\""
            )
        };
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(bad("has no port"));
        };
        let port: u16 = port
            .parse()
            .map_err(|_| bad("has no port number from 0 to 65535"))?;
        if host.is_empty() {
            return Ok(Self::Any(port));
        }
        if let Some(inner) = host.strip_prefix('[') {
            let ip = inner
                .strip_suffix(']')
                .and_then(|ip| ip.parse::<std::net::Ipv6Addr>().ok())
                .ok_or_else(|| bad("has no IPv6 address within its brackets"))?;
            return Ok(Self::Ip(SocketAddr::new(IpAddr::V6(ip), port)));
        }
        if host.contains(':') {
            return Err(bad("is an IPv6 address without brackets"));
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Self::Ip(SocketAddr::new(ip, port)));
        }
        let name_like = host.split('.').all(|label| {
            !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if !name_like {
            return Err(bad("has neither an IP address nor a host name"));
        }
        Ok(Self::Name(host.to_owned(), port))
    }

    pub fn port(&self) -> u16 {
        match self {
            Self::Any(port) | Self::Name(_, port) => *port,
            Self::Ip(addr) => addr.port(),
        }
    }
}

impl fmt::Display for ListenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any(port) => write!(f, ":{port}"),
            Self::Ip(addr) => write!(f, "{addr}"),
            Self::Name(host, port) => write!(f, "{host}:{port}"),
        }
    }
}

/// Reads every address given, in order; at least one, none twice.
pub fn parse_all(texts: &[String]) -> Result<Vec<ListenAddress>, String> {
    if texts.is_empty() {
        return Err("is empty: give at least one address, e.g. \":9141\"".into());
    }
    let mut out: Vec<ListenAddress> = Vec::with_capacity(texts.len());
    for text in texts {
        let addr = ListenAddress::parse(text)?;
        if out.contains(&addr) {
            return Err(format!("names `{addr}` twice"));
        }
        out.push(addr);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_exporters_take_is_read() {
        let p = |t: &str| ListenAddress::parse(t).unwrap();
        assert_eq!(p(":9142"), ListenAddress::Any(9142));
        assert_eq!(
            p("0.0.0.0:9141"),
            ListenAddress::Ip("0.0.0.0:9141".parse().unwrap())
        );
        assert_eq!(
            p("[::1]:9141"),
            ListenAddress::Ip("[::1]:9141".parse().unwrap())
        );
        assert_eq!(p("[::]:0"), ListenAddress::Ip("[::]:0".parse().unwrap()));
        assert_eq!(
            p("localhost:9142"),
            ListenAddress::Name("localhost".into(), 9142)
        );
        assert_eq!(
            p("zk-exporter.example.org:80"),
            ListenAddress::Name("zk-exporter.example.org".into(), 80)
        );
        for text in [":9142", "127.0.0.1:1", "[::1]:9141", "localhost:9142"] {
            assert_eq!(p(text).to_string(), text, "shown as given");
        }
    }

    #[test]
    fn what_is_not_an_address_is_refused_with_the_forms_that_are() {
        for text in [
            "9141",
            "localhost",
            ":",
            ":65536",
            ":-1",
            "::1:9141",
            "[::1:9141",
            "[zk]:9141",
            "a b:9141",
            "a..b:9141",
            "host:port",
        ] {
            let e = ListenAddress::parse(text).unwrap_err();
            assert!(
                e.contains(&format!("`{text}`")) && e.contains(":PORT"),
                "{text}: {e}"
            );
        }
        let twice = parse_all(&[":9141".into(), ":9141".into()]).unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
        assert!(parse_all(&[]).is_err());
    }
}
