//! Where a conversation's generated files go (the code interpreter's outputs):
//! `outputs/<conversation>/<name>` in the user's workspace, under the same path rules and
//! quota as every other file, so they list, download, share and attach like the rest.

use uuid::Uuid;

use super::{WorkspaceError, WorkspacePath};

/// The workspace folder holding every conversation's outputs.
pub const OUTPUTS_DIR: &str = "outputs";

/// The workspace path of the output `name` of `conversation`; `name` may have folders of
/// its own, and is refused like any path that is not a plain relative one.
pub fn output_path(conversation: Uuid, name: &str) -> Result<WorkspacePath, WorkspaceError> {
    WorkspacePath::parse(&format!("{OUTPUTS_DIR}/{conversation}/{name}"))
        .map_err(WorkspaceError::InvalidPath)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_stay_in_their_conversation_folder() {
        let c = Uuid::nil();
        let p = output_path(c, "plots/a.png").map(|p| p.as_str().to_owned());
        assert_eq!(
            p.ok().as_deref(),
            Some("outputs/00000000-0000-0000-0000-000000000000/plots/a.png")
        );
        for hostile in ["../a", "/etc/passwd", "a/../../b", "", "a\0b"] {
            assert!(output_path(c, hostile).is_err(), "{hostile:?}");
        }
    }
}
