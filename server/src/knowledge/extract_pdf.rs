//! PDF → text with pdf-extract, defended, since uploads are untrusted:
//! 1. encrypted files are refused up front (lopdf would decrypt and inflate unchecked);
//! 2. every stream in the raw file is decoded with a bounded decoder against one budget,
//!    before lopdf loads anything (`extract_pdf_scan`);
//! 3. the loaded document is bounded in pages, its streams decoded again within the budget,
//!    the content pdf-extract will walk (repeated drawings included) bounded in bytes and
//!    operators, loops in it and deep page trees refused (`extract_pdf_graph`);
//! 4. lopdf and pdf-extract panic on odd input: panics become `PdfUnreadable`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use lopdf::Document;
use pdf_extract::{output_doc, PlainTextOutput};

use super::pdf_graph::check_document;
use super::pdf_scan::{check_streams, find, is_regular};
use super::{ExtractError, ExtractLimits};

/// The text of the PDF `bytes`, normalised (`normalize`).
pub(super) fn pdf_text(bytes: &[u8], limits: &ExtractLimits) -> Result<String, ExtractError> {
    let raw = guarded(|| {
        let doc = checked(bytes, limits)?;
        let mut text = String::new();
        output_doc(&doc, &mut PlainTextOutput::new(&mut text))
            .map_err(|e| ExtractError::PdfUnreadable(e.to_string()))?;
        Ok(text)
    })?;
    let text = normalize(&raw);
    if text.trim().is_empty() {
        return Err(ExtractError::NoText);
    }
    if text.len() > limits.max_text_bytes {
        return Err(ExtractError::TooLarge {
            size: text.len(),
            limit: limits.max_text_bytes,
        });
    }
    Ok(text)
}

/// The guard alone (stages 1 to 3, lopdf's panics caught): the document pdf-extract may
/// be given, repaired, or why not.
pub(super) fn pdf_guard(bytes: &[u8], limits: &ExtractLimits) -> Result<(), ExtractError> {
    guarded(|| checked(bytes, limits).map(|_| String::new())).map(|_| ())
}

/// Stages 1 to 3 of the guard: the loaded document, checked and repaired. Not panic-safe
/// by itself (lopdf): callers run it inside `guarded`.
fn checked(bytes: &[u8], limits: &ExtractLimits) -> Result<Document, ExtractError> {
    // The header may sit after up to 1 KiB of junk; lopdf looks for it the same way.
    if find(bytes.get(..1024 + 5).unwrap_or(bytes), b"%PDF-", 0).is_none() {
        return Err(ExtractError::PdfUnreadable(
            "it is not a PDF: no %PDF- header".into(),
        ));
    }
    if has_encrypt_entry(bytes) {
        return Err(ExtractError::PdfEncrypted);
    }
    check_streams(bytes, limits.max_pdf_stream_bytes)?;
    let mut doc =
        Document::load_mem(bytes).map_err(|e| ExtractError::PdfUnreadable(e.to_string()))?;
    if doc.is_encrypted() {
        return Err(ExtractError::PdfEncrypted);
    }
    let pages = doc.get_pages().len();
    if pages == 0 {
        return Err(ExtractError::PdfUnreadable("it has no pages".into()));
    }
    if pages > limits.max_pdf_pages {
        return Err(ExtractError::TooManyPages {
            pages,
            limit: limits.max_pdf_pages,
        });
    }
    check_document(&mut doc, limits)?;
    Ok(doc)
}

/// A trailer (or cross-reference stream) entry `/Encrypt`; `/EncryptMetadata` does not count.
fn has_encrypt_entry(bytes: &[u8]) -> bool {
    const KEY: &[u8] = b"/Encrypt";
    let mut at = 0;
    while let Some(found) = find(bytes, KEY, at) {
        at = found + KEY.len();
        if !bytes.get(at).is_some_and(|&c| is_regular(c)) {
            return true;
        }
    }
    false
}

/// Runs `work`, turning a panic inside lopdf or pdf-extract into `PdfUnreadable`.
fn guarded(work: impl FnOnce() -> Result<String, ExtractError>) -> Result<String, ExtractError> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        tracing::warn!(panic = %why, "PDF extraction panicked");
        Err(ExtractError::PdfUnreadable(
            "the PDF reader failed on it; it may be damaged".into(),
        ))
    })
}

/// Light clean-up of pdf-extract's output: one kind of line end, no control characters,
/// no trailing spaces, never two blank lines in a row, none at either end. Offsets
/// stored for citations refer to this text.
pub(super) fn normalize(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut blank = false;
    for line in raw.replace("\r\n", "\n").split(['\n', '\r']) {
        let line: String = line
            .chars()
            .filter(|&c| c == '\t' || !c.is_control())
            .collect();
        let line = line.trim_end();
        if line.is_empty() {
            blank = true;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank { "\n\n" } else { "\n" });
        }
        out.push_str(line);
        blank = false;
    }
    out
}
