//! What the jail says, kept within bounds: a stream's head and tail with a marker between,
//! read to its end however much the code writes (a writer that is not read would block).

use tokio::io::{AsyncRead, AsyncReadExt};

/// A stream kept as its first and last bytes.
#[derive(Debug, Default)]
pub struct HeadTail {
    keep: usize,
    head: Vec<u8>,
    /// The last bytes seen past the head, at most `keep / 2`, oldest first after `rotate`.
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    /// Keeps at most `keep` bytes in all: half from the start, half from the end.
    pub fn new(keep: usize) -> Self {
        Self {
            keep,
            ..Self::default()
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let head_room = (self.keep - self.keep / 2).saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(head_room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        let tail_keep = self.keep / 2;
        if tail_keep == 0 {
            return;
        }
        let rest = rest
            .get(rest.len().saturating_sub(tail_keep)..)
            .unwrap_or_default();
        let over = (self.tail.len() + rest.len()).saturating_sub(tail_keep);
        self.tail.drain(..over.min(self.tail.len()));
        self.tail.extend(rest.iter().copied());
    }

    /// Whether bytes were dropped.
    pub fn overflowed(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The text kept, with a marker saying how much of the middle was dropped.
    pub fn text(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            out.push_str(&format!("\n[… {} bytes omitted …]\n", self.total - kept));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// Reads `from` to its end into a [`HeadTail`] of `keep` bytes.
pub async fn read_head_tail(mut from: impl AsyncRead + Unpin, keep: usize) -> HeadTail {
    let mut kept = HeadTail::new(keep);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => kept.push(buf.get(..n).unwrap_or_default()),
        }
    }
}

/// Reads `from` to its end, keeping the first `keep` bytes; `true` when there was more.
pub async fn read_bounded(mut from: impl AsyncRead + Unpin, keep: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut more = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, more),
            Ok(n) => {
                let room = keep.saturating_sub(kept.len());
                let read = buf.get(..n).unwrap_or_default();
                kept.extend_from_slice(read.get(..room.min(n)).unwrap_or_default());
                more |= n > room;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_streams_are_kept_whole() {
        let mut k = HeadTail::new(10);
        k.push(b"hello");
        assert_eq!(k.text(), "hello");
        assert!(!k.overflowed());
    }

    #[test]
    fn long_streams_keep_head_and_tail_with_a_marker() {
        let mut k = HeadTail::new(10);
        for chunk in [&b"abcdefgh"[..], b"ijklmnop", b"qrstuvwxyz"] {
            k.push(chunk);
        }
        assert!(k.overflowed());
        assert_eq!(k.text(), "abcde\n[… 16 bytes omitted …]\nvwxyz");
    }

    #[test]
    fn a_tail_fed_byte_by_byte_keeps_the_last_bytes() {
        let mut k = HeadTail::new(4);
        for b in b"0123456789" {
            k.push(&[*b]);
        }
        assert_eq!(k.text(), "01\n[… 6 bytes omitted …]\n89");
    }
}
