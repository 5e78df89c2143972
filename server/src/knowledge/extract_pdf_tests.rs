//! PDF extraction on PDFs generated here with lopdf, and the builders the guard tests
//! (`extract_pdf_guard_tests`) share.

use std::io::Write;

use flate2::{write::ZlibEncoder, Compression};
use lopdf::{dictionary, Dictionary, Document, Object, ObjectId, Stream};

use super::pdf::normalize;
use super::*;

/// A PDF under construction: pages with Helvetica as /F1.
pub(super) struct Pdf {
    pub(super) doc: Document,
    pages: ObjectId,
    pub(super) kids: Vec<Object>,
    font: ObjectId,
}

impl Pdf {
    pub(super) fn new() -> Pdf {
        let mut doc = Document::with_version("1.5");
        let pages = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        Pdf {
            doc,
            pages,
            kids: Vec::new(),
            font,
        }
    }

    /// A page drawing `content`, with `xobjects` as its XObject resources.
    pub(super) fn page(&mut self, content: Stream, xobjects: Dictionary) -> ObjectId {
        let content = self.doc.add_object(content);
        let page = self.doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => self.pages,
            "Contents" => content,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            "Resources" => dictionary! {
                "Font" => dictionary! { "F1" => self.font },
                "XObject" => xobjects,
            },
        });
        self.kids.push(page.into());
        page
    }

    pub(super) fn text_page(&mut self, text: &str) -> ObjectId {
        self.page(flate(Dictionary::new(), &text_ops(text)), Dictionary::new())
    }

    pub(super) fn bytes(mut self) -> Vec<u8> {
        let count = self.kids.len() as i64;
        let pages = dictionary! { "Type" => "Pages", "Kids" => self.kids, "Count" => count };
        self.doc
            .objects
            .insert(self.pages, Object::Dictionary(pages));
        let catalog = self.doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => self.pages,
        });
        self.doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        self.doc.save_to(&mut out).unwrap();
        out
    }
}

pub(super) fn text_ops(text: &str) -> Vec<u8> {
    format!("BT /F1 24 Tf 72 720 Td ({text}) Tj ET\n").into_bytes()
}

pub(super) fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// A FlateDecode stream of `data` with the entries of `dict`.
pub(super) fn flate(mut dict: Dictionary, data: &[u8]) -> Stream {
    dict.set("Filter", "FlateDecode");
    Stream::new(dict, zlib(data))
}

pub(super) fn hello_pdf() -> Vec<u8> {
    let mut pdf = Pdf::new();
    pdf.text_page("Hello knowledge base");
    pdf.bytes()
}

pub(super) fn pdf_of(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    extract("doc.pdf", bytes, &ExtractLimits::default())
}

#[test]
fn a_generated_pdf_gives_its_text() {
    let got = pdf_of(&hello_pdf()).unwrap();
    assert_eq!(got.kind, FileKind::Pdf);
    assert!(got.text.contains("Hello knowledge base"), "{:?}", got.text);
}

#[test]
fn pages_come_in_order() {
    let mut pdf = Pdf::new();
    pdf.text_page("First page");
    pdf.text_page("Second page");
    let text = pdf_of(&pdf.bytes()).unwrap().text;
    let (first, second) = (text.find("First page"), text.find("Second page"));
    assert!(first.is_some() && first < second, "{text:?}");
}

#[test]
fn too_many_pages_are_refused() {
    let mut pdf = Pdf::new();
    for i in 0..3 {
        pdf.text_page(&format!("page {i}"));
    }
    let limits = ExtractLimits {
        max_pdf_pages: 2,
        ..ExtractLimits::default()
    };
    let err = extract("doc.pdf", &pdf.bytes(), &limits).unwrap_err();
    assert_eq!(err, ExtractError::TooManyPages { pages: 3, limit: 2 });
    assert_eq!(err.code(), "pdf_too_large");
}

#[test]
fn broken_pdfs_are_unreadable_not_panics() {
    let good = hello_pdf();
    let unreadable =
        |r: Result<Extracted, ExtractError>| matches!(r, Err(ExtractError::PdfUnreadable(_)));
    assert!(unreadable(pdf_of(&good[..good.len() / 2])));
    assert!(unreadable(pdf_of(
        b"%PDF-1.7\n\x01\x02garbage (((( <<<< >>\n%%EOF"
    )));
    let err = pdf_of(b"just some text").unwrap_err();
    assert_eq!(err.code(), "pdf_unreadable");
    assert!(err.to_string().contains("not a PDF"), "{err}");
    // Whatever a damaged file does inside lopdf or pdf-extract, extraction returns.
    for i in 0..64 {
        let mut bad = good.clone();
        let at = (i * 7919) % bad.len();
        bad[at] = bad[at].wrapping_add(1 + i as u8);
        bad.truncate(bad.len() - i);
        let _ = pdf_of(&bad);
    }
}

#[test]
fn encrypted_pdfs_are_refused() {
    let mut pdf = Pdf::new();
    pdf.text_page("secret");
    let encrypt = pdf.doc.add_object(dictionary! {
        "Filter" => "Standard", "V" => 1, "R" => 2, "P" => -4,
        "O" => Object::string_literal(vec![0u8; 32]), "U" => Object::string_literal(vec![0u8; 32]),
    });
    pdf.doc.trailer.set("Encrypt", encrypt);
    let err = pdf_of(&pdf.bytes()).unwrap_err();
    assert_eq!(err, ExtractError::PdfEncrypted);
    assert_eq!(err.code(), "pdf_encrypted");
}

#[test]
fn a_pdf_without_text_says_so() {
    let mut pdf = Pdf::new();
    pdf.page(
        flate(Dictionary::new(), b"0 0 100 100 re f\n"),
        Dictionary::new(),
    );
    let err = pdf_of(&pdf.bytes()).unwrap_err();
    assert_eq!(err, ExtractError::NoText);
    assert_eq!(err.code(), "no_text");
}

#[test]
fn extracted_text_over_the_limit_is_too_large() {
    let limits = ExtractLimits {
        max_text_bytes: 8,
        ..ExtractLimits::default()
    };
    let err = extract("doc.pdf", &hello_pdf(), &limits).unwrap_err();
    assert!(
        matches!(err, ExtractError::TooLarge { limit: 8, .. }),
        "{err:?}"
    );
}

/// A form XObject drawing `content`, with `xobjects` in its own resources.
pub(super) fn form(content: &[u8], xobjects: Dictionary) -> Stream {
    let dict = dictionary! {
        "Type" => "XObject", "Subtype" => "Form",
        "BBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
        "Resources" => dictionary! { "XObject" => xobjects },
    };
    flate(dict, content)
}

#[test]
fn a_page_without_media_box_still_gives_text() {
    let mut pdf = Pdf::new();
    let page = pdf.text_page("No box here");
    let Object::Dictionary(dict) = pdf.doc.objects.get_mut(&page).unwrap() else {
        panic!()
    };
    dict.remove(b"MediaBox");
    assert!(pdf_of(&pdf.bytes()).unwrap().text.contains("No box here"));
}

#[test]
fn images_are_not_parsed_as_text() {
    let image = dictionary! {
        "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 1,
        "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8,
    };
    let mut pdf = Pdf::new();
    let im = pdf
        .doc
        .add_object(flate(image, &text_ops("LEAKED IMAGE BYTES")));
    let page = b"q 10 0 0 10 0 0 cm /Im Do Q BT /F1 12 Tf 72 700 Td (Caption) Tj ET";
    pdf.page(flate(Dictionary::new(), page), dictionary! { "Im" => im });
    let text = pdf_of(&pdf.bytes()).unwrap().text;
    assert!(
        text.contains("Caption") && !text.contains("LEAKED"),
        "{text:?}"
    );
}

#[test]
fn normalize_collapses_blank_lines_and_controls() {
    let raw = "\n\n  Title  \r\n\r\n\r\nbody\x0c line\t\n\n\n\nend \n \n";
    assert_eq!(normalize(raw), "  Title\n\nbody line\n\nend");
}
