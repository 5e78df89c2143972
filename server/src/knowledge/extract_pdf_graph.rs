//! Stage two of the PDF guard, on the loaded document, and the repairs pdf-extract needs.
//! pdf-extract decodes a stream every time it is used, re-parses a drawing (form XObject)
//! at every `Do`, and follows `/Parent` and nested drawings by plain recursion: a crafted
//! file could make it run for hours, or overflow the stack (which aborts the whole
//! server, unlike a panic). So every stream is decoded once more within the budget, the
//! content pdf-extract will walk is added up with repetitions, in bytes and in operators
//! (`extract_pdf_ops`), loops are refused, and so are page trees deeper than a limit.

use std::collections::{HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};

use super::pdf_decode::decode_stream;
use super::pdf_ops::operators;
use super::pdf_scan::{find, is_regular, is_whitespace};
use super::{ExtractError, ExtractLimits};

/// Nesting of drawings allowed; real documents stay far below.
const MAX_NESTING: usize = 32;
/// The content pdf-extract may walk, counting repeated drawings, in stream budgets.
const WORK_FACTOR: usize = 4;

/// Checks `doc` and prepares it for pdf-extract: default media boxes, image data dropped.
pub(super) fn check_document(
    doc: &mut Document,
    limits: &ExtractLimits,
) -> Result<(), ExtractError> {
    let measured = measure_streams(doc, limits.max_pdf_stream_bytes)?;
    let limit = limits.max_pdf_stream_bytes.saturating_mul(WORK_FACTOR);
    let view: &Document = doc;
    let mut work = Work {
        doc: view,
        measured: &measured,
        memo: HashMap::new(),
        path: Vec::new(),
        limit: limit as u64,
        max_operators: limits.max_pdf_operators,
    };
    let mut total = Cost::default();
    let mut missing_box = Vec::new();
    for page in view.page_iter() {
        let dict = view
            .get_dictionary(page)
            .map_err(|e| unreadable(&e.to_string()))?;
        if inherited(view, dict, b"MediaBox", is_box)?.is_none() {
            missing_box.push(page);
        }
        let resources = inherited(view, dict, b"Resources", |o| o.as_dict().is_ok())?;
        check_depth(view, dict, limits.max_pdf_tree_depth)?;
        let xobjects = resources.and_then(|r| xobjects(view, r.as_dict().ok()?));
        for content in view.get_page_contents(page) {
            total = total.plus(work.content(content, xobjects)?, 1);
            work.check(total)?;
        }
    }
    for page in missing_box {
        // pdf-extract panics without one; the size only matters for layout.
        if let Ok(Object::Dictionary(dict)) = doc.get_object_mut(page) {
            let letter = [0, 0, 612, 792].map(Object::Integer);
            dict.set("MediaBox", letter.to_vec());
        }
    }
    blank_images(doc);
    Ok(())
}

fn unreadable(why: &str) -> ExtractError {
    ExtractError::PdfUnreadable(why.to_owned())
}

/// A decoded stream's size, its operators, and the names it draws with `Do`, with counts.
struct Measured {
    len: usize,
    ops: u64,
    draws: HashMap<Vec<u8>, u64>,
}

/// What pdf-extract spends on some content: bytes parsed and operators run.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    bytes: u64,
    ops: u64,
}

impl Cost {
    /// `self` and `times` times `other`.
    fn plus(self, other: Cost, times: u64) -> Cost {
        Cost {
            bytes: self.bytes.saturating_add(other.bytes.saturating_mul(times)),
            ops: self.ops.saturating_add(other.ops.saturating_mul(times)),
        }
    }
}

/// Decodes every stream but images (which are dropped) within the stream budget.
fn measure_streams(
    doc: &Document,
    limit: usize,
) -> Result<HashMap<ObjectId, Measured>, ExtractError> {
    let mut spent = 0usize;
    let mut measured = HashMap::new();
    for (&id, object) in &doc.objects {
        let Object::Stream(stream) = object else {
            continue;
        };
        if is_image(&stream.dict) {
            continue;
        }
        let decoded = decode_stream(&stream.dict, &stream.content, limit.saturating_sub(spent))
            .map_err(|_| ExtractError::PdfBomb { limit })?;
        spent += decoded.cost;
        let content = decoded.content.as_deref().unwrap_or(&stream.content);
        let draws = draws(content);
        let len = content.len();
        let ops = operators(content);
        measured.insert(id, Measured { len, ops, draws });
    }
    Ok(measured)
}

/// The content pdf-extract walks, with memory of what was already added up.
struct Work<'a> {
    doc: &'a Document,
    measured: &'a HashMap<ObjectId, Measured>,
    /// Keyed by stream and the XObject dictionary in scope (forms without resources of
    /// their own use their caller's).
    memo: HashMap<(ObjectId, usize), Cost>,
    path: Vec<ObjectId>,
    /// Bytes parsed allowed.
    limit: u64,
    max_operators: u64,
}

impl<'a> Work<'a> {
    /// Refuses `cost` past either budget.
    fn check(&self, cost: Cost) -> Result<(), ExtractError> {
        if cost.bytes > self.limit {
            return Err(ExtractError::PdfBomb {
                limit: self.limit as usize,
            });
        }
        if cost.ops > self.max_operators {
            return Err(ExtractError::PdfTooComplex(format!(
                "more than {} drawing operations",
                self.max_operators
            )));
        }
        Ok(())
    }

    /// The cost of content stream `id` with `xobjects` in scope, drawings included.
    fn content(
        &mut self,
        id: ObjectId,
        xobjects: Option<&'a Dictionary>,
    ) -> Result<Cost, ExtractError> {
        let Some(measured) = self.measured.get(&id) else {
            return Ok(Cost::default());
        };
        let mut total = Cost {
            bytes: measured.len as u64,
            ops: measured.ops,
        };
        self.check(total)?;
        for (name, &times) in &measured.draws {
            let target = xobjects
                .and_then(|x| x.get(name).ok())
                .and_then(|o| o.as_reference().ok());
            let Some(target) = target else {
                continue;
            };
            let each = self.drawing(target, xobjects)?;
            total = total.plus(each, times);
            self.check(total)?;
        }
        Ok(total)
    }

    /// The cost of one `Do` of XObject `id`.
    fn drawing(
        &mut self,
        id: ObjectId,
        inherited: Option<&'a Dictionary>,
    ) -> Result<Cost, ExtractError> {
        let Ok(stream) = self.doc.get_object(id).and_then(Object::as_stream) else {
            return Ok(Cost::default());
        };
        if is_image(&stream.dict) {
            return Ok(Cost::default());
        }
        let own = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|r| as_dict(self.doc, r));
        let scope = match own {
            Some(resources) => xobjects(self.doc, resources),
            None => inherited,
        };
        let key = (id, scope.map_or(0, |d| std::ptr::from_ref(d) as usize));
        if let Some(&cost) = self.memo.get(&key) {
            return Ok(cost);
        }
        if self.path.contains(&id) {
            return Err(unreadable("a drawing in it contains itself"));
        }
        if self.path.len() >= MAX_NESTING {
            return Err(unreadable("its drawings are nested too deeply"));
        }
        self.path.push(id);
        let cost = self.content(id, scope);
        self.path.pop();
        let cost = cost?;
        self.memo.insert(key, cost);
        Ok(cost)
    }
}

fn as_dict<'a>(doc: &'a Document, object: &'a Object) -> Option<&'a Dictionary> {
    let (_, object) = doc.dereference(object).ok()?;
    object.as_dict().ok()
}

fn xobjects<'a>(doc: &'a Document, resources: &'a Dictionary) -> Option<&'a Dictionary> {
    as_dict(doc, resources.get(b"XObject").ok()?)
}

fn is_image(dict: &Dictionary) -> bool {
    dict.get(b"Subtype")
        .and_then(Object::as_name)
        .is_ok_and(|n| n == b"Image")
}

fn is_box(object: &Object) -> bool {
    object.as_array().is_ok_and(|a| {
        a.len() >= 4
            && a.iter()
                .all(|v| matches!(v, Object::Integer(_) | Object::Real(_)))
    })
}

/// An attribute inherited through the page tree, as pdf-extract looks it up (a value it
/// cannot use sends it on to the parent), except that a loop is refused.
fn inherited<'a>(
    doc: &'a Document,
    page: &'a Dictionary,
    key: &[u8],
    usable: fn(&Object) -> bool,
) -> Result<Option<&'a Object>, ExtractError> {
    let mut dict = page;
    let mut seen = HashSet::new();
    loop {
        if let Ok(value) = dict.get(key) {
            let value = doc.dereference(value).map_or(value, |(_, v)| v);
            if usable(value) {
                return Ok(Some(value));
            }
        }
        let Ok(parent) = dict.get(b"Parent").and_then(Object::as_reference) else {
            return Ok(None);
        };
        if !seen.insert(parent) {
            return Err(unreadable("its page tree loops back on itself"));
        }
        let Ok(next) = doc.get_dictionary(parent) else {
            return Ok(None);
        };
        dict = next;
    }
}

/// Refuses a page more than `max` levels down the page tree: pdf-extract looks attributes
/// up through `/Parent` by recursion, and a stack overflow aborts the process.
fn check_depth(doc: &Document, page: &Dictionary, max: usize) -> Result<(), ExtractError> {
    let mut dict = page;
    let mut depth = 0usize;
    while let Ok(parent) = dict.get(b"Parent").and_then(Object::as_reference) {
        depth += 1;
        if depth > max {
            return Err(ExtractError::PdfTooComplex(format!(
                "its page tree is more than {max} levels deep"
            )));
        }
        let Ok(next) = doc.get_dictionary(parent) else {
            break;
        };
        dict = next;
    }
    Ok(())
}

/// Images carry no text, and pdf-extract would decode and parse them as content at every
/// `Do`: they are emptied.
fn blank_images(doc: &mut Document) {
    for object in doc.objects.values_mut() {
        if let Object::Stream(stream) = object {
            if is_image(&stream.dict) {
                stream.dict.remove(b"Filter");
                stream.dict.remove(b"DecodeParms");
                stream.set_content(Vec::new());
            }
        }
    }
}

/// The names drawn by `Do` operators in a content stream, with counts.
pub(super) fn draws(content: &[u8]) -> HashMap<Vec<u8>, u64> {
    let mut counts = HashMap::new();
    let mut at = 0;
    while let Some(found) = find(content, b"Do", at) {
        at = found + 2;
        let before = found.checked_sub(1).and_then(|i| content.get(i));
        if before.is_some_and(|&c| is_regular(c)) || content.get(at).is_some_and(|&c| is_regular(c))
        {
            continue;
        }
        if let Some(name) = name_before(content.get(..found).unwrap_or_default()) {
            *counts.entry(name).or_insert(0) += 1;
        }
    }
    counts
}

/// The `/Name` operand just before an operator, `#xx` escapes decoded as lopdf does.
fn name_before(text: &[u8]) -> Option<Vec<u8>> {
    let end = text.iter().rposition(|&c| !is_whitespace(c))? + 1;
    let start = text.get(..end)?.iter().rposition(|&c| !is_regular(c))?;
    if text.get(start) != Some(&b'/') {
        return None;
    }
    let raw = text.get(start + 1..end)?;
    let mut name = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&c) = raw.get(i) {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if c == b'#' => {
                name.push(byte);
                i += 3;
            }
            _ => {
                name.push(c);
                i += 1;
            }
        }
    }
    Some(name)
}
