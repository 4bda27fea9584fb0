//! Reading Rust source without a parser: comments and literals masked out,
//! the item lists of a file (into `mod` and item-level macro bodies), and
//! `use` trees.

// ---------------------------------------------------------------------------
// Masking: the source with comments (and, for `code`, literals) blanked out,
// byte for byte, so that offsets are the source's.

pub(super) struct Masks {
    /// Comments, strings and chars blanked: for braces and names.
    pub(super) code: String,
    /// Comments blanked: for attributes and `use` trees.
    pub(super) no_comments: String,
}

impl Masks {
    pub(super) fn new(src: &str) -> Masks {
        let b = src.as_bytes();
        let mut code = b.to_vec();
        let mut no_comments = b.to_vec();
        let blank = |v: &mut Vec<u8>, from: usize, to: usize| {
            for c in &mut v[from..to.min(b.len())] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
        };
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            let prev_ident = i > 0 && ident(b[i - 1]);
            if c == b'/' && b.get(i + 1) == Some(&b'/') {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut code, i, end);
                blank(&mut no_comments, i, end);
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
                blank(&mut code, i, j);
                blank(&mut no_comments, i, j);
                i = j;
            } else if (c == b'r' || (c == b'b' && b.get(i + 1) == Some(&b'r'))) && !prev_ident {
                // Raw string: r"..", r#".."#, br#".."#.
                let mut j = i + if c == b'b' { 2 } else { 1 };
                let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
                j += hashes;
                if b.get(j) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = b[j + 1..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| j + 1 + p + close.len());
                blank(&mut code, i, end);
                i = end;
            } else if c == b'"' {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut code, i, j + 1);
                i = j + 1;
            } else if c == b'\'' {
                // A char literal ('a', '\n', '\'', '{', 'é'), or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    let mut j = i + 2;
                    while j < b.len() && b[j] != b'\'' {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    blank(&mut code, i, j + 1);
                    i = j + 1;
                } else {
                    let ch_len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    if b.get(i + 1 + ch_len) == Some(&b'\'') {
                        blank(&mut code, i, i + 2 + ch_len);
                        i += 2 + ch_len;
                    } else {
                        i += 1;
                    }
                }
            } else {
                i += 1;
            }
        }
        // Blanking replaced whole UTF-8 sequences inside comments and
        // literals only, so both stay valid UTF-8.
        Masks {
            code: String::from_utf8(code).expect("masked whole characters"),
            no_comments: String::from_utf8(no_comments).expect("masked whole characters"),
        }
    }
}

// ---------------------------------------------------------------------------
// Items.

pub(super) enum Kind {
    Use,
    /// `mod m { .. }` or `name! { .. }`: its body is an item list.
    Container,
    Other,
}

pub(super) struct Item {
    /// The first attribute (or the item itself).
    pub(super) start: usize,
    /// Where the visibility (`pub`) or the keyword starts.
    pub(super) visibility: usize,
    /// The item's keyword (`use`, `fn`, ...).
    pub(super) keyword: usize,
    /// Just past its `;` or closing `}`.
    pub(super) end: usize,
    /// Outer attributes, as byte ranges.
    pub(super) attributes: Vec<(usize, usize)>,
    pub(super) kind: Kind,
    pub(super) name: Option<String>,
    pub(super) is_test: bool,
}

pub(super) fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub(super) fn skip_ws(b: &[u8], mut i: usize, to: usize) -> usize {
    while i < to && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Past the group that opens at `i` (`(`, `[` or `{`), or `to`.
pub(super) fn skip_group(b: &[u8], i: usize, to: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < to {
        match b[j] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    to
}

pub(super) fn word_at(b: &[u8], i: usize, to: usize) -> &str {
    let end = (i..to).find(|&j| !is_ident_byte(b[j])).unwrap_or(to);
    std::str::from_utf8(&b[i..end]).unwrap_or("")
}

/// The items of the list `from..to`, and of the lists nested in them.
pub(super) fn parse_items(m: &Masks, from: usize, to: usize, items: &mut Vec<Item>) {
    let b = m.code.as_bytes();
    let mut i = from;
    loop {
        i = skip_ws(b, i, to);
        if i >= to {
            return;
        }
        if b[i] == b'#' && b.get(i + 1) == Some(&b'!') {
            // An inner attribute.
            let open = skip_ws(b, i + 2, to);
            i = if b.get(open) == Some(&b'[') {
                skip_group(b, open, to)
            } else {
                open + 1
            };
            continue;
        }
        if matches!(b[i], b')' | b']' | b'}' | b';' | b',') {
            // Stray punctuation (a macro body that is not an item list).
            i += 1;
            continue;
        }
        let start = i;
        let mut attributes = Vec::new();
        while i < to && b[i] == b'#' {
            let open = skip_ws(b, i + 1, to);
            if b.get(open) != Some(&b'[') {
                break;
            }
            let end = skip_group(b, open, to);
            attributes.push((i, end));
            i = skip_ws(b, end, to);
        }
        let visibility = i;
        // Qualifiers before the keyword.
        let mut k = i;
        loop {
            let w = word_at(b, k, to);
            match w {
                "pub" => {
                    k = skip_ws(b, k + 3, to);
                    if b.get(k) == Some(&b'(') {
                        k = skip_ws(b, skip_group(b, k, to), to);
                    }
                }
                "async" | "unsafe" | "default" => k = skip_ws(b, k + w.len(), to),
                "const" | "extern"
                    if {
                        let next = skip_ws(b, k + w.len(), to);
                        matches!(word_at(b, next, to), "fn" | "unsafe" | "async" | "")
                    } =>
                {
                    k = skip_ws(b, k + w.len(), to);
                    // `extern "C"`: the ABI string is blanked.
                }
                _ => break,
            }
        }
        let keyword = k;
        let kw = word_at(b, k, to).to_string();
        let after_kw = skip_ws(b, k + kw.len(), to);
        let mut name = None;
        let mut kind = Kind::Other;
        let ends_at_semicolon = matches!(kw.as_str(), "use" | "const" | "static" | "type" | "let");
        match kw.as_str() {
            "use" => kind = Kind::Use,
            "fn" | "mod" | "struct" | "enum" | "trait" | "union" | "const" | "static" | "type" => {
                let n = word_at(b, after_kw, to);
                if !n.is_empty() {
                    name = Some(n.to_string());
                }
            }
            "macro_rules" => {
                let n = skip_ws(b, after_kw + 1, to);
                name = Some(word_at(b, n, to).to_string());
            }
            _ if !kw.is_empty() && b.get(after_kw) == Some(&b'!') => {
                // A macro invocation: `name! { .. }` holds items.
                name = Some(format!("{kw}!"));
                kind = Kind::Container;
            }
            _ => {}
        }
        // The end: `;` at depth 0, or the group of the first `{` at depth 0
        // (for `use`/`const`/`static`/`type`, only `;`).
        let mut j = keyword.max(i);
        let mut body = None;
        let end = loop {
            if j >= to {
                break to;
            }
            match b[j] {
                b';' => break j + 1,
                b'(' | b'[' => j = skip_group(b, j, to),
                b'{' if !ends_at_semicolon => {
                    let close = skip_group(b, j, to);
                    body = Some((j + 1, close.saturating_sub(1)));
                    // `name! { .. };` is rare; `name! ( .. );` ends at `;`.
                    break close;
                }
                b'{' => j = skip_group(b, j, to),
                b'}' => break j, // the end of the enclosing list
                _ => j += 1,
            }
        };
        if kw == "mod" && body.is_some() {
            kind = Kind::Container;
        }
        if !matches!(kind, Kind::Container) {
            body = None;
        }
        let is_test = attributes
            .iter()
            .any(|&(a, e)| is_test_attribute(&m.code[a..e]));
        items.push(Item {
            start,
            visibility,
            keyword,
            end,
            attributes,
            kind,
            name,
            is_test,
        });
        if let Some((open, close)) = body {
            parse_items(m, open, close, items);
        }
        i = end.max(start + 1);
    }
}

/// `#[test]`, `#[tokio::test(..)]`, `#[maybe_tokio_test]`, ...
pub(super) fn is_test_attribute(attr: &str) -> bool {
    let inner = attr
        .trim_start_matches('#')
        .trim_start()
        .trim_start_matches('[');
    let path: String = inner
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || c.is_whitespace())
        .filter(|c| !c.is_whitespace())
        .collect();
    let last = path.rsplit("::").next().unwrap_or("");
    last == "test" || last.ends_with("_test")
}

// ---------------------------------------------------------------------------
// `use` trees.

pub(super) struct Leaf {
    /// The path, `self` and `*` included.
    pub(super) path: Vec<String>,
    pub(super) alias: Option<String>,
}

impl Leaf {
    /// The name it brings into scope.
    pub(super) fn binds(&self) -> Option<String> {
        if let Some(a) = &self.alias {
            return (a != "_").then(|| a.clone());
        }
        let mut p = self.path.iter().rev();
        match p.next()?.as_str() {
            "*" => None,
            "self" => p.next().cloned(),
            last => Some(last.to_string()),
        }
    }

    pub(super) fn module_path(&self) -> Vec<&str> {
        self.path
            .iter()
            .map(String::as_str)
            .filter(|s| *s != "self")
            .collect()
    }

    pub(super) fn display(&self) -> String {
        let p = self.module_path().join("::");
        match &self.alias {
            Some(a) => format!("{p} as {a}"),
            None => p,
        }
    }
}

/// The leaves of `use a::{b, c::{d as e, *}};` (text from `use` to `;`).
pub(super) fn use_leaves(text: &str) -> Vec<Leaf> {
    let mut tokens: Vec<String> = Vec::new();
    let t = text.trim_start().strip_prefix("use").unwrap_or(text);
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_ident_byte(c) {
            let w = word_at(b, i, b.len());
            tokens.push(w.to_string());
            i += w.len();
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            tokens.push("::".into());
            i += 2;
        } else if matches!(c, b'{' | b'}' | b',' | b'*') {
            tokens.push((c as char).to_string());
            i += 1;
        } else if c == b';' {
            break;
        } else {
            i += 1;
        }
    }
    let mut leaves = Vec::new();
    let mut pos = 0;
    use_tree(&tokens, &mut pos, Vec::new(), &mut leaves);
    leaves
}

pub(super) fn use_tree(
    t: &[String],
    pos: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Leaf>,
) {
    if t.get(*pos).map(String::as_str) == Some("::") {
        prefix.push(String::new());
        *pos += 1;
    }
    loop {
        match t.get(*pos).map(String::as_str) {
            Some("{") => {
                *pos += 1;
                loop {
                    match t.get(*pos).map(String::as_str) {
                        None => return,
                        Some("}") => {
                            *pos += 1;
                            return;
                        }
                        Some(",") => *pos += 1,
                        _ => {
                            let before = *pos;
                            use_tree(t, pos, prefix.clone(), out);
                            if *pos == before {
                                *pos += 1; // not a path: skip it
                            }
                        }
                    }
                }
            }
            Some("*") => {
                *pos += 1;
                prefix.push("*".into());
                out.push(Leaf {
                    path: prefix,
                    alias: None,
                });
                return;
            }
            Some(w) if w != "," && w != "}" && w != "::" => {
                prefix.push(w.to_string());
                *pos += 1;
                if t.get(*pos).map(String::as_str) == Some("::") {
                    *pos += 1;
                    continue;
                }
                let mut alias = None;
                if t.get(*pos).map(String::as_str) == Some("as") {
                    alias = t.get(*pos + 1).cloned();
                    *pos += 2;
                }
                out.push(Leaf {
                    path: prefix,
                    alias,
                });
                return;
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_trees() {
        let l = use_leaves("use ::a::{b, c::{self, d as e, *}, f};");
        let shown: Vec<String> = l.iter().map(Leaf::display).collect();
        assert_eq!(
            shown,
            ["::a::b", "::a::c", "::a::c::d as e", "::a::c::*", "::a::f"]
        );
        let names: Vec<Option<String>> = l.iter().map(Leaf::binds).collect();
        assert_eq!(
            names,
            [
                Some("b".into()),
                Some("c".into()),
                Some("e".into()),
                None,
                Some("f".into())
            ]
        );
    }

    #[test]
    fn test_attributes() {
        assert!(is_test_attribute("#[test]"));
        assert!(is_test_attribute(
            "#[tokio::test(flavor = \"multi_thread\")]"
        ));
        assert!(is_test_attribute("#[maybe_tokio_test]"));
        assert!(!is_test_attribute("#[cfg(test)]"));
        assert!(!is_test_attribute("#[should_panic]"));
    }
}
