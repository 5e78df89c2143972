//! The offline demo embedder: feature hashing of words into a fixed number of dimensions,
//! L2-normalised. Deterministic and free, so knowledge works with no upstream configured,
//! and the tests' fake `/embeddings` server answers with the very same vectors. Texts that
//! share words are close; it knows no synonyms.

/// Dimensions of the built-in `demo-embed` model.
pub const DEMO_DIMENSIONS: usize = 256;

/// Name of the built-in embedding model.
pub const DEMO_MODEL: &str = "demo-embed";

/// Words too common to say anything about a text.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
    "how", "i", "in", "is", "it", "its", "of", "on", "or", "our", "that", "the", "this", "to",
    "was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
];

/// The vector of `text` in `dims` dimensions (all zeros for a text with no words).
pub fn embed(text: &str, dims: usize) -> Vec<f32> {
    let dims = dims.max(1);
    let mut v = vec![0f32; dims];
    for word in words(text) {
        let h = fnv1a(word.as_bytes());
        let index = usize::try_from(h % dims as u64).unwrap_or(0);
        let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
        v[index] += sign;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The text's lower-cased words without stop words, a plural `s` taken off.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
            _ => w,
        })
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_words_are_close_and_vectors_are_unit_length() {
        let q = embed("What is the refund policy?", DEMO_DIMENSIONS);
        let near = embed("Refunds: our policy gives 30 days.", DEMO_DIMENSIONS);
        let far = embed("The office opens at nine in the morning.", DEMO_DIMENSIONS);
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.3);
        let norm: f32 = near.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        assert_eq!(embed("", 8), vec![0.0; 8]);
        assert_eq!(embed("same text", 64), embed("same text", 64));
    }
}
