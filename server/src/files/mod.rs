//! The users' files, as a room of their own: every user has a workspace of files (the file
//! tools, uploads and attachments, shared conversations' files, documents added to
//! collections, the code interpreter's outputs under `outputs/<conversation>/...`).
//!
//! [`WorkspaceStore`] is the one face its users hold. It validates every path
//! ([`WorkspacePath::parse`]), applies the size limits, serialises a user's writes so the
//! quota check and the write cannot race within one process, and stops uploads of a
//! deleted path; where the bytes live is a [`Storage`]. The first one is [`LocalDir`], a
//! directory per user reached only through an OS-level jail; another (object storage) plugs
//! in through [`WorkspaceStore::with_storage`] without touching the store's users.

pub mod image;
mod image_limits;
mod local;
mod local_fs;
mod outputs;
pub mod path;
mod remove;
mod storage;
mod store;
pub mod text;
mod types;
mod uploads;

#[cfg(test)]
mod tests;

pub use image_limits::{ImageDecoders, ImageLimits};
pub use local::LocalDir;
pub use outputs::{output_path, OUTPUTS_DIR};
pub use path::{quote, WorkspacePath};
pub use storage::{Held, Storage};
pub use store::WorkspaceStore;
pub use text::{count_lines, text_chunk, TextChunk};
pub use types::{FileEntry, Quota, WorkspaceError, Written};
pub use uploads::{UploadError, UploadTicket, Uploaded};
