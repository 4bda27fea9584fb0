//! Rust signatures as rustdoc prints them, taken apart: generics, function
//! headers, impl headers. The text comes from `html::code_text` (tags
//! stripped, links already replaced by paths), so it is Rust, one line.

/// Whether `b` at `i` is a `>` that closes an angle bracket (not the `>` of
/// `->` or `=>`).
fn closes_angle(b: &[u8], i: usize) -> bool {
    b[i] == b'>' && !(i > 0 && (b[i - 1] == b'-' || b[i - 1] == b'='))
}

/// Splits `s` at `sep` where no bracket is open.
pub fn split_top(s: &str, sep: u8) -> Vec<String> {
    let b = s.as_bytes();
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for i in 0..b.len() {
        match b[i] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if closes_angle(b, i) => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// The index of the bracket closing the one opened at `open`.
pub fn matching(s: &str, open: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for i in open..b.len() {
        match b[i] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if closes_angle(b, i) => depth -= 1,
            _ => continue,
        }
        if depth == 0 {
            return Some(i);
        }
    }
    None
}

/// The byte index of the word `word` in `s` at bracket depth zero.
pub fn find_word_top(s: &str, word: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    for i in 0..b.len() {
        match b[i] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if closes_angle(b, i) => depth -= 1,
            _ if depth == 0 && b[i..].starts_with(word.as_bytes()) => {
                let before = i == 0 || !is_ident(b[i - 1]);
                let after = b.get(i + word.len()).is_none_or(|&c| !is_ident(c));
                if before && after {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Replaces the identifier `from` (whole words only) by `to`.
pub fn replace_ident(s: &str, from: &str, to: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let whole = s[i..].starts_with(from)
            && (i == 0 || !is_ident(b[i - 1]) && b[i - 1] != b'\'')
            && b.get(i + from.len()).is_none_or(|&c| !is_ident(c));
        if whole {
            out.push_str(to);
            i += from.len();
        } else {
            let c = s[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Whether the identifier or lifetime `word` occurs in `s`.
pub fn mentions(s: &str, word: &str) -> bool {
    replace_ident(s, word, "\u{0}") != s
}

/// One generic parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// As declared, bounds included, default removed: `T: Send + 'static`.
    pub decl: String,
    /// `T`, `'a`, `N`.
    pub name: String,
    pub lifetime: bool,
}

/// The parameters between a declaration's `<` and `>`.
pub fn parse_generics(inner: &str) -> Vec<Param> {
    split_top(inner, b',')
        .into_iter()
        .map(|p| {
            // A default (`T = ()`) belongs to the type, not to a user of it.
            let decl = match split_top(&p, b'=').first() {
                Some(d) if !p.contains("==") => d.clone(),
                _ => p.clone(),
            };
            let head = decl.trim_start_matches("const ").trim();
            let name = head
                .split(|c: char| c == ':' || c.is_whitespace())
                .next()
                .unwrap_or("")
                .to_string();
            Param {
                lifetime: name.starts_with('\''),
                decl,
                name,
            }
        })
        .collect()
}

/// `<decl, decl>` (lifetimes first, as Rust requires), or nothing.
pub fn decls(params: &[Param]) -> String {
    let mut sorted: Vec<&Param> = params.iter().filter(|p| p.lifetime).collect();
    sorted.extend(params.iter().filter(|p| !p.lifetime));
    if sorted.is_empty() {
        return String::new();
    }
    let list: Vec<&str> = sorted.iter().map(|p| p.decl.as_str()).collect();
    format!("<{}>", list.join(", "))
}

/// `<name, name>`, or nothing.
pub fn args(params: &[Param]) -> String {
    if params.is_empty() {
        return String::new();
    }
    let list: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    format!("<{}>", list.join(", "))
}

/// A function's header.
#[derive(Clone, Debug)]
pub struct FnSig {
    pub is_async: bool,
    pub is_unsafe: bool,
    pub name: String,
    pub generics: Vec<Param>,
    /// Each parameter as written (`&self`, `buf: &mut [u8]`).
    pub params: Vec<String>,
    pub ret: Option<String>,
    pub where_: Option<String>,
}

/// Reads `pub const async unsafe fn name<..>(..) -> R where ..`.
pub fn parse_fn(text: &str) -> Result<FnSig, String> {
    let at = find_word_top(text, "fn").ok_or("no `fn`")?;
    let quals = &text[..at];
    if quals.contains("extern") {
        return Err("an extern fn".into());
    }
    let rest = text[at + 2..].trim_start();
    let name_end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .ok_or("no parameter list")?;
    let name = rest[..name_end].to_string();
    let mut rest = &rest[name_end..];
    let mut generics = Vec::new();
    if rest.starts_with('<') {
        let close = matching(rest, 0).ok_or("unbalanced generics")?;
        generics = parse_generics(&rest[1..close]);
        rest = &rest[close + 1..];
    }
    let rest = rest.trim_start();
    if !rest.starts_with('(') {
        return Err("no parameter list".into());
    }
    let close = matching(rest, 0).ok_or("unbalanced parameters")?;
    let params = split_top(&rest[1..close], b',');
    let (ret, where_) = split_where(rest[close + 1..].trim());
    let ret = match ret.strip_prefix("->") {
        Some(r) => Some(r.trim().to_string()),
        None if ret.is_empty() => None,
        None => return Err(format!("unexpected `{ret}` after the parameters")),
    };
    Ok(FnSig {
        is_async: mentions(quals, "async"),
        is_unsafe: mentions(quals, "unsafe"),
        name,
        generics,
        params,
        ret,
        where_,
    })
}

/// Splits `x where a, b,` into `x` and `a, b`.
fn split_where(s: &str) -> (String, Option<String>) {
    match find_word_top(s, "where") {
        Some(i) => {
            let w = s[i + 5..].trim().trim_end_matches(',').trim().to_string();
            (s[..i].trim().to_string(), (!w.is_empty()).then_some(w))
        }
        None => (s.trim().to_string(), None),
    }
}

/// A parameter's type, with `self` in any of its spellings made `self_ty`.
pub fn param_type(param: &str, self_ty: &str) -> Result<String, String> {
    let p = param.trim();
    let colon = find_colon(p);
    let ty = match colon {
        Some(i) => p[i + 1..].trim().to_string(),
        None => {
            // `self`, `mut self`, `&self`, `&'a mut self`.
            let body = p
                .strip_suffix("self")
                .ok_or_else(|| format!("parameter `{p}`"))?;
            let body = body.trim().trim_end_matches("mut").trim();
            if body.is_empty() {
                "Self".into()
            } else if p.contains("mut self") {
                format!("{body} mut Self")
            } else {
                format!("{body} Self")
            }
        }
    };
    Ok(replace_ident(&ty, "Self", self_ty))
}

/// The `:` of `pattern: Type` (not one of a `::`).
fn find_colon(p: &str) -> Option<usize> {
    let b = p.as_bytes();
    let mut depth = 0i32;
    for i in 0..b.len() {
        match b[i] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if closes_angle(b, i) => depth -= 1,
            b':' if depth == 0 => {
                let double = b.get(i + 1) == Some(&b':') || (i > 0 && b[i - 1] == b':');
                if !double {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// An `impl` block's header.
#[derive(Debug)]
pub struct ImplHeader {
    pub generics: Vec<Param>,
    pub negative: bool,
    pub trait_: Option<String>,
    pub self_ty: String,
    pub where_: Option<String>,
}

/// Reads `impl<..> Trait for Type where ..` or `impl<..> Type`; each `'_`
/// becomes a named lifetime among the generics.
pub fn parse_impl(text: &str) -> Result<ImplHeader, String> {
    let t = text.trim().trim_start_matches("unsafe ").trim();
    let mut rest = t.strip_prefix("impl").ok_or("not an impl")?;
    let mut generics = Vec::new();
    if rest.starts_with('<') {
        let close = matching(rest, 0).ok_or("unbalanced generics")?;
        generics = parse_generics(&rest[1..close]);
        rest = &rest[close + 1..];
    }
    let (head, where_) = split_where(rest.trim());
    let mut head = head;
    let mut n = 0;
    while let Some(i) = head.find("'_") {
        let name = format!("'elided{n}");
        n += 1;
        head = format!("{}{}{}", &head[..i], name, &head[i + 2..]);
        generics.push(Param {
            decl: name.clone(),
            name,
            lifetime: true,
        });
    }
    let for_at = find_for(&head);
    let (negative, trait_, self_ty) = match for_at {
        Some(i) => {
            let tr = head[..i].trim();
            let (neg, tr) = match tr.strip_prefix('!') {
                Some(t) => (true, t),
                None => (false, tr),
            };
            (neg, Some(tr.to_string()), head[i + 3..].trim().to_string())
        }
        None => (false, None, head.trim().to_string()),
    };
    Ok(ImplHeader {
        generics,
        negative,
        trait_,
        self_ty,
        where_,
    })
}

/// The `for` of `Trait for Type` (not the `for` of `for<'a>`).
fn find_for(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = find_word_top(&s[from..], "for") {
        let at = from + i;
        if !s[at + 3..].trim_start().starts_with('<') {
            return Some(at);
        }
        from = at + 3;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_header_comes_apart() {
        let f = parse_fn(
            "pub async fn peek<'a, B: Into<u8>>(&'a self, buf: &mut [u8], f: impl FnOnce() -> u8) -> std::io::Result<usize> where B: Send,",
        )
        .unwrap();
        assert!(f.is_async);
        assert_eq!(f.name, "peek");
        assert_eq!(f.generics.len(), 2);
        assert_eq!(f.generics[1].name, "B");
        assert_eq!(f.params.len(), 3);
        assert_eq!(f.ret.as_deref(), Some("std::io::Result<usize>"));
        assert_eq!(f.where_.as_deref(), Some("B: Send"));
        assert_eq!(param_type(&f.params[0], "X").unwrap(), "&'a X");
        assert_eq!(param_type(&f.params[1], "X").unwrap(), "&mut [u8]");
        assert_eq!(
            param_type("self: Pin<&mut Self>", "X").unwrap(),
            "Pin<&mut X>"
        );
        assert_eq!(param_type("mut self", "X").unwrap(), "X");
        assert_eq!(param_type("&mut self", "X").unwrap(), "& mut X");
    }

    #[test]
    fn an_impl_header_comes_apart() {
        let i = parse_impl("impl<T: Send> !Sync for Foo<'_, T> where T: Debug,").unwrap();
        assert!(i.negative);
        assert_eq!(i.trait_.as_deref(), Some("Sync"));
        assert_eq!(i.self_ty, "Foo<'elided0, T>");
        assert_eq!(i.where_.as_deref(), Some("T: Debug"));
        assert_eq!(decls(&i.generics), "<'elided0, T: Send>");
        let j = parse_impl("impl<F: for<'a> Fn(&'a u8)> Foo<F>").unwrap();
        assert!(j.trait_.is_none());
        assert_eq!(j.self_ty, "Foo<F>");
    }

    #[test]
    fn replacing_an_identifier_spares_longer_words() {
        assert_eq!(
            replace_ident("Self, SelfX, <Self>", "Self", "T"),
            "T, SelfX, <T>"
        );
        assert!(mentions("&'a X", "'a"));
    }
}
