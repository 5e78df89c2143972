//! `/v1`: the OpenAI-compatible API (`GET /v1/models`, `POST /v1/chat/completions`), for
//! clients that speak OpenAI's protocol: official SDKs, editor assistants, scripts. Bearer
//! personal API keys or access tokens; errors in OpenAI's shape.

mod assistant;
pub mod completions;
pub mod error;
mod images;
mod request;
mod respond;

pub use completions::configure;
