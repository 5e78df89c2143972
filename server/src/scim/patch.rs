//! PATCH operations as Entra ID and Okta send them, applied to a draft: `replace` of
//! `active` (Entra's `"False"` included), of names, e-mail and ids, with or without a
//! path; group membership `add` / `remove` (Okta's `members[value eq "…"]` included) and
//! `replace`. Attributes we do not keep (extensions, phone numbers, ...) are ignored.

use serde_json::Value;
use uuid::Uuid;

use super::wire::{BoolLike, PatchOperation};
use super::ScimError;
use crate::db::models::scim::ScimUserFields;

/// Most operations in one request.
pub const MAX_OPERATIONS: usize = 100;
/// Longest attribute value kept.
const MAX_VALUE_BYTES: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Replace,
    Remove,
}

fn op_of(o: &PatchOperation) -> Result<Op, ScimError> {
    match o.op.to_ascii_lowercase().as_str() {
        "add" => Ok(Op::Add),
        "replace" => Ok(Op::Replace),
        "remove" => Ok(Op::Remove),
        other => Err(ScimError::bad(
            "invalidSyntax",
            format!("unknown PATCH op `{other}`"),
        )),
    }
}

fn check_count(ops: &[PatchOperation]) -> Result<(), ScimError> {
    if ops.len() > MAX_OPERATIONS {
        return Err(ScimError::bad(
            "tooMany",
            format!("at most {MAX_OPERATIONS} operations"),
        ));
    }
    Ok(())
}

/// A user as the operations leave it.
#[derive(Debug, Clone)]
pub struct UserDraft {
    pub fields: ScimUserFields,
    pub active: bool,
}

/// Applies `ops` to `draft`.
pub fn apply_user(draft: &mut UserDraft, ops: &[PatchOperation]) -> Result<(), ScimError> {
    check_count(ops)?;
    for o in ops {
        let op = op_of(o)?;
        let value = if op == Op::Remove {
            Value::Null
        } else {
            o.value.clone().unwrap_or(Value::Null)
        };
        match o.path.as_deref() {
            Some(path) => set_user_attr(draft, path, &value)?,
            None => {
                let Value::Object(map) = value else {
                    return Err(ScimError::bad(
                        "invalidValue",
                        "an operation without a path needs an object value",
                    ));
                };
                for (k, v) in &map {
                    set_user_attr(draft, k, v)?;
                }
            }
        }
    }
    Ok(())
}

fn text(path: &str, v: &Value) -> Result<Option<String>, ScimError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.len() <= MAX_VALUE_BYTES => {
            Ok(Some(s.clone()).filter(|s| !s.is_empty()))
        }
        _ => Err(ScimError::bad(
            "invalidValue",
            format!("`{path}` must be a string of at most {MAX_VALUE_BYTES} bytes"),
        )),
    }
}

fn set_user_attr(draft: &mut UserDraft, path: &str, v: &Value) -> Result<(), ScimError> {
    let f = &mut draft.fields;
    match path.to_ascii_lowercase().as_str() {
        "active" => {
            let b: BoolLike = serde_json::from_value(v.clone())
                .map_err(|_| ScimError::bad("invalidValue", "`active` must be a boolean"))?;
            draft.active = b.get();
        }
        "username" => {
            f.user_name = text(path, v)?
                .ok_or_else(|| ScimError::bad("invalidValue", "`userName` cannot be removed"))?;
        }
        "externalid" => f.external_id = text(path, v)?,
        "displayname" => f.display_name = text(path, v)?,
        "name.givenname" => f.given_name = text(path, v)?,
        "name.familyname" => f.family_name = text(path, v)?,
        "name" => match v {
            Value::Object(m) => {
                if let Some(g) = m.get("givenName") {
                    f.given_name = text("name.givenName", g)?;
                }
                if let Some(fam) = m.get("familyName") {
                    f.family_name = text("name.familyName", fam)?;
                }
            }
            Value::Null => (f.given_name, f.family_name) = (None, None),
            _ => return Err(ScimError::bad("invalidValue", "`name` must be an object")),
        },
        "emails" => match v {
            Value::Array(items) => {
                let emails: Vec<super::wire::EmailIn> =
                    serde_json::from_value(Value::Array(items.clone())).map_err(|_| {
                        ScimError::bad("invalidValue", "`emails` must be a list of {value}")
                    })?;
                f.email = super::wire::primary_email(&emails);
            }
            Value::Null => f.email = None,
            _ => return Err(ScimError::bad("invalidValue", "`emails` must be a list")),
        },
        // Entra ID: `emails[type eq "work"].value`.
        p if p.starts_with("emails[") && p.ends_with("].value") => f.email = text(path, v)?,
        _ => {}
    }
    Ok(())
}

/// What a group PATCH does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupChange {
    Rename(String),
    ExternalId(Option<String>),
    AddMembers(Vec<Uuid>),
    RemoveMembers(Vec<Uuid>),
    RemoveAllMembers,
    ReplaceMembers(Vec<Uuid>),
}

/// Reads group operations into changes.
pub fn group_changes(ops: &[PatchOperation]) -> Result<Vec<GroupChange>, ScimError> {
    check_count(ops)?;
    let mut out = Vec::new();
    for o in ops {
        let op = op_of(o)?;
        let value = o.value.clone().unwrap_or(Value::Null);
        let path = o.path.as_deref().map(str::trim);
        match (op, path.map(str::to_ascii_lowercase).as_deref()) {
            (Op::Add, Some("members")) => out.push(GroupChange::AddMembers(member_ids(&value)?)),
            (Op::Replace, Some("members")) => {
                out.push(GroupChange::ReplaceMembers(member_ids(&value)?))
            }
            (Op::Remove, Some("members")) if value.is_null() => {
                out.push(GroupChange::RemoveAllMembers)
            }
            (Op::Remove, Some("members")) => {
                out.push(GroupChange::RemoveMembers(member_ids(&value)?))
            }
            (Op::Remove, Some(p)) if p.starts_with("members[") => {
                let id = filtered_member(path.unwrap_or_default())?;
                out.push(GroupChange::RemoveMembers(id.into_iter().collect()));
            }
            (Op::Add | Op::Replace, Some("displayname")) => {
                out.push(GroupChange::Rename(display_name(&value)?));
            }
            (Op::Add | Op::Replace, Some("externalid")) => {
                out.push(GroupChange::ExternalId(text("externalId", &value)?));
            }
            (Op::Add | Op::Replace, None) => {
                let Value::Object(map) = value else {
                    return Err(ScimError::bad(
                        "invalidValue",
                        "an operation without a path needs an object value",
                    ));
                };
                for (k, v) in &map {
                    match k.to_ascii_lowercase().as_str() {
                        "displayname" => out.push(GroupChange::Rename(display_name(v)?)),
                        "externalid" => out.push(GroupChange::ExternalId(text("externalId", v)?)),
                        "members" if op == Op::Add => {
                            out.push(GroupChange::AddMembers(member_ids(v)?))
                        }
                        "members" => out.push(GroupChange::ReplaceMembers(member_ids(v)?)),
                        _ => {}
                    }
                }
            }
            (_, Some(p)) => {
                return Err(ScimError::bad(
                    "invalidPath",
                    format!("unsupported path `{p}` for groups"),
                ))
            }
            (Op::Remove, None) => {
                return Err(ScimError::bad(
                    "noTarget",
                    "a remove operation needs a path",
                ))
            }
        }
    }
    Ok(out)
}

fn display_name(v: &Value) -> Result<String, ScimError> {
    text("displayName", v)?
        .ok_or_else(|| ScimError::bad("invalidValue", "`displayName` cannot be empty"))
}

/// Ids in `[{"value": "<id>"}, ...]`; ids that are not ours (not UUIDs) are left out.
fn member_ids(v: &Value) -> Result<Vec<Uuid>, ScimError> {
    let items = match v {
        Value::Array(items) => items.as_slice(),
        Value::Object(_) => std::slice::from_ref(v),
        _ => {
            return Err(ScimError::bad(
                "invalidValue",
                "members must be a list of {value}",
            ))
        }
    };
    if items.len() > super::MAX_PAGE as usize * 5 {
        return Err(ScimError::bad(
            "tooMany",
            "too many members in one operation",
        ));
    }
    Ok(items
        .iter()
        .filter_map(|m| m.get("value").and_then(Value::as_str))
        .filter_map(|s| s.parse().ok())
        .collect())
}

/// The id in Okta's `members[value eq "<id>"]` (`None`: not one of ours).
fn filtered_member(path: &str) -> Result<Option<Uuid>, ScimError> {
    let bad = || ScimError::bad("invalidPath", format!("unsupported path `{path}`"));
    let inner = path
        .strip_prefix("members[")
        .and_then(|p| p.strip_suffix(']'))
        .ok_or_else(bad)?;
    let (attr, rest) = inner
        .trim()
        .split_once(char::is_whitespace)
        .ok_or_else(bad)?;
    let (op, value) = rest
        .trim_start()
        .split_once(char::is_whitespace)
        .ok_or_else(bad)?;
    if !attr.eq_ignore_ascii_case("value") || !op.eq_ignore_ascii_case("eq") {
        return Err(bad());
    }
    let value: String = serde_json::from_str(value.trim()).map_err(|_| bad())?;
    Ok(value.parse().ok())
}

#[cfg(test)]
mod tests;
