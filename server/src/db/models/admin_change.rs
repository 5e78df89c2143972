//! The admin audit trail: one row per administrative change, written in the change's own
//! transaction where it has one, so a change and its record stand or fall together.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

pub use super::admin_apply::{apply, AdminWrite};
use crate::db::schema::admin_changes::{self, dsl};
use crate::domain::Actor;

/// Keys whose values never enter the trail, at any depth (passwords, header secrets).
const SECRET_KEYS: [&str; 6] = [
    "password",
    "password_hash",
    "secret",
    "token",
    "api_key",
    "authorization",
];

/// One change, as its row stores it.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, utoipa::ToSchema)]
#[diesel(table_name = admin_changes)]
pub struct AdminChange {
    pub id: i64,
    pub created_at: DateTime<Utc>,
    /// The admin who made it (null for rows whose admin id was not known).
    pub actor_id: Option<Uuid>,
    pub actor_name: String,
    /// What was done: `user.create`, `user.update`, `user.delete`, `user.password_reset`,
    /// `role.create`, `role.update`, `custom_tool.create|update|delete`,
    /// `mcp_server.create|update|delete`, `provider.create|update|delete`,
    /// `model.create|update|delete`, `api_key.revoke`, `approval.decide`,
    /// `conversation.view`, `share.revoke`.
    pub kind: String,
    /// What it was done to, as people read it (a username, a role or tool name).
    pub target: String,
    pub target_id: Option<Uuid>,
    #[schema(value_type = Option<Object>)]
    pub before: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub after: Option<Value>,
}

/// A change to record.
#[derive(Debug, Clone)]
pub struct NewChange {
    pub actor_id: Uuid,
    pub actor_name: String,
    pub kind: &'static str,
    pub target: String,
    pub target_id: Option<Uuid>,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl NewChange {
    /// A change `admin` made of `kind` to `target`.
    pub fn by(admin: &impl Actor, kind: &'static str, target: impl Into<String>) -> Self {
        Self {
            actor_id: admin.actor_id(),
            actor_name: admin.actor_name().to_owned(),
            kind,
            target: target.into(),
            target_id: None,
            before: None,
            after: None,
        }
    }

    pub fn id(mut self, id: Uuid) -> Self {
        self.target_id = Some(id);
        self
    }

    pub fn before(mut self, v: impl Serialize) -> Self {
        self.before = serde_json::to_value(v).ok();
        self
    }

    pub fn after(mut self, v: impl Serialize) -> Self {
        self.after = serde_json::to_value(v).ok();
        self
    }
}

/// Replaces secret values with `"[redacted]"`; header maps keep their names only.
pub fn redact(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, val)| {
                    let key = k.to_ascii_lowercase();
                    let out = if SECRET_KEYS.contains(&key.as_str()) {
                        Value::String("[redacted]".into())
                    } else if key == "headers" {
                        redact_headers(val)
                    } else {
                        redact(val)
                    };
                    (k.clone(), out)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// A header map's names with every value hidden (header values are credentials).
fn redact_headers(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.keys()
                .map(|k| (k.clone(), Value::String("[redacted]".into())))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl NewChange {
    /// A save that changed nothing (`before` equals `after` but for `updated_at`).
    fn is_noop(&self) -> bool {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(m) = v.as_object_mut() {
                m.remove("updated_at");
            }
            v
        };
        match (&self.before, &self.after) {
            (Some(b), Some(a)) => strip(b) == strip(a),
            _ => false,
        }
    }
}

/// Inserts the row (redacted) on `conn`, inside the caller's transaction when it has one.
/// A save that changed nothing is not a change and leaves no row.
pub async fn record(conn: &mut AsyncPgConnection, change: NewChange) -> QueryResult<()> {
    use crate::db::pg_safe_text;
    if change.is_noop() {
        return Ok(());
    }
    let before = change.before.as_ref().map(redact);
    let after = change.after.as_ref().map(redact);
    diesel::insert_into(dsl::admin_changes)
        .values((
            dsl::actor_id.eq(Some(change.actor_id)),
            dsl::actor_name.eq(change.actor_name),
            dsl::kind.eq(change.kind),
            dsl::target.eq(pg_safe_text(&change.target).into_owned()),
            dsl::target_id.eq(change.target_id),
            dsl::before.eq(before.as_ref().map(crate::db::pg_safe_json)),
            dsl::after.eq(after.as_ref().map(crate::db::pg_safe_json)),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

/// Filters of the listing; all optional.
#[derive(Debug, Default, Clone)]
pub struct ChangeFilter {
    /// The acting admin's id or (case-insensitive) name.
    pub actor: Option<ActorFilter>,
    /// An exact kind, or a prefix ending in `.` (`user.`).
    pub kind: Option<String>,
    /// Part of the target's name (case-insensitive), or its id.
    pub target: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Rows with an id below this one (the previous page's last id).
    pub before_id: Option<i64>,
    pub limit: i64,
}

#[derive(Debug, Clone)]
pub enum ActorFilter {
    Id(Uuid),
    Name(String),
}

/// Newest first.
pub async fn list(conn: &mut AsyncPgConnection, f: &ChangeFilter) -> QueryResult<Vec<AdminChange>> {
    let mut q = dsl::admin_changes
        .select(AdminChange::as_select())
        .order(dsl::id.desc())
        .limit(f.limit)
        .into_boxed();
    match &f.actor {
        None => {}
        Some(ActorFilter::Id(id)) => q = q.filter(dsl::actor_id.eq(*id)),
        Some(ActorFilter::Name(n)) => {
            q = q.filter(super::lower(dsl::actor_name).eq(n.to_lowercase()))
        }
    }
    if let Some(k) = &f.kind {
        if k.ends_with('.') {
            q = q.filter(dsl::kind.like(format!("{}%", escape_like(k))));
        } else {
            q = q.filter(dsl::kind.eq(k.clone()));
        }
    }
    if let Some(t) = &f.target {
        match Uuid::parse_str(t) {
            Ok(id) => q = q.filter(dsl::target_id.eq(id).or(dsl::target.eq(t.clone()))),
            Err(_) => q = q.filter(dsl::target.ilike(format!("%{}%", escape_like(t)))),
        }
    }
    if let Some(s) = f.since {
        q = q.filter(dsl::created_at.ge(s));
    }
    if let Some(u) = f.until {
        q = q.filter(dsl::created_at.lt(u));
    }
    if let Some(b) = f.before_id {
        q = q.filter(dsl::id.lt(b));
    }
    q.load(conn).await
}

/// `s` with LIKE's wildcards taken literally.
fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redaction_hides_secrets_and_header_values_at_any_depth() {
        let v = json!({"name": "t", "password": "hunter2", "headers": {"Authorization": "Bearer x"},
                       "nested": [{"api_key": "k", "ok": 1}]});
        let r = redact(&v);
        assert_eq!(r["password"], "[redacted]");
        assert_eq!(r["headers"]["Authorization"], "[redacted]");
        assert_eq!(r["nested"][0]["api_key"], "[redacted]");
        assert_eq!(r["nested"][0]["ok"], 1);
        assert_eq!(r["name"], "t");
        assert!(!r.to_string().contains("hunter2") && !r.to_string().contains("Bearer"));
    }

    #[test]
    fn a_save_that_changes_nothing_is_no_change() {
        struct Root;
        impl Actor for Root {
            fn actor_id(&self) -> Uuid {
                Uuid::nil()
            }
            fn actor_name(&self) -> &str {
                "root"
            }
        }
        let admin = Root;
        let same = NewChange::by(&admin, "role.update", "member")
            .before(json!({"tools": ["a"], "updated_at": "1"}))
            .after(json!({"tools": ["a"], "updated_at": "2"}));
        assert!(same.is_noop());
        let changed = same
            .clone()
            .after(json!({"tools": ["b"], "updated_at": "2"}));
        assert!(!changed.is_noop());
        assert!(!NewChange::by(&admin, "user.delete", "x").is_noop());
    }

    #[test]
    fn like_wildcards_are_literal() {
        assert_eq!(escape_like("a_b%c\\"), "a\\_b\\%c\\\\");
    }
}
