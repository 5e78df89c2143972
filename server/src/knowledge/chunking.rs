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

/// Longest run of characters without a break (all whitespace, or none) the splitter sees
/// at once. The splitter's search over one unbroken run costs the square of its length (1 MiB
/// of `x` took minutes); cutting runs first keeps chunking linear in the text.
const MAX_RUN_CHARS: usize = 2000;

/// The chunks of `text`. CPU work: call it from a blocking task.
pub fn chunk(
    text: &str,
    kind: FileKind,
    tokens: usize,
    overlap: usize,
) -> Result<Vec<Piece>, String> {
    let bpe = tokenizer().ok_or("the tokenizer could not be loaded")?;
    let config = || {
        ChunkConfig::new(tokens)
            .with_sizer(bpe)
            .with_overlap(overlap)
            .map_err(|e| e.to_string())
    };
    config()?;
    let mut pieces = Vec::new();
    for (offset, section) in sections(text, MAX_RUN_CHARS) {
        let found: Vec<(usize, &str)> = match kind {
            FileKind::Markdown => MarkdownSplitter::new(config()?)
                .chunk_indices(section)
                .collect(),
            _ => TextSplitter::new(config()?)
                .chunk_indices(section)
                .collect(),
        };
        pieces.extend(
            found
                .into_iter()
                .filter(|(_, s)| !s.trim().is_empty())
                .map(|(start, s)| Piece {
                    start: offset + start,
                    end: offset + start + s.len(),
                    text: s.to_owned(),
                }),
        );
    }
    Ok(pieces)
}

/// `text` cut into consecutive sections (with their byte offsets) such that no run of
/// characters of one kind (whitespace or not) inside a section is longer than `max_run`
/// characters. Text of ordinary words is one section; only long runs are cut, at char
/// boundaries, so every offset still points into `text`.
fn sections(text: &str, max_run: usize) -> Vec<(usize, &str)> {
    let mut cuts = Vec::new();
    let (mut run, mut white) = (0usize, None);
    for (i, c) in text.char_indices() {
        let w = c.is_whitespace();
        if white == Some(w) && run >= max_run {
            cuts.push(i);
            run = 0;
        } else if white != Some(w) {
            run = 0;
        }
        white = Some(w);
        run += 1;
    }
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for cut in cuts.into_iter().chain(std::iter::once(text.len())) {
        out.push((from, &text[from..cut]));
        from = cut;
    }
    out
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

    /// Every piece is the bytes its offsets name, in order, and together they cover every
    /// byte of `text` but blanks between them.
    fn assert_exact(text: &str, pieces: &[Piece]) {
        let mut covered = 0;
        for p in pieces {
            assert_eq!(&text[p.start..p.end], p.text);
            let gap = &text[covered.min(p.start)..p.start];
            assert!(gap.trim().is_empty(), "text lost before byte {}", p.start);
            covered = covered.max(p.end);
        }
        assert!(text[covered..].trim().is_empty(), "uncovered tail");
    }

    /// CPU time this thread has used (user + system, from `/proc/thread-self/stat`, in
    /// clock ticks of 10 ms).
    fn thread_cpu() -> std::time::Duration {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // The fields after the command name (which may hold spaces) end with ')'.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        std::time::Duration::from_millis(ticks * 10)
    }

    #[test]
    fn a_mebibyte_without_a_break_is_chunked_in_linear_time_with_exact_offsets() {
        let run = "x".repeat(1 << 20);
        tokenizer().unwrap();
        let started = thread_cpu();
        let pieces = chunk(&run, FileKind::Text, 300, 40).unwrap();
        let took = thread_cpu() - started;
        // Before runs were cut this took about two minutes of CPU; linear, about 5 s in a
        // debug build. This thread's CPU time, not the wall clock: other builds on the
        // machine made a 5 s chunking take 40 s of wall time.
        assert!(took.as_secs() < 30, "took {took:?} of CPU");
        assert!(pieces.len() > 100, "{}", pieces.len());
        assert_exact(&run, &pieces);
        for p in &pieces {
            assert!(tokenizer().unwrap().encode_ordinary(&p.text).len() <= 300);
        }
    }

    #[test]
    fn long_runs_are_cut_at_char_boundaries_among_ordinary_text() {
        let text = format!(
            "Opening words here.\n\n{}{} closing words.   {}\nEnd.",
            "é".repeat(4500),
            "漢".repeat(2500),
            " ".repeat(5000)
        );
        let cut = sections(&text, MAX_RUN_CHARS);
        assert!(cut.len() >= 4, "{}", cut.len());
        let mut at = 0;
        for (offset, s) in &cut {
            assert_eq!(*offset, at);
            assert_eq!(&text[*offset..offset + s.len()], *s);
            at += s.len();
        }
        assert_eq!(at, text.len());
        let pieces = chunk(&text, FileKind::Markdown, 60, 10).unwrap();
        assert_exact(&text, &pieces);
        assert!(pieces.iter().any(|p| p.text.contains("Opening words")));
        assert!(pieces.iter().any(|p| p.text.contains("End.")));
        // Ordinary prose stays one section.
        let prose = "Words and more words. ".repeat(5000);
        assert_eq!(sections(&prose, MAX_RUN_CHARS).len(), 1);
    }
}
