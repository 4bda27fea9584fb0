//! File-level import circles that span two layers. The order rule already
//! forbids every one of them (a circle across layers imports upward
//! somewhere); this names the files that go round, so the upward import
//! is seen with what it closes.

use super::Layer;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Which file imports which, with the first line it does so on.
pub(super) struct Edges<'a> {
    out: BTreeMap<&'a str, BTreeMap<String, usize>>,
    layer: BTreeMap<String, Layer>,
}

impl<'a> Edges<'a> {
    pub(super) fn new() -> Self {
        Edges {
            out: BTreeMap::new(),
            layer: BTreeMap::new(),
        }
    }

    /// `from` (of `layer`) imports `to` (of `to_layer`) on `line`.
    pub(super) fn add(
        &mut self,
        from: &'a str,
        layer: Layer,
        to: &str,
        to_layer: Option<Layer>,
        line: usize,
    ) {
        self.layer.insert(from.to_string(), layer);
        if let Some(l) = to_layer {
            self.layer.insert(to.to_string(), l);
        }
        let first = self.out.entry(from).or_default();
        let at = first.entry(to.to_string()).or_insert(line);
        *at = (*at).min(line);
    }

    fn next(&self, file: &str) -> impl Iterator<Item = &String> {
        self.out.get(file).into_iter().flat_map(|m| m.keys())
    }

    /// One finding per group of files that import each other round (a
    /// strongly connected component) across layers: the shortest circle
    /// through one of its upward imports.
    pub(super) fn circles(&self, shown: &str) -> Vec<String> {
        let mut findings = Vec::new();
        for group in self.groups() {
            let layers: BTreeSet<Layer> = group
                .iter()
                .filter_map(|f| self.layer.get(*f))
                .copied()
                .collect();
            if layers.len() < 2 {
                continue;
            }
            let Some(circle) = self.upward_circle(&group) else {
                continue;
            };
            let hops: Vec<String> = circle
                .windows(2)
                .map(|w| format!("{} (line {})", w[0], self.out[w[0].as_str()][&w[1]]))
                .chain(circle.last().cloned())
                .collect();
            let names: Vec<&str> = layers.iter().map(|l| l.name()).collect();
            let (last, others) = names.split_last().expect("two layers or more");
            let all = if group.len() > circle.len() - 1 {
                format!(" ({} files import each other round in all)", group.len())
            } else {
                String::new()
            };
            findings.push(format!(
                "{shown}: an import circle spans the {} and {last} layers: {}{all}: break it \
                 at its upward import (named above with its fix)",
                others.join(", "),
                hops.join(" → "),
            ));
        }
        findings
    }

    /// The shortest circle in `group` through an import from a lower layer
    /// to a higher one, as files (the first again at the end).
    fn upward_circle(&self, group: &BTreeSet<&str>) -> Option<Vec<String>> {
        let layer = |f: &str| self.layer.get(f).copied();
        let mut best: Option<Vec<String>> = None;
        for &from in group {
            for to in self.next(from).filter(|t| group.contains(t.as_str())) {
                if layer(to) <= layer(from) {
                    continue;
                }
                let Some(back) = self.shortest(to, from, group) else {
                    continue;
                };
                let mut circle = vec![from.to_string()];
                circle.extend(back);
                if best.as_ref().is_none_or(|b| circle.len() < b.len()) {
                    best = Some(circle);
                }
            }
        }
        best
    }

    /// The shortest path of files from `start` to `goal` inside `group`.
    fn shortest(&self, start: &str, goal: &str, group: &BTreeSet<&str>) -> Option<Vec<String>> {
        let mut came: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = VecDeque::from([start.to_string()]);
        let mut seen = BTreeSet::from([start.to_string()]);
        while let Some(at) = queue.pop_front() {
            if at == goal {
                let mut path = vec![at.clone()];
                while let Some(prev) = came.get(path.last()?) {
                    path.push(prev.clone());
                }
                path.reverse();
                return Some(path);
            }
            for n in self.next(&at).filter(|n| group.contains(n.as_str())) {
                if seen.insert(n.clone()) {
                    came.insert(n.clone(), at.clone());
                    queue.push_back(n.clone());
                }
            }
        }
        None
    }

    /// The strongly connected components of two files or more (Tarjan's
    /// algorithm; the tree is small enough to recurse).
    fn groups(&self) -> Vec<BTreeSet<&str>> {
        struct State<'s> {
            index: BTreeMap<&'s str, usize>,
            low: BTreeMap<&'s str, usize>,
            stack: Vec<&'s str>,
            on_stack: BTreeSet<&'s str>,
            groups: Vec<BTreeSet<&'s str>>,
        }
        fn visit<'s>(edges: &'s Edges<'_>, v: &'s str, s: &mut State<'s>) {
            let i = s.index.len();
            s.index.insert(v, i);
            s.low.insert(v, i);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in edges.next(v) {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(edges, w, s);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if s.low[v] == s.index[v] {
                let mut group = BTreeSet::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    group.insert(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    s.groups.push(group);
                }
            }
        }
        let mut s = State {
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            groups: Vec::new(),
        };
        for &v in self.out.keys() {
            if !s.index.contains_key(v) {
                visit(self, v, &mut s);
            }
        }
        s.groups
    }
}
