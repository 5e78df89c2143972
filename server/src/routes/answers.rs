//! Answer shapes many routes share, typed so the OpenAPI description states them and
//! Schemathesis can check each answer against it.

use serde::Serialize;
use utoipa::ToSchema;

/// `{items: [T]}`: a list with nothing beside it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Items<T> {
    pub items: Vec<T>,
}

impl<T> Items<T> {
    pub fn of(items: Vec<T>) -> Self {
        Self { items }
    }
}
