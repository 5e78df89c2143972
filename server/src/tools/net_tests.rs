//! Tests for the SSRF guard.

use super::*;
use std::str::FromStr;

fn blocked(s: &str) -> bool {
    is_blocked_ip(s.parse().unwrap())
}

#[test]
fn non_public_addresses_blocked() {
    for ip in [
        "127.0.0.1",
        "127.255.255.254",
        "0.0.0.0",
        "0.1.2.3",
        "10.0.0.1",
        "100.64.0.1",
        "100.127.255.255",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "192.0.0.8",
        "192.0.2.1",
        "198.18.0.1",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::127.0.0.1",
        "::ffff:127.0.0.1",
        "::ffff:10.1.2.3",
        "::ffff:169.254.169.254",
        "::ffff:0:7f00:1",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::1",
        "2002:7f00:1::1",
        "2002:c0a8:101::",
        "2001::1",
        "2001:db8::1",
        "3fff::1",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "febf::1",
        "fec0::1",
        "ff02::1",
        "100::1",
    ] {
        assert!(blocked(ip), "{ip} should be blocked");
    }
}

#[test]
fn public_addresses_allowed() {
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "100.63.255.255",
        "100.128.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "169.253.0.1",
        "192.0.1.1",
        "223.255.255.255",
        "2606:4700:4700::1111",
        "2a00:1450::1",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "2001:200::1",
    ] {
        assert!(!blocked(ip), "{ip} should be allowed");
    }
}

#[test]
fn local_names() {
    for name in [
        "localhost",
        "LOCALHOST",
        "localhost.",
        "foo.localhost",
        "printer.local",
        "metadata.google.internal",
        "router.home.arpa",
        "box.localdomain",
        "ip6-localhost",
        "intranet",
        "",
    ] {
        assert!(is_local_name(name), "{name}");
    }
    for name in ["example.com", "localhost.example.com", "local.example.org"] {
        assert!(!is_local_name(name), "{name}");
    }
}

fn guard(domains: &[&str], pairs: &[&str]) -> UrlGuard {
    UrlGuard::new(&HttpToolConfig {
        allowed_domains: domains.iter().map(|s| s.to_string()).collect(),
        allow_private_host_ports: pairs.iter().map(|s| s.to_string()).collect(),
        ..HttpToolConfig::default()
    })
}

fn check(g: &UrlGuard, url: &str) -> Result<(), Blocked> {
    g.check_url(&Url::parse(url).unwrap())
}

#[test]
fn url_checks() {
    let g = guard(&[], &["127.0.0.1:8123", "[::1]:9000", "not a pair"]);
    assert!(check(&g, "https://example.com/x").is_ok());
    assert!(check(&g, "http://127.0.0.1:8123/").is_ok());
    assert!(check(&g, "http://[::1]:9000/").is_ok());
    // Alternative spellings of an allowed pair are the same socket.
    assert!(check(&g, "http://0x7f000001:8123/").is_ok());
    for bad in [
        "http://127.0.0.1:8124/",
        "http://127.0.0.1/",
        "http://[::1]:8123/",
        "http://[::ffff:127.0.0.1]:8123/",
        "http://0x7f000001:8124/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://0.0.0.0:8123/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[fe80::1]/",
        "http://localhost:8123/",
        "http://LOCALHOST./",
        "ftp://example.com/",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
    ] {
        assert!(check(&g, bad).is_err(), "{bad}");
    }
}

#[test]
fn domain_allowlist() {
    let g = guard(&["Example.org", "127.0.0.1"], &["127.0.0.1:1"]);
    assert!(g.host_allowed("example.org"));
    assert!(g.host_allowed("a.b.EXAMPLE.org."));
    assert!(!g.host_allowed("badexample.org"));
    assert!(!g.host_allowed("example.org.evil.com"));
    assert!(check(&g, "https://docs.example.org/").is_ok());
    assert!(check(&g, "http://127.0.0.1:1/").is_ok());
    let err = check(&g, "https://example.com/").unwrap_err();
    assert_eq!(err.0, "host 'example.com' is not in the allowed domains");
    let g = guard(&["[::1]"], &[]);
    assert!(g.host_allowed("::1"));
}

#[tokio::test]
async fn resolver_refuses_names_resolving_to_loopback() {
    // `resolve_public` does not look at the name, only at the addresses.
    let err = resolve_public("localhost").await.unwrap_err();
    let b = find_blocked(err.as_ref()).unwrap();
    assert!(b.0.contains("non-public address"), "{b}");
    // The reqwest resolver refuses it too.
    let err = GuardedResolver
        .resolve(Name::from_str("localhost").unwrap())
        .await
        .err()
        .unwrap();
    assert!(find_blocked(err.as_ref()).is_some());
    // IP-looking names resolve to themselves and are judged as addresses.
    let err = resolve_public("127.0.0.1").await.unwrap_err();
    assert!(find_blocked(err.as_ref()).is_some());
    let ok = resolve_public("8.8.8.8").await.unwrap();
    assert_eq!(ok[0].ip().to_string(), "8.8.8.8");
}
