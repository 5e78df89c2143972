//! The PDF guard: decompression bombs, loops and runaway repetition, on PDFs generated
//! here (builders in `extract_pdf_tests`).

use std::io::Read;
use std::time::{Duration, Instant};

use lopdf::{dictionary, Dictionary, Object, Stream};

use super::pdf_graph::draws;
use super::pdf_scan::check_streams;
use super::pdf_tests::{flate, form, hello_pdf, pdf_of, text_ops, zlib, Pdf};
use super::*;

/// zlib data for `mib` MiB of zeros, written directly rather than compressed (that is slow
/// in debug builds): one fixed-Huffman deflate block, a literal zero, then copies of 258
/// bytes at distance 1, 13 bits each.
fn zeros_zlib(mib: usize) -> Vec<u8> {
    let total = mib << 20;
    let mut bits = Bits::default();
    bits.value(1, 1); // last block
    bits.value(1, 2); // fixed Huffman codes
    bits.code(0b0011_0000, 8); // literal 0
    let mut left = total - 1;
    while left >= 258 {
        bits.code(0b1100_0101, 8); // length 258
        bits.code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        bits.code(0b0011_0000, 8);
    }
    bits.code(0, 7); // end of block
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&bits.bytes);
    let adler = ((total % 65521) << 16) | 1;
    out.extend_from_slice(&(adler as u32).to_be_bytes());
    out
}

/// Deflate's bit order: values least significant bit first, Huffman codes most first.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    used: u32,
}

impl Bits {
    fn bit(&mut self, bit: u32) {
        if self.used.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if bit != 0 {
            *self.bytes.last_mut().unwrap() |= 1 << (self.used % 8);
        }
        self.used += 1;
    }

    fn value(&mut self, value: u32, len: u32) {
        (0..len).for_each(|i| self.bit(value >> i & 1));
    }

    fn code(&mut self, code: u32, len: u32) {
        (0..len).rev().for_each(|i| self.bit(code >> i & 1));
    }
}

#[test]
fn the_generated_bomb_is_valid_zlib() {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(&zeros_zlib(3)[..])
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out.len(), 3 << 20);
    assert!(out.iter().all(|&b| b == 0));
}

fn assert_bomb(result: Result<Extracted, ExtractError>, limit: usize) {
    assert_eq!(result, Err(ExtractError::PdfBomb { limit }));
}

#[test]
fn a_flate_bomb_is_refused_quickly() {
    let bomb = zeros_zlib(200);
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let mut pdf = Pdf::new();
    pdf.page(flate_raw(bomb), Dictionary::new());
    let bytes = pdf.bytes();
    let started = Instant::now();
    assert_bomb(pdf_of(&bytes), 64 << 20);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// A FlateDecode stream whose data is already compressed.
fn flate_raw(data: Vec<u8>) -> Stream {
    Stream::new(dictionary! { "Filter" => "FlateDecode" }, data)
}

#[test]
fn an_object_stream_bomb_is_refused_before_lopdf_loads_it() {
    // lopdf inflates object streams while loading, so stage one must catch this. (lopdf
    // does not write object streams: the type is patched in afterwards, same length.)
    let mut pdf = Pdf::new();
    pdf.text_page("fine");
    let dict =
        dictionary! { "Type" => "ObjStX", "N" => 1, "First" => 4, "Filter" => "FlateDecode" };
    pdf.doc.add_object(Stream::new(dict, zeros_zlib(100)));
    let mut bytes = pdf.bytes();
    let at = bytes.windows(7).position(|w| w == b"/ObjStX").unwrap();
    bytes[at..at + 7].copy_from_slice(b"/ObjStm");
    assert_eq!(
        check_streams(&bytes, 64 << 20),
        Err(ExtractError::PdfBomb { limit: 64 << 20 })
    );
    assert_bomb(pdf_of(&bytes), 64 << 20);
}

#[test]
fn chained_filters_are_followed() {
    let inner = zeros_zlib(100);
    let dict = dictionary! { "Filter" => vec!["FlateDecode".into(), "FlateDecode".into()] };
    let mut pdf = Pdf::new();
    pdf.page(Stream::new(dict, zlib(&inner)), Dictionary::new());
    assert_bomb(pdf_of(&pdf.bytes()), 64 << 20);
}

#[test]
fn an_lzw_bomb_is_refused() {
    // LZW is only ~1000:1, and slow to encode in debug builds: a small bomb, a small limit.
    let mut packed = Vec::new();
    let mut encoder = weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
    let zeros = std::io::BufReader::new(std::io::repeat(0).take(3 << 20));
    encoder
        .into_stream(&mut packed)
        .encode_all(zeros)
        .status
        .unwrap();
    assert!(packed.len() < 64 << 10, "{}", packed.len());
    let mut pdf = Pdf::new();
    let lzw = Stream::new(dictionary! { "Filter" => "LZWDecode" }, packed);
    pdf.page(lzw, Dictionary::new());
    let limits = ExtractLimits {
        max_pdf_stream_bytes: 1 << 20,
        ..ExtractLimits::default()
    };
    let result = extract("doc.pdf", &pdf.bytes(), &limits);
    assert_eq!(result, Err(ExtractError::PdfBomb { limit: 1 << 20 }));
}

#[test]
fn huge_predictor_rows_are_refused_before_allocation() {
    let params = dictionary! { "Predictor" => 12, "Columns" => 1i64 << 40, "Colors" => 4 };
    let mut pdf = Pdf::new();
    pdf.page(
        flate(dictionary! { "DecodeParms" => params }, b"x"),
        Dictionary::new(),
    );
    assert_bomb(pdf_of(&pdf.bytes()), 64 << 20);
}

#[test]
fn a_tiny_budget_refuses_a_normal_pdf() {
    let limits = ExtractLimits {
        max_pdf_stream_bytes: 16,
        ..ExtractLimits::default()
    };
    let result = extract("doc.pdf", &hello_pdf(), &limits);
    assert_eq!(result, Err(ExtractError::PdfBomb { limit: 16 }));
    assert_eq!(result.unwrap_err().code(), "pdf_too_large");
}

#[test]
fn a_drawing_that_contains_itself_is_refused() {
    let mut pdf = Pdf::new();
    let me = pdf.doc.new_object_id();
    let looped = form(b"/Me Do\n", dictionary! { "Me" => me });
    pdf.doc.objects.insert(me, Object::Stream(looped));
    pdf.page(
        flate(Dictionary::new(), b"/Me Do\n"),
        dictionary! { "Me" => me },
    );
    let err = pdf_of(&pdf.bytes()).unwrap_err();
    assert_eq!(
        err,
        ExtractError::PdfUnreadable("a drawing in it contains itself".into())
    );
}

#[test]
fn exponentially_repeated_drawings_are_refused() {
    // Twenty levels, each drawing the next ten times: 10^20 drawings of a few bytes.
    let mut pdf = Pdf::new();
    let mut next = pdf
        .doc
        .add_object(form(&text_ops("leaf"), Dictionary::new()));
    for _ in 0..20 {
        next = pdf
            .doc
            .add_object(form(&b"/N Do ".repeat(10), dictionary! { "N" => next }));
    }
    pdf.page(
        flate(Dictionary::new(), b"/N Do\n"),
        dictionary! { "N" => next },
    );
    let started = Instant::now();
    // Whichever budget runs out first: operators, here (ten of them per drawing).
    let result = pdf_of(&pdf.bytes());
    assert_eq!(
        result,
        Err(ExtractError::PdfTooComplex(
            "more than 2000000 drawing operations".into()
        ))
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_page_tree_loop_is_refused_not_a_stack_overflow() {
    let mut pdf = Pdf::new();
    let (a, b) = (pdf.doc.new_object_id(), pdf.doc.new_object_id());
    pdf.doc.objects.insert(
        a,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Parent" => b }),
    );
    pdf.doc.objects.insert(
        b,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Parent" => a }),
    );
    let content = pdf
        .doc
        .add_object(flate(Dictionary::new(), &text_ops("lost")));
    let page = pdf
        .doc
        .add_object(dictionary! { "Type" => "Page", "Parent" => a, "Contents" => content });
    pdf.kids.push(page.into());
    let err = pdf_of(&pdf.bytes()).unwrap_err();
    assert_eq!(
        err,
        ExtractError::PdfUnreadable("its page tree loops back on itself".into())
    );
}

#[test]
fn draws_counts_do_operands() {
    let content = b"q /Im1 Do Q /F#311 Do\n/Im1   Do (Do) Tj /XDo 3 Do";
    let counts = draws(content);
    assert_eq!(counts.get(b"Im1".as_slice()), Some(&2));
    assert_eq!(counts.get(b"F11".as_slice()), Some(&1));
    assert_eq!(counts.len(), 2);
}
