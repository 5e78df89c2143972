//! Cutting extracted text into chunks of about `chunk_tokens` tokens (cl100k, what OpenAI's
//! embedding models count) that overlap by `overlap` tokens, with their byte offsets in the
//! text: citations point at exactly those bytes. Markdown is cut at its structure
//! (headings, paragraphs) before sentences; other text at paragraphs, then sentences.

use std::sync::OnceLock;

use text_splitter::{ChunkConfig, MarkdownSplitter, TextSplitter};
use tiktoken_rs::CoreBPE;

use super::extract::FileKind;

/// One chunk: `text` is `source[start..end]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// The tokenizer, built once (it takes a while).
fn tokenizer() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().ok()).as_ref()
}

/// The chunks of `text`. CPU work: call it from a blocking task.
pub fn chunk(
    text: &str,
    kind: FileKind,
    tokens: usize,
    overlap: usize,
) -> Result<Vec<Piece>, String> {
    let bpe = tokenizer().ok_or("the tokenizer could not be loaded")?;
    let config = ChunkConfig::new(tokens)
        .with_sizer(bpe)
        .with_overlap(overlap)
        .map_err(|e| e.to_string())?;
    let pieces: Vec<(usize, &str)> = match kind {
        FileKind::Markdown => MarkdownSplitter::new(config).chunk_indices(text).collect(),
        _ => TextSplitter::new(config).chunk_indices(text).collect(),
    };
    Ok(pieces
        .into_iter()
        .filter(|(_, s)| !s.trim().is_empty())
        .map(|(start, s)| Piece {
            start,
            end: start + s.len(),
            text: s.to_owned(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_point_at_their_bytes_and_overlap() {
        let text: String = (0..400)
            .map(|i| format!("Sentence number {i} talks about topic {}. ", i % 7))
            .collect();
        let pieces = chunk(&text, FileKind::Text, 60, 10).unwrap();
        assert!(pieces.len() > 10, "{}", pieces.len());
        for p in &pieces {
            assert_eq!(&text[p.start..p.end], p.text);
            let n = tokenizer().unwrap().encode_ordinary(&p.text).len();
            assert!(n <= 60, "{n} tokens");
        }
        assert!(
            pieces.windows(2).any(|w| w[1].start < w[0].end),
            "no overlap"
        );
        assert_eq!(pieces.last().map(|p| p.end), Some(text.trim_end().len()));
    }

    #[test]
    fn markdown_is_cut_at_headings() {
        let md = format!(
            "# Refunds\n\n{}\n\n# Shipping\n\n{}\n",
            "Refunds take thirty days. ".repeat(20),
            "Shipping takes five days. ".repeat(20)
        );
        let pieces = chunk(&md, FileKind::Markdown, 150, 0).unwrap();
        assert!(pieces.iter().any(|p| p.text.starts_with("# Shipping")));
    }
}
