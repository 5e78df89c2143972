//! Bounded stream decoding for the PDF guard. It mirrors what lopdf does when a stream's
//! content is asked for (FlateDecode, LZWDecode, ASCII85Decode in array order, PNG
//! predictors), except that every step stops as soon as its output would pass a byte cap:
//! that is how a decompression bomb is measured without ever being materialised.

use std::io::{ErrorKind, Read};

use flate2::read::{DeflateDecoder, ZlibDecoder};
use lopdf::{Dictionary, Object};
use weezl::{decode::Decoder, BitOrder, LzwStatus};

/// Decoding would have produced more bytes than the cap allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OverBudget;

/// A stream as lopdf would decode it.
#[derive(Debug)]
pub(super) struct Decoded {
    /// Bytes produced by all the steps: lopdf holds every intermediate result in memory.
    pub cost: usize,
    /// The decoded content; `None` when lopdf fails (unknown filter, corrupt ASCII85,
    /// predictor error) and pdf-extract falls back to the raw bytes.
    pub content: Option<Vec<u8>>,
}

const CHUNK: usize = 64 * 1024;

/// Decodes a stream with dictionary `dict` and raw bytes `raw`, producing at most `cap`
/// bytes over all steps.
pub(super) fn decode_stream(
    dict: &Dictionary,
    raw: &[u8],
    cap: usize,
) -> Result<Decoded, OverBudget> {
    let fallback = |cost| {
        Ok(Decoded {
            cost,
            content: None,
        })
    };
    let Some(filters) = filters(dict) else {
        return fallback(0);
    };
    let params = dict.get(b"DecodeParms").and_then(Object::as_dict).ok();
    let mut cost = 0usize;
    // lopdf starts from an empty buffer: an empty filter array decodes to nothing.
    let mut data: Option<Vec<u8>> = None;
    let mut first = true;
    for name in filters {
        let input = if first {
            raw
        } else {
            data.as_deref().unwrap_or_default()
        };
        first = false;
        let left = cap.saturating_sub(cost);
        let out = match name {
            b"FlateDecode" => inflate(input, left)?,
            b"LZWDecode" => lzw(input, early_change(params), left)?,
            b"ASCII85Decode" => match ascii85(input, left)? {
                Some(out) => out,
                None => return fallback(cost),
            },
            _ => return fallback(cost),
        };
        cost += out.len();
        let out = if name == b"ASCII85Decode" {
            out
        } else {
            match predict(out, params, cap.saturating_sub(cost))? {
                Some(out) => out,
                None => return fallback(cost),
            }
        };
        data = Some(out);
    }
    Ok(Decoded {
        cost,
        content: Some(data.unwrap_or_default()),
    })
}

/// The filter names, as lopdf reads them: a name or an array of names, never a reference.
fn filters(dict: &Dictionary) -> Option<Vec<&[u8]>> {
    let filter = dict.get(b"Filter").ok()?;
    if let Ok(name) = filter.as_name() {
        return Some(vec![name]);
    }
    let names = filter.as_array().ok()?;
    names.iter().map(|n| n.as_name().ok()).collect()
}

fn int(params: &Dictionary, key: &[u8]) -> Option<i64> {
    params.get(key).and_then(Object::as_i64).ok()
}

fn early_change(params: Option<&Dictionary>) -> bool {
    params
        .and_then(|p| int(p, b"EarlyChange"))
        .is_none_or(|v| v != 0)
}

/// lopdf's PNG predictor step. It allocates two rows of `Columns × Colors × bits / 8` bytes
/// from the dictionary's numbers before looking at the data, so the row size is checked
/// first. `Ok(None)`: lopdf reports an error.
fn predict(
    data: Vec<u8>,
    params: Option<&Dictionary>,
    left: usize,
) -> Result<Option<Vec<u8>>, OverBudget> {
    let Some(params) = params else {
        return Ok(Some(data));
    };
    if !(10..=15).contains(&int(params, b"Predictor").unwrap_or(1)) {
        return Ok(Some(data));
    }
    let number = |key: &[u8], floor: i64, default: i64| {
        u128::from(
            int(params, key)
                .unwrap_or(default)
                .max(floor)
                .unsigned_abs(),
        )
    };
    let columns = number(b"Columns", 1, 1);
    let pixel = number(b"Colors", 1, 1) * number(b"BitsPerComponent", 8, 8) / 8;
    let row = pixel.saturating_mul(columns);
    if row.saturating_mul(2) > left as u128 {
        return Err(OverBudget);
    }
    // Both fit in `left`, so in usize.
    let (pixel, columns) = (pixel as usize, columns as usize);
    Ok(lopdf::filters::png::decode_frame(&data, pixel, columns).ok())
}

/// zlib, then lopdf's fallback: raw deflate after the 2-byte header when zlib gave nothing.
fn inflate(input: &[u8], cap: usize) -> Result<Vec<u8>, OverBudget> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let (out, clean) = read_capped(ZlibDecoder::new(input), cap)?;
    match input.get(2..) {
        Some(rest) if !clean && out.is_empty() && !rest.is_empty() => {
            Ok(read_capped(DeflateDecoder::new(rest), cap)?.0)
        }
        _ => Ok(out),
    }
}

/// Everything `reader` yields up to `cap` bytes; a read error ends the data (lopdf keeps the
/// partial output). The flag says whether the end was clean.
fn read_capped(mut reader: impl Read, cap: usize) -> Result<(Vec<u8>, bool), OverBudget> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => return Ok((out, true)),
            Ok(n) => {
                let got = chunk.get(..n).unwrap_or_default();
                if got.len() > cap.saturating_sub(out.len()) {
                    return Err(OverBudget);
                }
                out.extend_from_slice(got);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Ok((out, false)),
        }
    }
}

/// LZW as lopdf configures weezl (MSB first, 8-bit symbols, optional early change).
fn lzw(input: &[u8], early_change: bool, cap: usize) -> Result<Vec<u8>, OverBudget> {
    let mut decoder = if early_change {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    } else {
        Decoder::new(BitOrder::Msb, 8)
    };
    let mut out = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    let mut rest = input;
    loop {
        let step = decoder.decode_bytes(rest, &mut chunk);
        rest = rest.get(step.consumed_in..).unwrap_or_default();
        let got = chunk.get(..step.consumed_out).unwrap_or_default();
        if got.len() > cap.saturating_sub(out.len()) {
            return Err(OverBudget);
        }
        out.extend_from_slice(got);
        let moved = step.consumed_in > 0 || step.consumed_out > 0;
        if !matches!(step.status, Ok(LzwStatus::Ok)) || !moved {
            return Ok(out);
        }
    }
}

/// ASCII85 exactly as lopdf decodes it (`~>` only recognised at the very end, decoding
/// stops at the first byte outside the alphabet). `Ok(None)`: lopdf reports an error.
fn ascii85(input: &[u8], cap: usize) -> Result<Option<Vec<u8>>, OverBudget> {
    let body = input.strip_suffix(b"~>").unwrap_or(input);
    let mut out = Vec::new();
    let (mut group, mut count) = (0u32, 0usize);
    for &c in body {
        if out.len() + 4 > cap {
            return Err(OverBudget);
        }
        if c == b'z' {
            if count != 0 {
                return Ok(None);
            }
            out.extend_from_slice(&[0; 4]);
            continue;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        if !(b'!'..=b'u').contains(&c) {
            break;
        }
        let Some(shifted) = group.checked_mul(85) else {
            return Ok(None);
        };
        group = shifted.wrapping_add(u32::from(c - b'!'));
        count += 1;
        if count == 5 {
            out.extend_from_slice(&group.to_be_bytes());
            (group, count) = (0, 0);
        }
    }
    if count > 0 {
        for _ in count..5 {
            let Some(shifted) = group.checked_mul(85) else {
                return Ok(None);
            };
            group = shifted.wrapping_add(84);
        }
        out.extend_from_slice(group.to_be_bytes().get(..count - 1).unwrap_or_default());
    }
    Ok(Some(out))
}
