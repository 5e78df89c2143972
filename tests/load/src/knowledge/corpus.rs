//! Generated text for the knowledge scenarios: office prose from a small vocabulary (twelve
//! topics of two dozen nouns, shared adjectives, verbs and phrases), Markdown or plain, in
//! documents of any size; search queries from the same words; and the server's `demo-embed`
//! vectors of a text (the same feature hashing, so seeded chunks carry the vectors the
//! server would have stored and a query's vector lands near the chunks sharing its words).
//! Deterministic: everything comes from a seeded `Rng`.

use super::vocab::{
    ADJECTIVES, CONNECTIVES, PREPOSITIONS, STOPWORDS, SUBJECTS, TIMES, TOPICS, VERBS,
};

/// splitmix64: small, fast, good enough for text and sampling.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    /// Early items more often than late ones (word frequencies are skewed).
    pub fn skewed<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let i = (self.unit().powf(1.8) * items.len() as f64) as usize;
        items[i.min(items.len() - 1)]
    }
    /// A random (version 4) UUID.
    pub fn uuid(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        let a = (a & !0xf000) | 0x4000;
        let b = (b & !(0xc << 60)) | (0x8 << 60);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xffff,
            b >> 48,
            b & 0xffff_ffff_ffff
        )
    }
}

/// What a document is about: one to three topics, the first most often.
#[derive(Debug, Clone)]
pub struct Topics(Vec<usize>);

impl Topics {
    pub fn random(rng: &mut Rng) -> Self {
        let n = 1 + rng.below(3);
        Self((0..n).map(|_| rng.below(TOPICS.len())).collect())
    }
    fn noun<'a>(&self, rng: &mut Rng) -> &'a str {
        let t = if rng.unit() < 0.6 {
            self.0[0]
        } else {
            self.0[rng.below(self.0.len())]
        };
        rng.skewed(TOPICS[t])
    }
}

fn plural(noun: &str) -> String {
    if noun.ends_with('s') || noun.ends_with('x') || noun.ends_with("ch") {
        format!("{noun}es")
    } else if let Some(stem) = noun
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o']))
    {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// One sentence about `topics`.
pub fn sentence(rng: &mut Rng, topics: &Topics) -> String {
    let (n1, n2, n3) = (topics.noun(rng), topics.noun(rng), topics.noun(rng));
    let (adj, verb, verb2) = (rng.skewed(ADJECTIVES), rng.skewed(VERBS), rng.pick(VERBS));
    let s = match rng.below(7) {
        0 => format!(
            "{} {verb} the {adj} {n1} {} the {n2}.",
            rng.pick(SUBJECTS),
            rng.pick(PREPOSITIONS)
        ),
        1 => format!(
            "The {n1} {verb} {} {} {}.",
            2 + rng.below(40),
            plural(n2),
            rng.pick(TIMES)
        ),
        2 => format!(
            "When the {n1} {verb} the {n2}, {} {verb2} a {adj} {n3}.",
            rng.pick(SUBJECTS)
        ),
        3 => format!(
            "{}, the {adj} {n1} {verb} every {n2} {}.",
            rng.pick(CONNECTIVES),
            rng.pick(TIMES)
        ),
        4 => format!("Each {n1} {verb} the {n2} and the {adj} {n3}."),
        5 => format!(
            "If a {n1} is {}, {} {verb} the {n2} {}.",
            rng.pick(ADJECTIVES),
            rng.pick(SUBJECTS),
            rng.pick(TIMES)
        ),
        _ => format!(
            "{} {verb} {} {adj} {} {} the {n2} and the {n3}.",
            rng.pick(SUBJECTS),
            rng.below(90) + 10,
            plural(n1),
            rng.pick(PREPOSITIONS)
        ),
    };
    capitalised(&s)
}

fn paragraph(rng: &mut Rng, topics: &Topics, out: &mut String) {
    let n = 3 + rng.below(5);
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&sentence(rng, topics));
    }
    out.push_str("\n\n");
}

fn heading(rng: &mut Rng, topics: &Topics) -> String {
    let (a, b) = (topics.noun(rng), topics.noun(rng));
    match rng.below(3) {
        0 => format!("{} and {b}", capitalised(a)),
        1 => format!("{} {a} {}", capitalised(rng.pick(ADJECTIVES)), plural(b)),
        _ => format!("How the {a} {} the {b}", rng.pick(VERBS)),
    }
}

/// A document of about `bytes` bytes: Markdown (headings, paragraphs, lists) or plain text.
pub fn document(rng: &mut Rng, bytes: usize, markdown: bool) -> String {
    let topics = Topics::random(rng);
    let mut out = String::with_capacity(bytes + 2048);
    let title = heading(rng, &topics);
    if markdown {
        out.push_str(&format!("# {title}\n\n"));
    } else {
        out.push_str(&format!("{}\n\n", title.to_uppercase()));
    }
    while out.len() < bytes {
        if markdown && rng.unit() < 0.25 {
            out.push_str(&format!("## {}\n\n", heading(rng, &topics)));
        }
        if markdown && rng.unit() < 0.15 {
            for _ in 0..3 + rng.below(3) {
                out.push_str(&format!("- {}\n", sentence(rng, &topics)));
            }
            out.push('\n');
        } else {
            paragraph(rng, &topics, &mut out);
        }
    }
    out
}

/// The chunks of one seeded document: texts of about `bytes` bytes each (a heading now and
/// then, then paragraphs), all about the same topics.
pub fn chunk_texts(rng: &mut Rng, chunks: usize, bytes: usize) -> Vec<String> {
    let topics = Topics::random(rng);
    (0..chunks)
        .map(|_| {
            let mut s = String::with_capacity(bytes + 512);
            if rng.unit() < 0.2 {
                s.push_str(&format!("## {}\n\n", heading(rng, &topics)));
            }
            while s.len() < bytes {
                paragraph(rng, &topics, &mut s);
            }
            s
        })
        .collect()
}

/// A search query: two or three words of one topic (now and then with an adjective), as a
/// user types them.
pub fn query(rng: &mut Rng) -> String {
    let topic = TOPICS[rng.below(TOPICS.len())];
    let (a, b) = (rng.skewed(topic), rng.skewed(topic));
    let b = if a == b { rng.pick(topic) } else { b };
    match rng.below(5) {
        0 => format!("{} {a} {b}", rng.pick(ADJECTIVES)),
        1 => format!("{} {a}", plural(b)),
        _ => format!("{a} {b}"),
    }
}

/// `demo-embed`'s vector of `text` in `dims` dimensions: feature hashing of the lower-cased
/// words (stop words dropped, a plural `s` taken off), L2-normalised. Must stay the server's
/// (`server/src/llm/demo_embed.rs`); the smoke run compares the two on ingested chunks.
pub fn demo_embed(text: &str, dims: usize) -> Vec<f32> {
    let dims = dims.max(1);
    let mut v = vec![0f32; dims];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let w = word.to_lowercase();
        if STOPWORDS.contains(&w.as_str()) {
            continue;
        }
        let w = match w.strip_suffix('s') {
            Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
            _ => w,
        };
        let h = w.as_bytes().iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let index = (h % dims as u64) as usize;
        v[index] += if (h >> 63) == 0 { 1.0 } else { -1.0 };
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// pgvector's text form, short (zeros as `0`, five decimals otherwise).
pub fn vector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 4 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        if *x == 0.0 {
            s.push('0');
        } else {
            s.push_str(&format!("{x:.5}"));
        }
    }
    s.push(']');
    s
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_have_the_size_asked_and_vectors_unit_length() {
        let mut rng = Rng::new(7);
        let d = document(&mut rng, 10_000, true);
        assert!(d.len() >= 10_000 && d.len() < 12_000, "{}", d.len());
        assert!(d.starts_with("# "));
        let v = demo_embed(&d, 256);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        // The server's own example: shared words are close.
        let q = demo_embed("What is the refund policy?", 256);
        let near = demo_embed("Refunds: our policy gives 30 days.", 256);
        let far = demo_embed("The office opens at nine in the morning.", 256);
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.3);
        assert_eq!(rng.uuid().len(), 36);
        let t = vector_text(&[0.0, 0.5, -0.25]);
        assert_eq!(t, "[0,0.50000,-0.25000]");
    }
}
