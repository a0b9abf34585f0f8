//! Binding the listen addresses (`--web.listen-address`, see
//! [`crate::config::listen`]): `:PORT` on every address of the host, a name
//! on every address it resolves to.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::net::TcpListener;

use crate::config::listen::ListenAddress;

/// Every listener the addresses ask for, or a message that says which
/// address failed and what to do.
pub async fn bind_all(addrs: &[ListenAddress]) -> Result<Vec<TcpListener>, String> {
    let mut out = Vec::with_capacity(addrs.len());
    for addr in addrs {
        out.extend(bind(addr).await?);
    }
    Ok(out)
}

async fn bind(addr: &ListenAddress) -> Result<Vec<TcpListener>, String> {
    let failed = |e: std::io::Error| {
        format!("cannot listen on {addr}: {e}; choose another --web.listen-address")
    };
    match addr {
        ListenAddress::Any(port) => match dual_stack(*port) {
            Ok(l) => Ok(vec![l]),
            // A host without IPv6: every IPv4 address is every address.
            Err(e) if no_such_family(&e) => TcpListener::bind((Ipv4Addr::UNSPECIFIED, *port))
                .await
                .map(|l| vec![l])
                .map_err(failed),
            Err(e) => Err(failed(e)),
        },
        ListenAddress::Ip(ip) => TcpListener::bind(ip).await.map(|l| vec![l]).map_err(failed),
        ListenAddress::Name(host, port) => {
            let mut resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), *port))
                .await
                .map_err(|e| {
                    format!(
                        "cannot resolve `{host}` of --web.listen-address {addr}: {e}; give an IP \
                         address or a name this host resolves"
                    )
                })?
                .collect();
            resolved.dedup();
            let mut bound = Vec::new();
            let mut skipped = None;
            for ip in resolved {
                match TcpListener::bind(ip).await {
                    Ok(l) => bound.push(l),
                    // `localhost` may name ::1 where IPv6 is off.
                    Err(e) if no_such_family(&e) => skipped = Some(e),
                    Err(e) => return Err(failed(e)),
                }
            }
            match (bound.is_empty(), skipped) {
                (false, _) => Ok(bound),
                (true, Some(e)) => Err(failed(e)),
                (true, None) => Err(format!(
                    "cannot listen on {addr}: `{host}` resolves to no address; give an IP address"
                )),
            }
        }
    }
}

/// One socket for every IPv6 and IPv4 address, whatever
/// `net.ipv6.bindv6only` says: what `:PORT` means to Go's `net.Listen`.
fn dual_stack(port: u16) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_only_v6(false)?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)).into())?;
    socket.listen(1024)?;
    TcpListener::from_std(socket.into())
}

/// The host has no such address family (IPv6 off): not the user's fault.
fn no_such_family(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL | libc::EPROTONOSUPPORT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local_port(l: &TcpListener) -> u16 {
        l.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn every_port_form_binds_and_answers_on_loopback() {
        let any = bind_all(&[ListenAddress::Any(0)]).await.unwrap();
        let port = local_port(&any[0]);
        // `:PORT` answers on IPv4 loopback (and on IPv6 where it exists).
        assert!(std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok());

        let named = bind_all(&[ListenAddress::Name("localhost".into(), 0)])
            .await
            .unwrap();
        assert!(!named.is_empty());
        for l in &named {
            assert!(l.local_addr().unwrap().ip().is_loopback());
        }
    }

    #[tokio::test]
    async fn a_port_taken_is_refused_with_what_to_do() {
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = ListenAddress::Ip(taken.local_addr().unwrap());
        let e = bind_all(&[addr]).await.unwrap_err();
        assert!(e.contains("choose another --web.listen-address"), "{e}");
        let e = bind_all(&[ListenAddress::Name("no-such-host.invalid".into(), 0)])
            .await
            .unwrap_err();
        assert!(e.contains("cannot resolve `no-such-host.invalid`"), "{e}");
    }
}
