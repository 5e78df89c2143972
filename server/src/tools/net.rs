//! SSRF guard for outbound HTTP made on behalf of the model.
//!
//! Two checkpoints, both needed:
//! * [`UrlGuard::check_url`] runs before the first request and on every
//!   redirect hop (see [`redirect_policy`]). It enforces the scheme, the
//!   domain allowlist, refuses local-looking names and — because IP-literal
//!   hosts never reach a DNS resolver — refuses non-public IP literals.
//! * [`GuardedResolver`] is the client's DNS resolver: a name is refused if
//!   *any* address it resolves to is non-public, so the addresses handed to
//!   the connector (and therefore actually connected to) are all public.

use std::error::Error as StdError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Configuration of the `http_get` tool (`[tools.http]` in the settings).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpToolConfig {
    /// Whole-request timeout (connect, headers and body).
    #[serde(rename = "timeout_secs", with = "crate::config::serde_util::secs")]
    pub timeout: Duration,
    /// Most bytes of a response body downloaded; reading stops beyond.
    pub max_bytes: usize,
    /// Most redirects followed.
    pub max_redirects: usize,
    /// Longest `text` returned to the model, in bytes (after HTML→text).
    pub max_text_bytes: usize,
    /// Empty = any public host; otherwise the host must equal one of these
    /// or be a subdomain of one (case-insensitive). IP-literal hosts must be
    /// listed literally, e.g. `"127.0.0.1"`.
    #[serde(deserialize_with = "crate::config::serde_util::string_list")]
    pub allowed_domains: Vec<String>,
    /// Off-by-default escape hatch (for tests): exact IP-literal
    /// `host:port` pairs such as `"127.0.0.1:8123"` or `"[::1]:8123"` that
    /// may be non-public. Names are not accepted here (a name resolving to a
    /// private address is always refused); unparsable entries are ignored
    /// with a warning.
    #[serde(deserialize_with = "crate::config::serde_util::string_list")]
    pub allow_private_host_ports: Vec<String>,
}

impl Default for HttpToolConfig {
    /// 10 s timeout, 256 KiB download cap, 5 redirects, 12 000 bytes of
    /// text, no allowlist, no private exceptions.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_bytes: 256 * 1024,
            max_redirects: 5,
            max_text_bytes: 12_000,
            allowed_domains: Vec::new(),
            allow_private_host_ports: Vec::new(),
        }
    }
}

/// A request refused by the guard; the message is safe to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Blocked(pub String);

/// Whether `ip` must not be contacted: loopback, private, CGNAT,
/// link-local, unique-local, unspecified, multicast, broadcast,
/// documentation, benchmarking, reserved, and IPv6 forms embedding any of
/// these (IPv4-mapped, NAT64, 6to4).
pub fn is_blocked_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_blocked_v4(v4),
        IpAddr::V6(v6) => is_blocked_v6(v6),
    }
}

/// IPv4 prefixes that are not publicly routable.
const BLOCKED_V4: &[(u32, u8)] = &[
    (0x0000_0000, 8),  // 0.0.0.0/8 "this network" (0.0.0.0 reaches localhost)
    (0x0a00_0000, 8),  // 10.0.0.0/8
    (0x6440_0000, 10), // 100.64.0.0/10 CGNAT
    (0x7f00_0000, 8),  // 127.0.0.0/8 loopback
    (0xa9fe_0000, 16), // 169.254.0.0/16 link-local, cloud metadata
    (0xac10_0000, 12), // 172.16.0.0/12
    (0xc000_0000, 24), // 192.0.0.0/24 IETF protocol assignments
    (0xc000_0200, 24), // 192.0.2.0/24 TEST-NET-1
    (0xc058_6300, 24), // 192.88.99.0/24 6to4 relay
    (0xc0a8_0000, 16), // 192.168.0.0/16
    (0xc612_0000, 15), // 198.18.0.0/15 benchmarking
    (0xc633_6400, 24), // 198.51.100.0/24 TEST-NET-2
    (0xcb00_7100, 24), // 203.0.113.0/24 TEST-NET-3
    (0xe000_0000, 4),  // 224.0.0.0/4 multicast
    (0xf000_0000, 4),  // 240.0.0.0/4 reserved, incl. 255.255.255.255
];

fn in_prefix(addr: u128, net: u128, len: u8, bits: u8) -> bool {
    let shift = u32::from(bits - len);
    addr >> shift == net >> shift
}

fn is_blocked_v4(ip: Ipv4Addr) -> bool {
    let a = u128::from(u32::from(ip));
    BLOCKED_V4
        .iter()
        .any(|&(net, len)| in_prefix(a, u128::from(net), len, 32))
}

fn is_blocked_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_blocked_v4(v4);
    }
    let a = u128::from(ip);
    let embedded_low32 = Ipv4Addr::from((a & 0xffff_ffff) as u32);
    // NAT64 well-known prefix: judge the embedded IPv4 address.
    if in_prefix(a, 0x0064_ff9b << 96, 96, 128) {
        return is_blocked_v4(embedded_low32);
    }
    // 6to4: the IPv4 address sits in bits 16..48.
    if in_prefix(a, 0x2002 << 112, 16, 128) {
        return is_blocked_v4(Ipv4Addr::from(((a >> 80) & 0xffff_ffff) as u32));
    }
    const BLOCKED_V6: &[(u128, u8)] = &[
        (0, 96),                      // ::/96 unspecified, loopback, IPv4-compatible
        (0xffff << 48, 96),           // ::ffff:0:0:0/96 IPv4-translated
        (0x0064_ff9b_0001 << 80, 48), // 64:ff9b:1::/48 local NAT64
        (0x0100 << 112, 64),          // 100::/64 discard
        (0x2001 << 112, 23),          // 2001::/23 IETF (Teredo, benchmarking, ORCHID)
        (0x2001_0db8 << 96, 32),      // 2001:db8::/32 documentation
        (0x3fff << 112, 20),          // 3fff::/20 documentation
        (0xfc00 << 112, 7),           // fc00::/7 unique local
        (0xfe80 << 112, 10),          // fe80::/10 link-local
        (0xfec0 << 112, 10),          // fec0::/10 site-local (deprecated)
        (0xff00 << 112, 8),           // ff00::/8 multicast
    ];
    BLOCKED_V6
        .iter()
        .any(|&(net, len)| in_prefix(a, net, len, 128))
}

/// Whether `host` (a DNS name) is local by construction: `localhost` and its
/// subdomains, single-label names, and the `.local`, `.localdomain`,
/// `.internal`, `.home.arpa` suffixes.
pub fn is_local_name(host: &str) -> bool {
    let h = normalise_host(host);
    if h.is_empty() || !h.contains('.') {
        return true;
    }
    const LOCAL: &[&str] = &["localhost", "local", "localdomain", "internal", "home.arpa"];
    LOCAL
        .iter()
        .any(|s| h == *s || h.ends_with(&format!(".{s}")))
        || h == "ip6-localhost"
        || h == "ip6-loopback"
}

fn normalise_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// URL-level checks shared by the first request and every redirect.
#[derive(Debug, Clone, Default)]
pub struct UrlGuard {
    allowed_domains: Vec<String>,
    private_pairs: Vec<SocketAddr>,
}

impl UrlGuard {
    /// Build from the tool configuration.
    pub fn new(config: &HttpToolConfig) -> Self {
        let allowed_domains = config
            .allowed_domains
            .iter()
            .map(|d| normalise_host(d.trim().trim_start_matches('[').trim_end_matches(']')))
            .filter(|d| !d.is_empty())
            .collect();
        let private_pairs = config
            .allow_private_host_ports
            .iter()
            .filter_map(|p| match p.trim().parse::<SocketAddr>() {
                Ok(addr) => Some(addr),
                Err(_) => {
                    tracing::warn!(entry = %p, "ignoring allow_private_host_ports entry: not an ip:port pair");
                    None
                }
            })
            .collect();
        Self {
            allowed_domains,
            private_pairs,
        }
    }

    /// Whether `host` passes the domain allowlist.
    pub fn host_allowed(&self, host: &str) -> bool {
        if self.allowed_domains.is_empty() {
            return true;
        }
        let h = normalise_host(host);
        self.allowed_domains
            .iter()
            .any(|d| h == *d || h.ends_with(&format!(".{d}")))
    }

    /// Refuse `url` unless it is http(s), passes the allowlist, is not a
    /// local name and is not a non-public IP literal (outside the explicit
    /// `allow_private_host_ports` pairs).
    pub fn check_url(&self, url: &Url) -> Result<(), Blocked> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Blocked(format!(
                "only http and https URLs are allowed, not '{}'",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Blocked("URLs with credentials are not allowed".to_owned()));
        }
        let host = url
            .host()
            .ok_or_else(|| Blocked("the URL has no host".to_owned()))?;
        let port = url.port_or_known_default().unwrap_or(0);
        let host_text = match &host {
            Host::Domain(d) => (*d).to_owned(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => ip.to_string(),
        };
        if !self.host_allowed(&host_text) {
            return Err(Blocked(format!(
                "host '{host_text}' is not in the allowed domains"
            )));
        }
        let ip = match host {
            Host::Domain(d) if is_local_name(d) => {
                return Err(Blocked(format!(
                    "host '{d}' is a local name and cannot be fetched"
                )))
            }
            Host::Domain(_) => return Ok(()),
            Host::Ipv4(ip) => IpAddr::V4(ip),
            Host::Ipv6(ip) => IpAddr::V6(ip),
        };
        if is_blocked_ip(ip) && !self.private_pairs.contains(&SocketAddr::new(ip, port)) {
            return Err(Blocked(format!(
                "address {ip} is not a public address and cannot be fetched"
            )));
        }
        Ok(())
    }
}

/// Resolve `host` and refuse it if any address is non-public.
pub async fn resolve_public(
    host: &str,
) -> Result<Vec<SocketAddr>, Box<dyn StdError + Send + Sync>> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
    if addrs.is_empty() {
        return Err(format!("host '{host}' has no addresses").into());
    }
    if let Some(bad) = addrs.iter().find(|a| is_blocked_ip(a.ip())) {
        return Err(Box::new(Blocked(format!(
            "host '{host}' resolves to a non-public address ({}) and cannot be fetched",
            bad.ip()
        ))));
    }
    Ok(addrs)
}

/// DNS resolver for the HTTP client that only yields public addresses.
#[derive(Debug, Clone, Copy, Default)]
pub struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            if is_local_name(&host) {
                return Err(Box::new(Blocked(format!(
                    "host '{host}' is a local name and cannot be fetched"
                ))) as Box<dyn StdError + Send + Sync>);
            }
            let addrs = resolve_public(&host).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Redirect policy: at most `max` redirects, each target re-checked by
/// `guard` (names are re-resolved through [`GuardedResolver`] on connect).
pub fn redirect_policy(guard: Arc<UrlGuard>, max: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max {
            return attempt.error(format!("too many redirects (limit {max})"));
        }
        match guard.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(blocked) => attempt.error(Blocked(format!("redirect refused: {}", blocked.0))),
        }
    })
}

/// The first [`Blocked`] in `err`'s source chain.
pub fn find_blocked<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a Blocked> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return Some(b);
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
#[path = "net_tests.rs"]
mod tests;
