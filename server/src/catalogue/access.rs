//! Which catalogue models a caller may use: the role's `models` list (deny by default, `*`
//! for all) read now, so that an admin's change applies to the next request.

use diesel_async::AsyncPgConnection;

use super::{CatalogueError, Snapshot};
use crate::db::models::role;

/// The caller's role and the models it lists, as the database has them now.
pub struct RoleModels {
    pub role: String,
    pub models: Vec<String>,
}

impl RoleModels {
    /// Reads `role_name`'s models (none when the role is gone).
    pub async fn of(conn: &mut AsyncPgConnection, role_name: &str) -> diesel::QueryResult<Self> {
        let models = role::find(conn, role_name)
            .await?
            .map(|r| r.models)
            .unwrap_or_default();
        Ok(Self {
            role: role_name.to_owned(),
            models,
        })
    }

    /// `unknown_model` (422) unless the catalogue offers `model`; `model_not_allowed` (403)
    /// naming the role unless it may use it.
    pub fn check(&self, catalogue: &Snapshot, model: &str) -> Result<(), CatalogueError> {
        if catalogue.get(model).is_none() {
            // Bounded: an unknown name is not echoed whole.
            let shown: String = model.chars().take(80).collect();
            return Err(CatalogueError::UnknownModel(format!(
                "`{shown}` is not offered here (it may have been removed); pick one of: {}",
                self.allowed_names(catalogue).join(", ")
            )));
        }
        if !super::allows(&self.models, model) {
            return Err(not_allowed(&self.role, model));
        }
        Ok(())
    }

    /// The names of the models the role may use, in catalogue order.
    pub fn allowed_names(&self, catalogue: &Snapshot) -> Vec<String> {
        catalogue
            .allowed(&self.models)
            .map(|m| m.name.clone())
            .collect()
    }

    /// The model a new conversation gets: `preferred` when allowed, else the catalogue's
    /// default when allowed, else the first allowed; `model_not_allowed` when the role may
    /// use none.
    pub fn pick(
        &self,
        catalogue: &Snapshot,
        preferred: Option<&str>,
    ) -> Result<String, CatalogueError> {
        catalogue
            .pick_for(&self.models, preferred)
            .map(str::to_owned)
            .ok_or_else(|| {
                CatalogueError::NotAllowed(format!(
                    "the role `{}` may use no model; ask an admin to allow one",
                    self.role
                ))
            })
    }
}

/// `model_not_allowed`, naming the role.
pub fn not_allowed(role: &str, model: &str) -> CatalogueError {
    let shown: String = model.chars().take(80).collect();
    CatalogueError::NotAllowed(format!("the role `{role}` may not use the model `{shown}`"))
}
