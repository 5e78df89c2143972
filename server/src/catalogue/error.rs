//! The catalogue's refusals: an edit the catalogue cannot take, a model a caller may not
//! use. `error/` turns them into HTTP answers.

/// Why the catalogue refused.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// No such provider or model.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The entry comes from the configuration (`configured_provider` / `configured_model`).
    #[error("the {what} `{name}` comes from the configuration; change it there")]
    Configured { what: &'static str, name: String },
    /// Not an acceptable entry (`invalid_provider` / `invalid_model`).
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    /// A change the catalogue as it is cannot take: the name is taken, the entry is in use
    /// (`provider_exists`, `model_exists`, `provider_in_use`, `model_in_use`).
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// An edit that moves a provider to another origin without its key.
    #[error(
        "kind or base_url moves the provider to another endpoint: send its api_key again \
         (a stored key is never sent anywhere else)"
    )]
    KeyRequired,
    /// Another admin changed the entry at the same moment.
    #[error("another admin changed this entry at the same moment; reload and try again")]
    Changed,
    /// The catalogue no longer offers the model (the message names those the role may use).
    #[error("{0}")]
    UnknownModel(String),
    /// The caller's role may not use the model, or any model.
    #[error("{0}")]
    NotAllowed(String),
    #[error(transparent)]
    Db(#[from] diesel::result::Error),
    #[error(transparent)]
    Pool(#[from] crate::db::DbError),
}

impl CatalogueError {
    /// `configured_provider` / `configured_model` for an entry of the configuration.
    pub fn configured(what: &'static str, name: &str) -> Self {
        Self::Configured {
            what,
            name: name.to_owned(),
        }
    }
}
