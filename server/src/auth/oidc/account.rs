//! From a verified identity to an account: found by (issuer, subject) — never by e-mail —
//! or linked to the account SCIM provisioned for the same person (its `externalId` is the
//! provider's id of them), or created; then its role is set from its groups.

use diesel_async::AsyncPgConnection;
use rand::RngCore;
use secrecy::SecretString;
use uuid::Uuid;

use super::error::SsoError;
use super::provider::Identity;
use super::roles::RoleMap;
use crate::db::models::{identity, is_unique_violation, role, scim, user};
use crate::db::{self};
use crate::state::AppState;

/// The signed-in account, with its role set from the identity's groups.
pub async fn sign_in(
    state: &AppState,
    roles: &RoleMap,
    who: &Identity,
) -> Result<user::User, SsoError> {
    let desired = roles
        .decide(&who.groups)
        .ok_or(SsoError::NoMatchingGroup)?
        .to_owned();
    // One pooled connection at a time: the pool is sharded per worker thread, and a
    // second checkout while holding one can wait on itself.
    let found = {
        let mut conn = db::conn(&state.pool).await?;
        if !role::exists(&mut conn, &desired).await? {
            tracing::error!(role = %desired, "single sign-on: the role map names a role that does not exist");
            return Err(SsoError::UnknownRole(desired));
        }
        match find_or_link(&mut conn, who).await? {
            Some(id) => Some(
                user::find(&mut conn, id)
                    .await?
                    .ok_or_else(|| SsoError::Internal("identity without account".into()))?,
            ),
            None => None,
        }
    };
    let account = match found {
        Some(account) => account,
        None => create(state, who, &desired).await?,
    };
    if account.disabled {
        return Err(SsoError::Disabled);
    }
    let mut conn = db::conn(&state.pool).await?;
    identity::touch(&mut conn, &who.issuer, &who.subject).await?;
    if account.role == desired {
        return Ok(account);
    }
    apply_role(&mut conn, account.id, desired).await
}

/// The account of this identity, linking a SCIM-provisioned one on its first sign-in.
async fn find_or_link(
    conn: &mut AsyncPgConnection,
    who: &Identity,
) -> Result<Option<Uuid>, SsoError> {
    if let Some(id) = identity::find_user(conn, &who.issuer, &who.subject).await? {
        return Ok(Some(id));
    }
    let mut ids = vec![who.subject.as_str()];
    ids.extend(who.object_id.as_deref());
    let Some(id) = scim::find_by_external_id(conn, &ids).await? else {
        return Ok(None);
    };
    // One identity per account and provider: a second subject never takes it over.
    if identity::has_identity_at(conn, id, &who.issuer).await? {
        return Ok(None);
    }
    match identity::insert(conn, &who.issuer, &who.subject, id).await {
        Ok(()) => Ok(Some(id)),
        Err(e) if is_unique_violation(&e) => {
            Ok(identity::find_user(conn, &who.issuer, &who.subject).await?)
        }
        Err(e) => Err(e.into()),
    }
}

/// A new account for a first sign-in, with a free username made from the hint and a
/// random password hash nobody knows (it never signs in with a password).
async fn create(state: &AppState, who: &Identity, role_name: &str) -> Result<user::User, SsoError> {
    let hash = unusable_password_hash(state).await?;
    for candidate in username_candidates(&who.username_hint) {
        let mut conn = db::conn(&state.pool).await?;
        if user::find_by_username(&mut conn, &candidate)
            .await?
            .is_some()
        {
            continue;
        }
        let created = create_linked(&mut conn, who, &candidate, &hash, role_name).await;
        match created {
            Ok(u) => {
                tracing::info!(user_id = %u.id, "single sign-on: account created at first sign-in");
                return Ok(u);
            }
            // Another first sign-in of the same person won the race: use its account.
            Err(e) if is_unique_violation(&e) => {
                if let Some(id) = identity::find_user(&mut conn, &who.issuer, &who.subject).await? {
                    return user::find(&mut conn, id)
                        .await?
                        .ok_or_else(|| SsoError::Internal("identity without account".into()));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(SsoError::Internal("no free username".into()))
}

async fn create_linked(
    conn: &mut AsyncPgConnection,
    who: &Identity,
    username: &str,
    hash: &str,
    role_name: &str,
) -> diesel::QueryResult<user::User> {
    use diesel_async::scoped_futures::ScopedFutureExt;
    use diesel_async::AsyncConnection;
    let (who, username, hash, role_name) = (
        who.clone(),
        username.to_owned(),
        hash.to_owned(),
        role_name.to_owned(),
    );
    conn.transaction(|conn| {
        async move {
            let u =
                user::insert_external(conn, &username, &hash, &role_name, user::SOURCE_SSO).await?;
            identity::insert(conn, &who.issuer, &who.subject, u.id).await?;
            Ok(u)
        }
        .scope_boxed()
    })
    .await
}

/// The argon2 hash of 32 random bytes that are then forgotten.
pub async fn unusable_password_hash(state: &AppState) -> Result<String, SsoError> {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = SecretString::from(base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        bytes,
    ));
    state
        .hasher
        .hash(secret)
        .await
        .map_err(|e| SsoError::Internal(e.to_string()))
}

/// Sets the role; a change ends the account's access tokens and its running turns.
async fn apply_role(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    role_name: String,
) -> Result<user::User, SsoError> {
    let changes = user::UserChanges {
        role: Some(role_name),
        ..Default::default()
    };
    let updated = match crate::accounts::update(conn, id, changes).await {
        Ok(u) => u.after,
        Err(user::UserChangeError::LastAdmin | user::UserChangeError::LastLocalAdmin) => {
            return Err(SsoError::LastAdmin)
        }
        Err(user::UserChangeError::NotFound) => {
            return Err(SsoError::Internal("account vanished".into()))
        }
        Err(user::UserChangeError::Db(e)) => return Err(e.into()),
    };
    tracing::info!(user_id = %id, role = %updated.role, "single sign-on: role changed by the provider's groups");
    Ok(updated)
}

/// Usernames to try for a hint such as `alice@example.com` or `Alice Smith`: the
/// sanitised hint (the e-mail's local part), then numbered, then with a random suffix.
pub fn username_candidates(hint: &str) -> impl Iterator<Item = String> {
    let local = hint.split('@').next().unwrap_or(hint);
    let mut base: String = local
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(24)
        .collect();
    base = base.trim_matches(|c| c == '-' || c == '.').to_lowercase();
    if base.len() < 3 {
        base = format!("user{base}");
    }
    let numbered = (2..10).map({
        let base = base.clone();
        move |n| format!("{base}-{n}")
    });
    let random = (0..5).map({
        let base = base.clone();
        move |_| format!("{base}-{:06x}", rand::random::<u32>() & 0xff_ffff)
    });
    std::iter::once(base).chain(numbered).chain(random)
}

#[cfg(test)]
mod tests {
    use super::username_candidates;
    use crate::auth::session::check_username;

    #[test]
    fn candidates_are_valid_usernames() {
        for hint in [
            "alice@example.com",
            "Ålice Smith",
            "a",
            "",
            "x".repeat(80).as_str(),
            "..--..",
        ] {
            for c in username_candidates(hint) {
                assert!(check_username(&c).is_ok(), "{hint:?} gave {c:?}");
            }
        }
        let first: Vec<String> = username_candidates("Alice.Smith@example.com")
            .take(2)
            .collect();
        assert_eq!(first, ["alice.smith", "alice.smith-2"]);
    }
}
