//! File → plain text for knowledge documents. Text kinds keep the file's bytes exactly (chunk
//! offsets are shown to users as citations); HTML goes through the `http_get` reducer; PDFs
//! are parsed behind a guard against decompression bombs and parser panics (`extract_pdf`).
//! Every error says, in words an end user can act on, what is wrong with that one file.

#[path = "extract_child.rs"]
pub mod child;
#[path = "extract_isolated.rs"]
mod isolated;
#[path = "extract_pdf.rs"]
mod pdf;
#[cfg(test)]
#[path = "extract_pdf_budget_tests.rs"]
mod pdf_budget_tests;
#[path = "extract_pdf_decode.rs"]
mod pdf_decode;
#[path = "extract_pdf_graph.rs"]
mod pdf_graph;
#[cfg(test)]
#[path = "extract_pdf_guard_tests.rs"]
mod pdf_guard_tests;
#[path = "extract_pdf_ops.rs"]
mod pdf_ops;
#[path = "extract_pdf_scan.rs"]
mod pdf_scan;
#[cfg(test)]
#[path = "extract_pdf_tests.rs"]
mod pdf_tests;
#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;

use serde::{Deserialize, Serialize};

use crate::tools::html_text::html_to_text;

pub use isolated::{extract_isolated, Extractor};

/// The extensions accepted, for error messages and the UI.
pub const ACCEPTED_EXTENSIONS: &[&str] = &[
    "txt", "text", "log", "md", "markdown", "csv", "html", "htm", "pdf",
];
/// The short list users are told about when a file is refused.
const ACCEPTED_HINT: &str = ".txt, .md, .csv, .html or .pdf";
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What a file is, by its extension (lower-cased): txt/text/log → Text, md/markdown →
/// Markdown, csv → Csv, html/htm → Html, pdf → Pdf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Text,
    Markdown,
    Csv,
    Html,
    Pdf,
}

impl FileKind {
    /// The kind of the file called `name` (a bare name or a path).
    pub fn of(name: &str) -> Result<FileKind, ExtractError> {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        let ext = match base.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
            _ => String::new(),
        };
        match ext.as_str() {
            "txt" | "text" | "log" => Ok(FileKind::Text),
            "md" | "markdown" => Ok(FileKind::Markdown),
            "csv" => Ok(FileKind::Csv),
            "html" | "htm" => Ok(FileKind::Html),
            "pdf" => Ok(FileKind::Pdf),
            _ => Err(ExtractError::Unsupported(ext.chars().take(20).collect())),
        }
    }

    /// The kind named by `as_str`.
    pub fn parse(name: &str) -> Option<FileKind> {
        [Self::Text, Self::Markdown, Self::Csv, Self::Html, Self::Pdf]
            .into_iter()
            .find(|k| k.as_str() == name)
    }

    /// Kinds read by a parser of their own (PDF, HTML), run in a limited child process;
    /// text kinds are only checked, byte by byte, in the server.
    pub fn is_parsed(self) -> bool {
        matches!(self, FileKind::Html | FileKind::Pdf)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Text => "text",
            FileKind::Markdown => "markdown",
            FileKind::Csv => "csv",
            FileKind::Html => "html",
            FileKind::Pdf => "pdf",
        }
    }
}

/// Bounds on what one file may cost to extract.
#[derive(Debug, Clone)]
pub struct ExtractLimits {
    /// Largest text kept (for text kinds: the file itself).
    pub max_text_bytes: usize,
    pub max_pdf_pages: usize,
    /// Total bytes all PDF streams may decompress to; four times this bounds the content
    /// pdf-extract may walk, counting repeated drawings (`extract_pdf_graph`).
    pub max_pdf_stream_bytes: usize,
    /// Operators pdf-extract may run over the whole file, repeated drawings counted: its
    /// memory and time grow with operators, not bytes (`(a)Tj` is five bytes).
    pub max_pdf_operators: u64,
    /// Nesting of the page tree (a page's chain of `/Parent`s) allowed.
    pub max_pdf_tree_depth: usize,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            max_text_bytes: 8 << 20,
            max_pdf_pages: 2000,
            max_pdf_stream_bytes: 64 << 20,
            max_pdf_operators: 2_000_000,
            max_pdf_tree_depth: 64,
        }
    }
}

/// A file's text, as chunked and cited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub kind: FileKind,
    pub text: String,
}

/// Why a file gave no text. Messages are shown to end users next to the file name. The
/// extraction child sends it back to the server as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractError {
    /// The (lower-cased) extension, empty when the name has none.
    #[error("{} are not supported; add {}", unsupported_what(.0), ACCEPTED_HINT)]
    Unsupported(String),
    #[error("the file is empty")]
    Empty,
    #[error("this looks like a binary file, not text ({detail})")]
    Binary { detail: String },
    #[error("the file is not UTF-8 text (invalid byte at byte {offset}); save it as UTF-8")]
    NotUtf8 { offset: usize },
    #[error("the file is UTF-16 text; save it as UTF-8")]
    Utf16,
    #[error("the text is {}, more than the {} limit", size_words(.size), size_words(.limit))]
    TooLarge { size: usize, limit: usize },
    #[error("the PDF has {pages} pages, more than the {limit}-page limit")]
    TooManyPages { pages: usize, limit: usize },
    #[error("the PDF expands to more than {} of content: refused", size_words(.limit))]
    PdfBomb { limit: usize },
    #[error("the PDF is encrypted or password-protected; remove the protection and add it again")]
    PdfEncrypted,
    #[error("the PDF could not be read ({0})")]
    PdfUnreadable(String),
    #[error("the PDF has no extractable text (scanned images?)")]
    NoText,
    #[error("the HTML page has no readable text")]
    HtmlNoText,
    /// Within the byte budget, but more work than a reader should do (deep page tree,
    /// millions of drawing operators).
    #[error("the PDF is too complex to read: {0}")]
    PdfTooComplex(String),
    #[error("reading the file took longer than {secs} seconds: stopped")]
    Timeout { secs: u64 },
    #[error("reading the file used more than {secs} seconds of CPU: stopped")]
    CpuLimit { secs: u64 },
    #[error("reading the file needed more than {mb} MiB of memory: stopped")]
    OutOfMemory { mb: u64 },
    #[error("the file reader failed on it ({0}); the file may be damaged")]
    Crashed(String),
    #[error("the document reader is unavailable; ask an administrator")]
    Unavailable,
    /// The file was removed or replaced while it was read: nobody wants the answer.
    #[error("reading the file was cancelled")]
    Cancelled,
}

impl ExtractError {
    /// Stable snake_case code for APIs and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            ExtractError::Unsupported(_) => "unsupported_file_type",
            ExtractError::Empty => "empty_file",
            ExtractError::Binary { .. } => "binary_file",
            ExtractError::NotUtf8 { .. } | ExtractError::Utf16 => "not_utf8",
            ExtractError::TooLarge { .. } => "text_too_large",
            ExtractError::TooManyPages { .. } | ExtractError::PdfBomb { .. } => "pdf_too_large",
            ExtractError::PdfEncrypted => "pdf_encrypted",
            ExtractError::PdfUnreadable(_) => "pdf_unreadable",
            ExtractError::NoText | ExtractError::HtmlNoText => "no_text",
            ExtractError::PdfTooComplex(_) => "pdf_too_complex",
            ExtractError::Timeout { .. } | ExtractError::CpuLimit { .. } => "extraction_timeout",
            ExtractError::OutOfMemory { .. } => "extraction_memory",
            ExtractError::Crashed(_) => "extraction_failed",
            ExtractError::Unavailable => "extraction_unavailable",
            ExtractError::Cancelled => "extraction_cancelled",
        }
    }
}

fn unsupported_what(ext: &str) -> String {
    if ext.is_empty() {
        "files without an extension".to_owned()
    } else {
        format!(".{ext} files")
    }
}

/// "64 MiB", "9.5 MiB", "12 KiB", "300 bytes".
fn size_words(bytes: &usize) -> String {
    let bytes = *bytes;
    const MIB: usize = 1 << 20;
    if bytes >= MIB {
        if bytes.is_multiple_of(MIB) {
            format!("{} MiB", bytes / MIB)
        } else {
            format!("{:.1} MiB", bytes as f64 / MIB as f64)
        }
    } else if bytes >= 1024 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{bytes} bytes")
    }
}

/// The text of the file `name`, in this process. Blocking (PDF parsing is CPU work), and
/// unbounded in time and memory for PDFs: the server reads parsed kinds through
/// `extract_isolated`; this is what the child runs.
pub fn extract(
    name: &str,
    bytes: &[u8],
    limits: &ExtractLimits,
) -> Result<Extracted, ExtractError> {
    extract_kind(FileKind::of(name)?, bytes, limits)
}

/// The PDF guard alone, without pdf-extract (for the fuzz target): `Ok` when the file
/// would be handed to the parser.
pub fn pdf_guard(bytes: &[u8], limits: &ExtractLimits) -> Result<(), ExtractError> {
    pdf::pdf_guard(bytes, limits)
}

/// `extract` for a file of a known kind.
pub fn extract_kind(
    kind: FileKind,
    bytes: &[u8],
    limits: &ExtractLimits,
) -> Result<Extracted, ExtractError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ExtractError::Empty);
    }
    let text = match kind {
        FileKind::Text | FileKind::Markdown | FileKind::Csv => plain_text(bytes, limits)?,
        FileKind::Html => html(bytes, limits)?,
        FileKind::Pdf => pdf::pdf_text(bytes, limits)?,
    };
    Ok(Extracted { kind, text })
}

/// The file's bytes as they are, minus a UTF-8 BOM, if they are really text.
fn plain_text(bytes: &[u8], limits: &ExtractLimits) -> Result<String, ExtractError> {
    let (skip, body) = match bytes.strip_prefix(UTF8_BOM) {
        Some(body) => (UTF8_BOM.len(), body),
        None => (0, bytes),
    };
    if body.len() > limits.max_text_bytes {
        return Err(too_large(body.len(), limits));
    }
    if body.starts_with(b"\xFF\xFE") || body.starts_with(b"\xFE\xFF") {
        return Err(ExtractError::Utf16);
    }
    if let Some(at) = body.iter().position(|&b| b == 0) {
        return Err(ExtractError::Binary {
            detail: format!("NUL bytes at byte {}", at + skip),
        });
    }
    let text = std::str::from_utf8(body).map_err(|e| ExtractError::NotUtf8 {
        offset: e.valid_up_to() + skip,
    })?;
    if text.trim().is_empty() {
        return Err(ExtractError::Empty);
    }
    refuse_control_soup(text)?;
    Ok(text.to_owned())
}

/// Valid UTF-8 can still be a binary format: refuse when more than 5% of the characters
/// (and more than a handful) are control characters that text never needs. Tab, line
/// ends, form feed and ESC (ANSI colours in logs) are fine.
fn refuse_control_soup(text: &str) -> Result<(), ExtractError> {
    let (mut total, mut odd) = (0usize, 0usize);
    for c in text.chars() {
        total += 1;
        let harmless = matches!(c, '\t' | '\n' | '\r' | '\x0C' | '\x1B');
        if c.is_control() && !harmless {
            odd += 1;
        }
    }
    if odd > 8 && odd * 20 > total {
        return Err(ExtractError::Binary {
            detail: format!("{}% control characters", odd * 100 / total),
        });
    }
    Ok(())
}

/// Readable text of an HTML page. Old pages are often not UTF-8: decode leniently, as the
/// output is a rendering anyway, but still refuse binaries.
fn html(bytes: &[u8], limits: &ExtractLimits) -> Result<String, ExtractError> {
    let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    if let Some(at) = body.iter().position(|&b| b == 0) {
        return Err(ExtractError::Binary {
            detail: format!("NUL bytes at byte {}", at + bytes.len() - body.len()),
        });
    }
    let text = html_to_text(&String::from_utf8_lossy(body));
    if text.trim().is_empty() {
        return Err(ExtractError::HtmlNoText);
    }
    if text.len() > limits.max_text_bytes {
        return Err(too_large(text.len(), limits));
    }
    Ok(text)
}

fn too_large(size: usize, limits: &ExtractLimits) -> ExtractError {
    ExtractError::TooLarge {
        size,
        limit: limits.max_text_bytes,
    }
}
