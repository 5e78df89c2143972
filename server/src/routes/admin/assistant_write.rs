//! An admin's save or retirement of an assistant as one [`AdminWrite`]: the new version and
//! its trail row (`assistant.create`, `assistant.update`, `assistant.retire`) together.

use async_trait::async_trait;
use diesel_async::AsyncPgConnection;

use crate::assistants::store::{self, Author, SaveError};
use crate::assistants::{Assistant, AssistantSpec};
use crate::auth::AuthUser;
use crate::db::models::admin_change::{AdminWrite, NewChange};

pub(super) enum Op<'a> {
    Create(&'a AssistantSpec),
    /// A new version of `before`.
    Update {
        before: &'a Assistant,
        spec: &'a AssistantSpec,
    },
    Retire(&'a Assistant),
}

pub(super) struct AssistantWrite<'a> {
    pub who: &'a AuthUser,
    pub op: Op<'a>,
}

#[async_trait]
impl AdminWrite for AssistantWrite<'_> {
    /// The assistant as saved (a retired one as it was); `None`: it was not live.
    type Output = Option<Assistant>;
    type Error = SaveError;

    async fn write(&self, conn: &mut AsyncPgConnection) -> Result<Self::Output, SaveError> {
        let by = Author {
            id: self.who.id,
            name: &self.who.username,
        };
        match self.op {
            Op::Create(spec) => store::create(conn, spec, &by).await.map(Some),
            Op::Update { before, spec } => {
                store::update(conn, before.id, spec, &by).await.map(Some)
            }
            Op::Retire(a) => Ok(store::retire(conn, a.id).await?.then(|| a.clone())),
        }
    }

    fn trail(&self, out: &Self::Output) -> Option<NewChange> {
        let a = out.as_ref()?;
        let by = |kind| NewChange::by(self.who, kind, &a.name).id(a.id);
        Some(match self.op {
            Op::Create(_) => by("assistant.create").after(a),
            Op::Update { before, .. } => by("assistant.update").before(before).after(a),
            Op::Retire(_) => by("assistant.retire").before(a),
        })
    }
}
