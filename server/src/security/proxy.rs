//! The client's address: the TCP peer, or — only when the peer is a trusted reverse proxy —
//! the nearest untrusted hop of `X-Forwarded-For`.

use std::net::IpAddr;
use std::str::FromStr;

use actix_web::HttpRequest;

/// An IP network (`10.0.0.0/8`, `::1/128`; a bare address is a single host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// Whether `ip` lies in this network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u128::from(u32::from(net)), 32, self.prefix)
                    == masked(u128::from(u32::from(ip)), 32, self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                masked(u128::from(net), 128, self.prefix)
                    == masked(u128::from(ip), 128, self.prefix)
            }
            _ => false,
        }
    }
}

fn masked(bits: u128, width: u8, prefix: u8) -> u128 {
    let host_bits = u32::from(width.saturating_sub(prefix));
    if host_bits >= 128 {
        0
    } else {
        bits >> host_bits
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl FromStr for IpNet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not an IP address or CIDR network"))?;
        let addr = canonical(addr);
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| format!("`{s}` has an invalid prefix length"))?,
            None => width,
        };
        Ok(Self { addr, prefix })
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A list of networks in the settings: a TOML array or a comma-separated string.
pub mod net_list {
    use super::IpNet;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(nets: &[IpNet], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(nets.iter().map(ToString::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
        crate::config::serde_util::string_list(d)?
            .iter()
            .map(|n| n.parse().map_err(serde::de::Error::custom))
            .collect()
    }
}

/// The address the request came from, as far as can be trusted.
pub fn client_ip(req: &HttpRequest, trusted: &[IpNet]) -> Option<IpAddr> {
    let peer = req.peer_addr().map(|a| a.ip());
    let forwarded: Vec<&str> = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .collect();
    resolve(peer, &forwarded.join(","), trusted)
}

/// Walks `X-Forwarded-For` from the right while the hop is trusted; the first untrusted
/// hop is the client. A malformed entry stops the walk at the last hop known good.
fn resolve(peer: Option<IpAddr>, forwarded: &str, trusted: &[IpNet]) -> Option<IpAddr> {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(ip));
    let mut client = peer?;
    if !is_trusted(client) {
        return Some(client);
    }
    for hop in forwarded
        .rsplit(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        client = canonical(ip);
        if !is_trusted(client) {
            break;
        }
    }
    Some(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn networks_parse_and_match() {
        let n: IpNet = "10.0.0.0/8".parse().unwrap();
        assert!(n.contains("10.9.8.7".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.1.1".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        let all: IpNet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        let one: IpNet = "::1".parse().unwrap();
        assert!(one.contains("::1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "nope", "1.2.3.4/x", "::/129"] {
            assert!(bad.parse::<IpNet>().is_err(), "{bad}");
        }
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_peers() {
        let peer = Some("127.0.0.1".parse().unwrap());
        let t = nets(&["127.0.0.1", "10.0.0.0/8"]);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(resolve(peer, "203.0.113.9", &[]), peer);
        assert_eq!(resolve(peer, "203.0.113.9", &t), ip("203.0.113.9"));
        // A client cannot hide behind a spoofed leftmost entry.
        assert_eq!(
            resolve(peer, "1.1.1.1, 203.0.113.9, 10.0.0.2", &t),
            ip("203.0.113.9")
        );
        assert_eq!(resolve(peer, "", &t), peer);
        assert_eq!(resolve(peer, "garbage, 10.0.0.3", &t), ip("10.0.0.3"));
        assert_eq!(
            resolve(ip("198.51.100.1"), "1.2.3.4", &t),
            ip("198.51.100.1")
        );
    }
}
