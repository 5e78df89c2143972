//! Authentication: password hashing, access tokens (JWT), refresh tokens, login throttling
//! and the extractors that guard every route.

pub mod api_key;
pub mod error;
pub mod extract;
pub mod jwt;
pub mod key_cache;
pub mod oidc;
pub mod password;
pub mod password_change;
pub mod refresh;
pub mod session;
pub mod throttle;
pub mod token;

pub use api_key::ApiCaller;
pub use error::AuthError;
pub use extract::{AdminUser, AuthUser};
pub use token::SignedToken;
