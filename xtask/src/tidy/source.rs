//! A Rust file as the structural rules read it: its code with comments and
//! the contents of literals blanked (byte for byte, so offsets and line
//! numbers are the file's), and which lines belong to a `#[cfg(test)]`
//! item. Not a parser: enough to tell a path in code from the same words
//! in a comment or a string.

pub(super) struct Source<'a> {
    /// The file's lines, as written.
    pub(super) lines: Vec<&'a str>,
    /// The code: comments blanked, and the insides of string and char
    /// literals (their quotes kept).
    pub(super) code: String,
    /// Per line: inside a `#[cfg(test)]` item (the attribute's line to the
    /// item's end).
    pub(super) in_test: Vec<bool>,
    /// Byte offset of each line's start in `code`.
    starts: Vec<usize>,
}

impl<'a> Source<'a> {
    pub(super) fn new(text: &'a str) -> Source<'a> {
        let code = mask(text);
        let lines: Vec<&str> = text.split('\n').collect();
        let mut starts = Vec::with_capacity(lines.len());
        let mut at = 0;
        for l in &lines {
            starts.push(at);
            at += l.len() + 1;
        }
        let mut s = Source {
            in_test: vec![false; lines.len()],
            lines,
            code,
            starts,
        };
        s.mark_tests();
        s
    }

    /// The 0-based line of byte offset `at`.
    pub(super) fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| s <= at) - 1
    }

    /// Line `i` of the masked code.
    pub(super) fn code_line(&self, i: usize) -> &str {
        let start = self.starts[i];
        &self.code[start..start + self.lines[i].len()]
    }

    /// Marks every `#[cfg(test)]` item: from the attribute to the `;` or the
    /// closing brace that ends the item it is on.
    fn mark_tests(&mut self) {
        let b = self.code.as_bytes();
        let mut from = 0;
        while let Some(found) = self.code[from..].find("#[cfg(test)]") {
            let attr = from + found;
            let mut i = attr + "#[cfg(test)]".len();
            let end = item_end(b, i);
            let (first, last) = (self.line_of(attr), self.line_of(end.min(b.len() - 1)));
            for t in &mut self.in_test[first..=last] {
                *t = true;
            }
            i = i.max(end);
            from = i;
        }
    }
}

/// The offset just past the item that starts at `i` (after its
/// attributes): its first `;` or its first `{ ... }` at bracket depth 0.
fn item_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => return matching_brace(b, i),
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The offset just past the `}` that closes the `{` at `open`.
fn matching_brace(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

pub(super) fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `src` with comments blanked and the insides of string and char
/// literals blanked, newlines kept: the same length, the same lines.
fn mask(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let after_ident = i > 0 && is_ident_byte(b[i - 1]);
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some((open, hashes)) = raw_string_start(b, i, after_ident) {
            // r"..", r#".."#, br#".."#: ends at a quote and as many hashes.
            let mut j = open + 1;
            let close =
                |j: usize| b[j] == b'"' && b[j + 1..].iter().take(hashes).all(|&h| h == b'#');
            while j < b.len() && !close(j) {
                j += 1;
            }
            blank(&mut out, open + 1, j);
            i = j + 1 + hashes;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if c == b'\'' && (!after_ident || is_byte_prefix(b, i)) {
            match char_literal_end(src, i) {
                Some(end) => {
                    blank(&mut out, i + 1, end - 1);
                    i = end;
                }
                None => i += 1, // a lifetime or a label
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes replaced whole characters")
}

/// Whether the quote at `i` follows a lone `b` (a byte literal `b'x'`).
fn is_byte_prefix(b: &[u8], i: usize) -> bool {
    i >= 1 && b[i - 1] == b'b' && (i < 2 || !is_ident_byte(b[i - 2]))
}

/// If a raw string starts at `i` (`r"`, `r#"`, `br"`, `cr#"`): the offset of
/// its opening quote and its number of hashes.
fn raw_string_start(b: &[u8], i: usize, after_ident: bool) -> Option<(usize, usize)> {
    if after_ident {
        return None;
    }
    let mut j = i;
    if matches!(b[j], b'b' | b'c') && b.get(j + 1) == Some(&b'r') {
        j += 1;
    }
    if b[j] != b'r' {
        return None;
    }
    let hashes = b[j + 1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + 1 + hashes) == Some(&b'"')).then_some((j + 1 + hashes, hashes))
}

/// If a char literal starts at `i` (`'a'`, `'\n'`, `'\u{1F600}'`, `'é'`):
/// the offset just past it; `None` for a lifetime or a label.
fn char_literal_end(src: &str, i: usize) -> Option<usize> {
    let rest = &src[i + 1..];
    if let Some(escaped) = rest.strip_prefix('\\') {
        let close = escaped.char_indices().skip(1).find(|&(_, c)| c == '\'')?;
        return Some(i + 2 + close.0 + 1);
    }
    let c = rest.chars().next()?;
    rest[c.len_utf8()..]
        .starts_with('\'')
        .then(|| i + 1 + c.len_utf8() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_literals_are_blanked_in_place() {
        let src = "let s = \"super::net\"; // super::net\nlet c = '\"'; /* a\n b */ f::<'a>(r#\"x\"y\"#)\nlet q = b'\"';\n";
        let m = mask(src);
        assert_eq!(m.len(), src.len());
        assert_eq!(m.lines().count(), src.lines().count());
        assert!(!m.contains("net"), "{m}");
        assert!(m.contains("let c = ' ';"), "{m}");
        assert!(m.contains("f::<'a>(r#\"   \"#)"), "{m}");
        assert!(m.contains("let q = b' ';"), "{m}");
        assert!(!m.contains("b */"), "{m}");
    }

    #[test]
    fn test_items_are_marked_to_their_end() {
        let src = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { \"}\" }\n}\nfn c() {}\n#[cfg(test)]\nuse x::y;\nfn d() {}\n";
        let s = Source::new(src);
        let marked: Vec<usize> = (0..s.lines.len()).filter(|&i| s.in_test[i]).collect();
        assert_eq!(marked, vec![1, 2, 3, 4, 6, 7]);
    }
}
