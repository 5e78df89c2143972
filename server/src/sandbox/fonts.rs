//! matplotlib's font list, built once per backend and copied read-only into each jail that may
//! plot. Without it every run that imports pyplot scans the system fonts again (seconds): the
//! jail's `/tmp` starts empty each time. The list is built by our own code in a jail, never by
//! the user's, so no run can plant one that another run reads.

use super::RunResult;

/// Where matplotlib looks for its caches in the jail (`MPLCONFIGDIR`).
pub const CACHE_DIR: &str = "/tmp/matplotlib";

/// Builds the list and hands it out as an output file.
pub const BUILD: &str = "\
import os, shutil, matplotlib, matplotlib.font_manager as fm
name = 'fontlist-v%d.json' % fm.FontManager.__version__
shutil.copyfile(os.path.join(matplotlib.get_cachedir(), name), '/mnt/data/outputs/' + name)
";

/// The font list, as matplotlib names and writes it.
#[derive(Debug, Clone)]
pub struct FontCache {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Whether `code` may draw (pandas plots through matplotlib too).
pub fn wanted(code: &str) -> bool {
    code.contains("matplotlib") || code.contains("pandas") || code.contains(".plot")
}

/// The list the build run left, if it is one.
pub fn from_build(ran: &RunResult) -> Option<FontCache> {
    if ran.exit != Some(0) {
        return None;
    }
    let file = ran.outputs.first()?;
    let version = file
        .path
        .strip_prefix("fontlist-v")?
        .strip_suffix(".json")?;
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    serde_json::from_slice::<serde_json::Value>(&file.bytes).ok()?;
    Some(FontCache {
        name: file.path.clone(),
        bytes: file.bytes.clone(),
    })
}
