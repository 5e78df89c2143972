//! Built-in tools. Adding one = a new file here + one line in [`all`].

pub mod calculator;
pub mod current_time;

use std::sync::Arc;

use super::Tool;

pub use calculator::Calculator;
pub use current_time::CurrentTime;

/// Every built-in tool, ready for [`super::Registry::register`].
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(CurrentTime::new()), Arc::new(Calculator)]
}
