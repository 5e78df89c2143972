//! The PDF guard's work bounds beyond bytes (issue 41): the depth of the page tree and the
//! operators pdf-extract would run, repeated drawings included.

use lopdf::{dictionary, Dictionary, Object};

use super::pdf_tests::{flate, form, pdf_of, text_ops, Pdf};
use super::*;

/// A page whose `/Parent` chain is `levels` deep, none of them with resources.
fn deep_tree(levels: usize) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let ids: Vec<_> = (0..levels).map(|_| pdf.doc.new_object_id()).collect();
    for (i, &id) in ids.iter().enumerate() {
        let mut node = dictionary! { "Type" => "Pages" };
        if let Some(&up) = ids.get(i + 1) {
            node.set("Parent", up);
        }
        pdf.doc.objects.insert(id, Object::Dictionary(node));
    }
    let content = pdf
        .doc
        .add_object(flate(Dictionary::new(), &text_ops("deep")));
    let page = pdf
        .doc
        .add_object(dictionary! { "Type" => "Page", "Parent" => ids[0], "Contents" => content });
    pdf.kids.push(page.into());
    pdf.bytes()
}

#[test]
fn a_page_tree_deeper_than_the_limit_is_refused_not_a_stack_overflow() {
    let err = pdf_of(&deep_tree(30_000)).unwrap_err();
    assert_eq!(
        err,
        ExtractError::PdfTooComplex("its page tree is more than 64 levels deep".into())
    );
    assert_eq!(err.code(), "pdf_too_complex");
}

#[test]
fn a_page_tree_within_the_limit_is_read() {
    // pdf-extract then finds no fonts: the text itself does not matter, only that the
    // guard let it through.
    let result = pdf_of(&deep_tree(60));
    assert!(
        !matches!(result, Err(ExtractError::PdfTooComplex(_))),
        "{result:?}"
    );
}

fn with_budget(operators: u64) -> ExtractLimits {
    ExtractLimits {
        max_pdf_operators: operators,
        ..ExtractLimits::default()
    }
}

fn too_many(operators: u64) -> ExtractError {
    ExtractError::PdfTooComplex(format!("more than {operators} drawing operations"))
}

#[test]
fn operators_past_the_budget_are_refused_whatever_their_bytes() {
    let mut content = b"BT /F1 12 Tf 72 720 Td ".to_vec();
    content.extend_from_slice(&b"(a)Tj ".repeat(1000));
    content.extend_from_slice(b"ET\n");
    let mut pdf = Pdf::new();
    pdf.page(flate(Dictionary::new(), &content), Dictionary::new());
    let bytes = pdf.bytes();
    // BT, Tf, Td, 1,000 Tj and ET.
    let refused = extract("doc.pdf", &bytes, &with_budget(1003));
    assert_eq!(refused, Err(too_many(1003)));
    let read = extract("doc.pdf", &bytes, &with_budget(1004)).unwrap();
    assert!(read.text.starts_with("aaaa"), "{read:?}");
}

#[test]
fn repeated_drawings_count_their_operators_each_time() {
    // A drawing of 100 operators, drawn 20 times: 2,000 and a few, in a few hundred bytes.
    let mut pdf = Pdf::new();
    let leaf = pdf
        .doc
        .add_object(form(&b"(a)Tj ".repeat(100), Dictionary::new()));
    pdf.page(
        flate(Dictionary::new(), &b"/N Do ".repeat(20)),
        dictionary! { "N" => leaf },
    );
    let bytes = pdf.bytes();
    assert_eq!(
        extract("doc.pdf", &bytes, &with_budget(2000)),
        Err(too_many(2000))
    );
    assert!(!matches!(
        extract("doc.pdf", &bytes, &with_budget(2100)),
        Err(ExtractError::PdfTooComplex(_))
    ));
}
