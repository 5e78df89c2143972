//! Text, Markdown, CSV and HTML extraction, kinds, and error messages.

use super::*;

fn text_of(name: &str, bytes: &[u8]) -> Result<Extracted, ExtractError> {
    extract(name, bytes, &ExtractLimits::default())
}

#[test]
fn kinds_follow_the_extension_case_insensitively() {
    let cases = [
        ("a.txt", FileKind::Text),
        ("b.TEXT", FileKind::Text),
        ("server.log", FileKind::Text),
        ("dir/README.md", FileKind::Markdown),
        ("c:\\docs\\notes.Markdown", FileKind::Markdown),
        ("data.csv", FileKind::Csv),
        ("page.HTM", FileKind::Html),
        ("page.html", FileKind::Html),
        ("report.final.PDF", FileKind::Pdf),
    ];
    for (name, kind) in cases {
        assert_eq!(FileKind::of(name), Ok(kind), "{name}");
    }
    for ext in ACCEPTED_EXTENSIONS {
        assert!(FileKind::of(&format!("x.{ext}")).is_ok(), "{ext}");
    }
    let names: Vec<_> = [
        FileKind::Text,
        FileKind::Markdown,
        FileKind::Csv,
        FileKind::Html,
    ]
    .iter()
    .chain(&[FileKind::Pdf])
    .map(|k| k.as_str())
    .collect();
    assert_eq!(names, ["text", "markdown", "csv", "html", "pdf"]);
}

#[test]
fn unknown_extensions_are_refused_with_the_accepted_list() {
    let err = FileKind::of("report.DOCX").unwrap_err();
    assert_eq!(err, ExtractError::Unsupported("docx".into()));
    assert_eq!(err.code(), "unsupported_file_type");
    assert_eq!(
        err.to_string(),
        ".docx files are not supported; add .txt, .md, .csv, .html or .pdf"
    );
    for name in ["Makefile", ".bashrc", "dir.d/noext"] {
        let err = FileKind::of(name).unwrap_err();
        assert_eq!(err, ExtractError::Unsupported(String::new()), "{name}");
        assert!(err.to_string().starts_with("files without an extension"));
    }
    assert_eq!(
        text_of("x.exe", b"MZ"),
        Err(ExtractError::Unsupported("exe".into()))
    );
}

#[test]
fn text_kinds_keep_the_bytes_exactly() {
    let body = "Première ligne\r\n\tindented  \n\nlast line without newline — ok";
    for (name, kind) in [
        ("a.txt", FileKind::Text),
        ("a.md", FileKind::Markdown),
        ("a.csv", FileKind::Csv),
    ] {
        let got = text_of(name, body.as_bytes()).unwrap();
        assert_eq!(got.kind, kind);
        assert_eq!(got.text, body);
    }
    let csv = "name,qty\n\"a, b\",2\n";
    assert_eq!(text_of("t.csv", csv.as_bytes()).unwrap().text, csv);
}

#[test]
fn a_utf8_bom_is_stripped() {
    let got = text_of("a.md", b"\xEF\xBB\xBF# Title\n").unwrap();
    assert_eq!(got.text, "# Title\n");
}

#[test]
fn empty_and_blank_files_are_empty() {
    for bytes in [
        &b""[..],
        b" \n\t\r\n",
        b"\xEF\xBB\xBF",
        b"\xEF\xBB\xBF \xC2\xA0\n",
    ] {
        assert_eq!(
            text_of("a.txt", bytes),
            Err(ExtractError::Empty),
            "{bytes:?}"
        );
    }
    assert_eq!(text_of("a.pdf", b"  \n"), Err(ExtractError::Empty));
    assert_eq!(text_of("a.html", b""), Err(ExtractError::Empty));
    assert_eq!(ExtractError::Empty.code(), "empty_file");
    assert_eq!(ExtractError::Empty.to_string(), "the file is empty");
}

#[test]
fn nul_bytes_mean_binary() {
    let err = text_of("a.txt", b"abc\0def").unwrap_err();
    assert_eq!(
        err,
        ExtractError::Binary {
            detail: "NUL bytes at byte 3".into()
        }
    );
    assert_eq!(err.code(), "binary_file");
    assert_eq!(
        err.to_string(),
        "this looks like a binary file, not text (NUL bytes at byte 3)"
    );
    // Offsets count the BOM: they are positions in the uploaded file.
    let err = text_of("a.txt", b"\xEF\xBB\xBFab\0").unwrap_err();
    assert!(err.to_string().contains("byte 5"), "{err}");
}

#[test]
fn a_png_renamed_to_txt_is_binary() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    let err = text_of("photo.txt", png).unwrap_err();
    assert!(matches!(err, ExtractError::Binary { .. }), "{err:?}");
    assert!(err.to_string().contains("byte 8"), "{err}");
    let err = text_of("photo.html", png).unwrap_err();
    assert!(matches!(err, ExtractError::Binary { .. }), "{err:?}");
}

#[test]
fn invalid_utf8_is_refused() {
    let latin1 = b"caf\xe9 au lait";
    let err = text_of("menu.txt", latin1).unwrap_err();
    assert_eq!(err, ExtractError::NotUtf8 { offset: 3 });
    assert_eq!(err.code(), "not_utf8");
    assert!(err.to_string().contains("save it as UTF-8"), "{err}");
    let utf16 = b"\xFF\xFEh\0i\0";
    assert_eq!(text_of("a.csv", utf16), Err(ExtractError::Utf16));
}

#[test]
fn control_character_soup_is_binary() {
    let soup: Vec<u8> = (0..200u8)
        .map(|i| if i % 4 == 0 { 0x01 } else { b'a' })
        .collect();
    let err = text_of("data.txt", &soup).unwrap_err();
    assert!(matches!(err, ExtractError::Binary { .. }), "{err:?}");
    assert!(err.to_string().contains("25% control characters"), "{err}");
    // ANSI colours in logs and a stray control character are fine.
    let log = "\x1b[31merror\x1b[0m: disk full\x07\n".repeat(20);
    assert_eq!(text_of("app.log", log.as_bytes()).unwrap().text, log);
}

#[test]
fn text_over_the_limit_is_too_large() {
    let limits = ExtractLimits {
        max_text_bytes: 10,
        ..ExtractLimits::default()
    };
    let err = extract("a.txt", b"0123456789A", &limits).unwrap_err();
    assert_eq!(
        err,
        ExtractError::TooLarge {
            size: 11,
            limit: 10
        }
    );
    assert_eq!(err.code(), "text_too_large");
    assert_eq!(
        err.to_string(),
        "the text is 11 bytes, more than the 10 bytes limit"
    );
    assert!(extract("a.txt", b"0123456789", &limits).is_ok());
    let html = format!("<p>{}</p>", "x".repeat(11));
    let err = extract("a.html", html.as_bytes(), &limits).unwrap_err();
    assert_eq!(
        err,
        ExtractError::TooLarge {
            size: 11,
            limit: 10
        }
    );
    let big = ExtractError::TooLarge {
        size: (9 << 20) + (1 << 19),
        limit: 8 << 20,
    };
    assert_eq!(
        big.to_string(),
        "the text is 9.5 MiB, more than the 8 MiB limit"
    );
}

#[test]
fn html_becomes_readable_text() {
    let page = "<html><head><title>T</title><style>p{color:red}</style>\
                <script>var secret = 1;</script></head>\
                <body><h1>Knowledge</h1><p>Fish &amp; chips</p></body></html>";
    let got = text_of("page.html", page.as_bytes()).unwrap();
    assert_eq!(got.kind, FileKind::Html);
    assert!(got.text.contains("Knowledge"), "{}", got.text);
    assert!(got.text.contains("Fish & chips"), "{}", got.text);
    assert!(
        !got.text.contains("secret") && !got.text.contains("color"),
        "{}",
        got.text
    );
    // Not UTF-8: decoded leniently rather than refused.
    let latin1 = text_of("old.htm", b"<p>caf\xe9</p>").unwrap();
    assert!(latin1.text.starts_with("caf"), "{}", latin1.text);
    let err = text_of("app.html", b"<script>run()</script>").unwrap_err();
    assert_eq!(err, ExtractError::HtmlNoText);
    assert_eq!(err.code(), "no_text");
}

#[test]
fn every_error_has_a_code_and_a_message() {
    let all = [
        ExtractError::Unsupported("x".into()),
        ExtractError::Empty,
        ExtractError::Binary { detail: "d".into() },
        ExtractError::NotUtf8 { offset: 1 },
        ExtractError::Utf16,
        ExtractError::TooLarge { size: 2, limit: 1 },
        ExtractError::TooManyPages { pages: 3, limit: 2 },
        ExtractError::PdfBomb { limit: 64 << 20 },
        ExtractError::PdfEncrypted,
        ExtractError::PdfUnreadable("why".into()),
        ExtractError::NoText,
        ExtractError::HtmlNoText,
    ];
    for err in &all {
        let code = err.code();
        assert!(
            code.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{code}"
        );
        assert!(!err.to_string().is_empty());
    }
    assert_eq!(
        ExtractError::PdfBomb { limit: 64 << 20 }.to_string(),
        "the PDF expands to more than 64 MiB of content: refused"
    );
    assert_eq!(
        ExtractError::NoText.to_string(),
        "the PDF has no extractable text (scanned images?)"
    );
}
