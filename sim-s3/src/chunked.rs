//! `aws-chunked` request bodies: what SDKs send for a streaming upload
//! with a trailing checksum or a signature per chunk
//! (`x-amz-content-sha256: STREAMING-…`, `Content-Encoding: aws-chunked`).
//! Each chunk is `<hex size>[;chunk-signature=…]\r\n<bytes>\r\n`, the last
//! has size 0 and is followed by trailer lines (`x-amz-checksum-crc32:…`)
//! and an empty line. The object is the chunks' bytes; signatures and
//! checksums are not checked (as SigV4 is not: see the crate docs).

use bytes::{Bytes, BytesMut};

/// Whether a request's body is aws-chunked.
pub(crate) fn is_chunked(headers: &hyper::HeaderMap) -> bool {
    let has = |name: &str, f: &dyn Fn(&str) -> bool| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(f)
    };
    has("x-amz-content-sha256", &|v| v.starts_with("STREAMING-"))
        || has("content-encoding", &|v| {
            v.split(',').any(|e| e.trim() == "aws-chunked")
        })
}

/// The payload of an aws-chunked body, or what is wrong with it.
pub(crate) fn decode(body: &[u8]) -> Result<Bytes, String> {
    let mut out = BytesMut::with_capacity(body.len());
    let mut at = 0;
    loop {
        let line_end = find_crlf(body, at).ok_or("a chunk header without CRLF")?;
        let header = std::str::from_utf8(&body[at..line_end])
            .map_err(|_| "a chunk header that is not text")?;
        let size_hex = header.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| format!("a chunk size that is not hex: {size_hex:?}"))?;
        at = line_end + 2;
        if size == 0 {
            // Trailers, then an empty line (or the body's end).
            while at < body.len() {
                let end = find_crlf(body, at).unwrap_or(body.len());
                if end == at {
                    break;
                }
                at = end + 2;
            }
            return Ok(out.freeze());
        }
        let data_end = at
            .checked_add(size)
            .filter(|e| *e <= body.len())
            .ok_or_else(|| format!("a chunk of {size} bytes past the body's end"))?;
        out.extend_from_slice(&body[at..data_end]);
        if body.get(data_end..data_end + 2) != Some(b"\r\n") {
            return Err("a chunk not followed by CRLF".into());
        }
        at = data_end + 2;
    }
}

fn find_crlf(body: &[u8], from: usize) -> Option<usize> {
    body.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_with_signatures_and_trailers_decode_to_their_bytes() {
        let body = b"5;chunk-signature=abc\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
        assert_eq!(&decode(body).unwrap()[..], b"hello world");
        assert_eq!(&decode(b"0\r\n\r\n").unwrap()[..], b"");
    }

    #[test]
    fn a_short_body_is_an_error() {
        assert!(decode(b"a\r\nhello\r\n0\r\n\r\n").is_err());
        assert!(decode(b"zz\r\n").is_err());
    }
}
