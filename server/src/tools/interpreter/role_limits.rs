//! A role's code interpreter limits (`role_sandbox`): an admin may tighten `[sandbox]` for a
//! role, never loosen it. Read when a `run_python` call runs (one query, only on those
//! calls); the job gets the smaller of the server's setting, the role's and the call's.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use uuid::Uuid;

use crate::db::schema::{role_sandbox, users};
use crate::sandbox::JobLimits;

/// One role's limits, as stored and as the admin API shows them; `null`: the server's.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    Queryable,
    Selectable,
    utoipa::ToSchema,
)]
#[diesel(table_name = role_sandbox)]
pub struct RoleSandbox {
    /// Wall time of one run, seconds (and its CPU time).
    pub timeout_secs: Option<i32>,
    /// Memory of each process in the jail, MiB.
    pub memory_mb: Option<i32>,
    /// Processes (and threads) in one jail.
    pub max_processes: Option<i32>,
    /// Bytes of stdout kept, and of stderr.
    pub max_output_bytes: Option<i32>,
    /// Files taken from `/mnt/data/outputs` per run.
    pub max_files: Option<i32>,
    /// Largest file taken from `/mnt/data/outputs`, bytes.
    pub max_file_bytes: Option<i64>,
}

impl RoleSandbox {
    /// `limits` tightened by this role's values (a value can only lower a limit).
    pub fn tighten(&self, limits: &mut JobLimits) {
        let n = |v: Option<i32>| v.and_then(|v| u64::try_from(v).ok());
        if let Some(secs) = n(self.timeout_secs) {
            limits.wall = limits.wall.min(Duration::from_secs(secs));
            limits.cpu = limits.cpu.min(Duration::from_secs(secs));
        }
        if let Some(mb) = n(self.memory_mb) {
            limits.memory_bytes = limits.memory_bytes.min(mb.saturating_mul(1024 * 1024));
        }
        if let Some(p) = n(self.max_processes) {
            limits.max_processes = limits.max_processes.min(p.try_into().unwrap_or(u32::MAX));
        }
        if let Some(b) = n(self.max_output_bytes) {
            limits.max_output_bytes = limits
                .max_output_bytes
                .min(b.try_into().unwrap_or(usize::MAX));
        }
        if let Some(f) = n(self.max_files) {
            limits.max_files = limits.max_files.min(f.try_into().unwrap_or(u32::MAX));
        }
        if let Some(b) = self.max_file_bytes.and_then(|v| u64::try_from(v).ok()) {
            limits.max_file_bytes = limits.max_file_bytes.min(b);
        }
    }
}

/// The limits of `user`'s role (none set when the role has no row).
pub async fn for_user(conn: &mut AsyncPgConnection, user: Uuid) -> QueryResult<RoleSandbox> {
    let role = users::table.filter(users::id.eq(user)).select(users::role);
    let found = role_sandbox::table
        .filter(role_sandbox::role.eq_any(role))
        .select(RoleSandbox::as_select())
        .first(conn)
        .await
        .optional()?;
    Ok(found.unwrap_or_default())
}

/// The limits of role `role`, if it has any.
pub async fn for_role(
    conn: &mut AsyncPgConnection,
    role: &str,
) -> QueryResult<Option<RoleSandbox>> {
    role_sandbox::table
        .filter(role_sandbox::role.eq(role))
        .select(RoleSandbox::as_select())
        .first(conn)
        .await
        .optional()
}

/// Stores `limits` as role `role`'s.
pub async fn save(
    conn: &mut AsyncPgConnection,
    role: &str,
    limits: &RoleSandbox,
) -> QueryResult<()> {
    let values = (
        role_sandbox::timeout_secs.eq(limits.timeout_secs),
        role_sandbox::memory_mb.eq(limits.memory_mb),
        role_sandbox::max_processes.eq(limits.max_processes),
        role_sandbox::max_output_bytes.eq(limits.max_output_bytes),
        role_sandbox::max_files.eq(limits.max_files),
        role_sandbox::max_file_bytes.eq(limits.max_file_bytes),
    );
    diesel::insert_into(role_sandbox::table)
        .values((role_sandbox::role.eq(role), values))
        .on_conflict(role_sandbox::role)
        .do_update()
        .set((values, role_sandbox::updated_at.eq(diesel::dsl::now)))
        .execute(conn)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxSettings;

    #[test]
    fn a_role_only_lowers_the_limits() {
        let mut limits = JobLimits::from_settings(&SandboxSettings::default(), Some(30));
        let role = RoleSandbox {
            timeout_secs: Some(45),
            memory_mb: Some(256),
            max_files: Some(3),
            ..RoleSandbox::default()
        };
        role.tighten(&mut limits);
        assert_eq!(
            limits.wall,
            Duration::from_secs(30),
            "the call's is shorter"
        );
        assert_eq!(limits.memory_bytes, 256 * 1024 * 1024);
        assert_eq!(limits.max_files, 3);
        assert_eq!(limits.max_processes, 64, "unset: the server's");
        let role = RoleSandbox {
            timeout_secs: Some(2),
            ..RoleSandbox::default()
        };
        role.tighten(&mut limits);
        assert_eq!(
            (limits.wall, limits.cpu),
            (Duration::from_secs(2), Duration::from_secs(2))
        );
    }
}
