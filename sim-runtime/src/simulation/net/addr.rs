//! `ToSocketAddrs` and `lookup_host`: names resolve through the simulated
//! network (node names, routed names, `localhost`), never through the OS.

use super::with_net;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What an address argument stands for, before resolution.
#[doc(hidden)]
#[derive(Debug)]
pub enum Target {
    /// One address, given as such (no list is made for it).
    One(SocketAddr),
    Addrs(Vec<SocketAddr>),
    Name(String, u16),
    Invalid(io::Error),
}

mod sealed {
    pub trait ToSocketAddrsPriv {
        fn sim_target(&self) -> super::Target;
    }
}

/// Converts or resolves to one or more `SocketAddr` values, as Tokio's
/// trait of the same name (sealed, with the same implementations).
pub trait ToSocketAddrs: sealed::ToSocketAddrsPriv {}

macro_rules! direct {
    ($($t:ty => |$s:ident| $e:expr;)*) => {$(
        impl ToSocketAddrs for $t {}
        impl sealed::ToSocketAddrsPriv for $t {
            fn sim_target(&self) -> Target {
                let $s = self;
                Target::One($e)
            }
        }
    )*};
}

direct! {
    SocketAddr => |s| *s;
    SocketAddrV4 => |s| SocketAddr::V4(*s);
    SocketAddrV6 => |s| SocketAddr::V6(*s);
    (IpAddr, u16) => |s| SocketAddr::new(s.0, s.1);
    (Ipv4Addr, u16) => |s| SocketAddr::new(IpAddr::V4(s.0), s.1);
    (Ipv6Addr, u16) => |s| SocketAddr::new(IpAddr::V6(s.0), s.1);
}

impl ToSocketAddrs for &[SocketAddr] {}
impl sealed::ToSocketAddrsPriv for &[SocketAddr] {
    fn sim_target(&self) -> Target {
        Target::Addrs(self.to_vec())
    }
}

impl ToSocketAddrs for str {}
impl sealed::ToSocketAddrsPriv for str {
    fn sim_target(&self) -> Target {
        if let Ok(addr) = self.parse::<SocketAddr>() {
            return Target::Addrs(vec![addr]);
        }
        // As std: "host:port", the port after the last colon.
        let Some((host, port)) = self.rsplit_once(':') else {
            return Target::Invalid(io::Error::new(
                io::ErrorKind::InvalidInput,
                "invalid socket address",
            ));
        };
        match port.parse::<u16>() {
            Ok(port) => (host, port).sim_target(),
            Err(_) => Target::Invalid(io::Error::new(
                io::ErrorKind::InvalidInput,
                "invalid port value",
            )),
        }
    }
}

impl ToSocketAddrs for (&str, u16) {}
impl sealed::ToSocketAddrsPriv for (&str, u16) {
    fn sim_target(&self) -> Target {
        let (host, port) = *self;
        if let Ok(ip) = host.parse::<Ipv4Addr>() {
            return Target::Addrs(vec![SocketAddr::new(IpAddr::V4(ip), port)]);
        }
        if let Ok(ip) = host.parse::<Ipv6Addr>() {
            return Target::Addrs(vec![SocketAddr::new(IpAddr::V6(ip), port)]);
        }
        Target::Name(host.to_owned(), port)
    }
}

impl ToSocketAddrs for (String, u16) {}
impl sealed::ToSocketAddrsPriv for (String, u16) {
    fn sim_target(&self) -> Target {
        (self.0.as_str(), self.1).sim_target()
    }
}

impl ToSocketAddrs for String {}
impl sealed::ToSocketAddrsPriv for String {
    fn sim_target(&self) -> Target {
        self.as_str().sim_target()
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: ToSocketAddrs + ?Sized> sealed::ToSocketAddrsPriv for &T {
    fn sim_target(&self) -> Target {
        (**self).sim_target()
    }
}

/// Resolves an address argument; a name that resolves to several hosts
/// (a routed name) comes back in a seeded rotation, so each connection
/// reaches one of them first.
pub(crate) fn resolve<T: ToSocketAddrs + ?Sized>(target: &T) -> io::Result<Vec<SocketAddr>> {
    match target.sim_target() {
        Target::One(a) => Ok(vec![a]),
        Target::Addrs(a) => Ok(a),
        Target::Invalid(e) => Err(e),
        Target::Name(name, port) => with_net(|net, _, _| {
            let ips = net.resolve(&name).ok_or_else(|| {
                // std reports a failed getaddrinfo with the `Uncategorized`
                // kind (unnameable on stable: borrowed from an errno that
                // maps to it) and no errno.
                let uncategorized = io::Error::from_raw_os_error(89).kind();
                io::Error::new(
                    uncategorized,
                    format!(
                        "failed to lookup address information: Name or service not known \
                     (sim: no node or route is named {name:?})"
                    ),
                )
            })?;
            Ok((ips, name))
        })
        .map(|(ips, name)| {
            let ips = if ips.len() > 1 {
                rotate(&name, ips)
            } else {
                ips
            };
            ips.into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect()
        }),
    }
}

/// The first address `target` resolves to (what a datagram is sent to),
/// without a list when it is one address already.
pub(crate) fn resolve_first<T: ToSocketAddrs + ?Sized>(
    target: &T,
) -> io::Result<Option<SocketAddr>> {
    match target.sim_target() {
        Target::One(a) => Ok(Some(a)),
        Target::Addrs(a) => Ok(a.first().copied()),
        Target::Invalid(e) => Err(e),
        Target::Name(..) => Ok(resolve(target)?.first().copied()),
    }
}

fn rotate(name: &str, mut ips: Vec<IpAddr>) -> Vec<IpAddr> {
    let exec = crate::simulation::core::executor::expect_current();
    let mut core = exec.core_mut();
    let n = super::network(&mut core).next_route_draw();
    let first = super::model(&mut core).pick_route(name, &ips, n);
    let at = ips.iter().position(|&ip| ip == first).unwrap_or(0);
    ips.rotate_left(at);
    core.decide(crate::simulation::core::trace::Kind::Net, at as u64);
    ips
}

/// Performs a DNS resolution in the simulated network: node names, routed
/// names, `localhost` and literal addresses.
pub async fn lookup_host<T>(host: T) -> io::Result<impl Iterator<Item = SocketAddr>>
where
    T: ToSocketAddrs,
{
    let target = host.sim_target();
    if matches!(target, Target::Name(..)) {
        // A real lookup runs on the blocking pool: a yield point.
        crate::simulation::task::yield_now().await;
    }
    let addrs = match target {
        Target::One(a) => vec![a],
        Target::Addrs(a) => a,
        Target::Invalid(e) => return Err(e),
        Target::Name(name, port) => resolve(&(name.as_str(), port))?,
    };
    Ok(addrs.into_iter())
}

/// For the `getaddrinfo` interposer: `name`'s addresses on the simulated
/// network (node names, routed names in their seeded rotation, `localhost`,
/// literals), or `None` when it names nothing (DNS's "no such name"). Never
/// panics and never waits: when no simulation is running here, or its core
/// is busy (a call from inside the simulator itself), it answers `None`.
pub(crate) fn resolve_for_libc(name: &str) -> Option<Vec<IpAddr>> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Some(vec![ip]);
    }
    let exec = crate::simulation::core::executor::current()?;
    let mut core = exec.try_core_mut()?;
    let mut ips = super::model(&mut core).resolve(name)?;
    if ips.len() > 1 {
        let n = super::network(&mut core).next_route_draw();
        let first = super::model(&mut core).pick_route(name, &ips, n);
        let at = ips.iter().position(|&ip| ip == first).unwrap_or(0);
        ips.rotate_left(at);
        core.decide(crate::simulation::core::trace::Kind::Net, at as u64);
    }
    Some(ips)
}
