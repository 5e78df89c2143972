//! A role's search rules (`role_search`): which providers its users may search with, which
//! sites they may see in results and fetch with `http_get` (a domain covers its subdomains;
//! the deny list wins), and how many queries a user sends per day. A role without a row may
//! use every provider and every site, at `search.queries_per_user_per_day`.

use diesel::sql_types::{Array, Integer, Nullable, Text, Uuid as SqlUuid};
use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use url::{Host, Url};
use uuid::Uuid;

/// Most entries in one of a role's lists.
pub const MAX_LIST: usize = 200;

/// One role's rules, as stored and as the admin API shows them.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, QueryableByName, utoipa::ToSchema,
)]
pub struct SearchRules {
    /// Providers the role may use, in the order they are tried (empty: all, in their order).
    #[diesel(sql_type = Array<Text>)]
    pub providers: Vec<String>,
    /// Only these sites (empty: every site not denied).
    #[diesel(sql_type = Array<Text>)]
    pub allow_domains: Vec<String>,
    /// Never these sites.
    #[diesel(sql_type = Array<Text>)]
    pub deny_domains: Vec<String>,
    /// Queries a user of the role may send per day (null: the server's setting).
    #[diesel(sql_type = Nullable<Integer>)]
    pub queries_per_day: Option<i32>,
}

/// The rules of `user`'s role (the default when the role has none).
pub async fn for_user(
    conn: &mut AsyncPgConnection,
    user: Uuid,
) -> diesel::QueryResult<SearchRules> {
    let rows: Vec<SearchRules> = diesel::sql_query(
        "SELECT rs.providers, rs.allow_domains, rs.deny_domains, rs.queries_per_day \
           FROM users u JOIN role_search rs ON rs.role = u.role WHERE u.id = $1",
    )
    .bind::<SqlUuid, _>(user)
    .load(conn)
    .await?;
    Ok(rows.into_iter().next().unwrap_or_default())
}

/// The rules of role `role`, if it has any.
pub async fn for_role(
    conn: &mut AsyncPgConnection,
    role: &str,
) -> diesel::QueryResult<Option<SearchRules>> {
    let rows: Vec<SearchRules> = diesel::sql_query(
        "SELECT providers, allow_domains, deny_domains, queries_per_day \
           FROM role_search WHERE role = $1",
    )
    .bind::<Text, _>(role)
    .load(conn)
    .await?;
    Ok(rows.into_iter().next())
}

/// Stores `rules` as role `role`'s.
pub async fn save(
    conn: &mut AsyncPgConnection,
    role: &str,
    rules: &SearchRules,
) -> diesel::QueryResult<()> {
    diesel::sql_query(
        "INSERT INTO role_search (role, providers, allow_domains, deny_domains, queries_per_day) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (role) DO UPDATE SET providers = $2, allow_domains = $3, \
             deny_domains = $4, queries_per_day = $5, updated_at = now()",
    )
    .bind::<Text, _>(role)
    .bind::<Array<Text>, _>(&rules.providers)
    .bind::<Array<Text>, _>(&rules.allow_domains)
    .bind::<Array<Text>, _>(&rules.deny_domains)
    .bind::<Nullable<Integer>, _>(rules.queries_per_day)
    .execute(conn)
    .await
    .map(drop)
}

/// A domain as a list holds it: lower case, without a leading `*.` or `.` and a trailing dot;
/// `None` when it is not a host name.
pub fn normalise_domain(entry: &str) -> Option<String> {
    let d = entry
        .trim()
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let ok = !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    ok.then_some(d)
}

/// Whether `host` is `domain` or one of its subdomains.
pub fn covers(domain: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

impl SearchRules {
    /// Why the role may not see or fetch `url` (`None`: it may).
    pub fn refuses(&self, url: &Url) -> Option<String> {
        let host = match url.host() {
            Some(Host::Domain(d)) => d.to_owned(),
            Some(Host::Ipv4(ip)) => ip.to_string(),
            Some(Host::Ipv6(ip)) => ip.to_string(),
            None => return Some("the URL has no host".into()),
        };
        if let Some(d) = self.deny_domains.iter().find(|d| covers(d, &host)) {
            return Some(format!("your role may not use {d} (its deny list)"));
        }
        if !self.allow_domains.is_empty() && !self.allow_domains.iter().any(|d| covers(d, &host)) {
            return Some(format!(
                "your role may only use {} (its allow list), not {host}",
                self.allow_domains.join(", ")
            ));
        }
        None
    }

    /// Whether the role may search with `provider`.
    pub fn allows_provider(&self, provider: &str) -> bool {
        self.providers.is_empty() || self.providers.iter().any(|p| p == provider)
    }

    /// Whether nothing restricts sites (no lookup is worth doing for fetches).
    pub fn is_open(&self) -> bool {
        self.allow_domains.is_empty() && self.deny_domains.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_domain_covers_its_subdomains_and_deny_wins() {
        assert!(covers("example.com", "example.com"));
        assert!(covers("example.com", "docs.Example.com."));
        assert!(!covers("example.com", "badexample.com"));
        let rules = SearchRules {
            allow_domains: vec!["rust-lang.org".into(), "example.com".into()],
            deny_domains: vec!["secret.example.com".into()],
            ..Default::default()
        };
        assert!(rules
            .refuses(&url("https://doc.rust-lang.org/book/"))
            .is_none());
        assert!(rules
            .refuses(&url("https://a.secret.example.com/"))
            .is_some());
        assert!(rules.refuses(&url("https://evil.test/")).is_some());
        assert!(SearchRules::default()
            .refuses(&url("https://any.where/"))
            .is_none());
        assert_eq!(
            normalise_domain(" *.Example.COM. ").as_deref(),
            Some("example.com")
        );
        assert_eq!(normalise_domain("http://x"), None);
    }
}
