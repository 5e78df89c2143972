//! The filters identity providers send before creating or updating: `attr eq "value"`
//! (`userName`, `externalId`, `displayName`, `id`). Anything else is refused with
//! `invalidFilter` rather than answered wrongly.

use crate::db::models::scim::Match;

use super::ScimError;

/// Longest filter looked at.
const MAX_FILTER_BYTES: usize = 1024;

/// Parses a filter; `None` lists everything.
pub fn parse(filter: Option<&str>) -> Result<Match, ScimError> {
    let Some(filter) = filter.map(str::trim).filter(|f| !f.is_empty()) else {
        return Ok(Match::All);
    };
    if filter.len() > MAX_FILTER_BYTES {
        return Err(ScimError::bad("invalidFilter", "the filter is too long"));
    }
    let unsupported = || {
        ScimError::bad("invalidFilter", format!("unsupported filter `{filter}`: only `attribute eq \"value\"` on userName, externalId, displayName or id"))
    };
    let (attr, rest) = filter
        .split_once(char::is_whitespace)
        .ok_or_else(unsupported)?;
    let (op, value) = rest
        .trim_start()
        .split_once(char::is_whitespace)
        .ok_or_else(unsupported)?;
    if !op.eq_ignore_ascii_case("eq") {
        return Err(unsupported());
    }
    // The value's escapes are decoded here, so the NUL check sees `\u0000` as the NUL it is
    // (the query-string check saw only the six characters).
    let value: String = serde_json::from_str(value.trim()).map_err(|_| unsupported())?;
    if value.contains('\0') {
        return Err(ScimError::bad(
            "invalidValue",
            "the filter's value contains a NUL character, which no attribute holds",
        ));
    }
    Ok(match attr.to_ascii_lowercase().as_str() {
        "username" => Match::UserName(value),
        "externalid" => Match::ExternalId(value),
        "displayname" => Match::DisplayName(value),
        // An id that is not ours matches nothing.
        "id" => Match::Id(value.parse().unwrap_or_default()),
        _ => return Err(unsupported()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_providers_send() {
        assert_eq!(
            parse(Some(r#"userName eq "alice@example.com""#)).unwrap(),
            Match::UserName("alice@example.com".into())
        );
        assert_eq!(
            parse(Some(r#"externalId eq "00u1\"x""#)).unwrap(),
            Match::ExternalId("00u1\"x".into())
        );
        assert_eq!(
            parse(Some(r#"displayName EQ "Engineering Team""#)).unwrap(),
            Match::DisplayName("Engineering Team".into())
        );
        assert_eq!(parse(None).unwrap(), Match::All);
        assert_eq!(parse(Some("  ")).unwrap(), Match::All);
    }

    #[test]
    fn other_filters_are_refused() {
        for f in [
            r#"userName sw "a""#,
            r#"title eq "x""#,
            r#"userName eq unquoted"#,
            r#"userName eq "a" or userName eq "b""#,
            "userName",
        ] {
            let e = parse(Some(f)).unwrap_err();
            assert_eq!(e.scim_type, Some("invalidFilter"), "{f}");
        }
    }

    #[test]
    fn an_escaped_nul_is_an_invalid_value() {
        for f in [r#"userName eq "\u0000""#, r#"displayName eq "a\u0000b""#] {
            let e = parse(Some(f)).unwrap_err();
            assert_eq!(e.scim_type, Some("invalidValue"), "{f}");
        }
    }
}
