//! File-level import circles that span two layers. The order rule already
//! forbids every one of them (a circle across layers imports upward
//! somewhere); this names the files that go round, so an upward import is
//! seen with the circle it closes.

use super::Layer;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Which file imports which (the first line it does so on), and each
/// file's layer.
#[derive(Default)]
pub(super) struct Edges {
    out: BTreeMap<String, BTreeMap<String, usize>>,
    layer: BTreeMap<String, Layer>,
}

impl Edges {
    /// `from` (of `layer`) imports `to` (of `to_layer`) on `line`.
    pub(super) fn add(&mut self, from: &str, layer: Layer, to: &str, to_layer: Layer, line: usize) {
        self.layer.insert(from.to_string(), layer);
        self.layer.insert(to.to_string(), to_layer);
        let at = self
            .out
            .entry(from.to_string())
            .or_default()
            .entry(to.to_string())
            .or_insert(line);
        *at = (*at).min(line);
    }

    /// One finding per upward import that closes a circle: the shortest
    /// way back, file by file.
    pub(super) fn circles(&self, shown: &str) -> Vec<String> {
        let mut findings = Vec::new();
        for (from, tos) in &self.out {
            for to in tos.keys().filter(|to| self.layer[*to] > self.layer[from]) {
                let Some(back) = self.shortest(to, from) else {
                    continue;
                };
                let circle: Vec<&str> = std::iter::once(from.as_str()).chain(back).collect();
                let layers: BTreeSet<Layer> = circle.iter().map(|f| self.layer[*f]).collect();
                let layers: Vec<&str> = layers.into_iter().map(Layer::name).collect();
                let (last, others) = layers.split_last().expect("two layers or more");
                let hops: Vec<String> = circle
                    .windows(2)
                    .map(|w| format!("{} (line {})", w[0], self.out[w[0]][w[1]]))
                    .chain([from.clone()])
                    .collect();
                findings.push(format!(
                    "{shown}: an import circle spans the {} and {last} layers: {}: break it at \
                     its upward import (named above with its fix)",
                    others.join(", "),
                    hops.join(" → "),
                ));
            }
        }
        findings
    }

    /// The files on the shortest way from `start` to `goal`, both included.
    fn shortest<'a>(&'a self, start: &'a str, goal: &str) -> Option<Vec<&'a str>> {
        let mut came: BTreeMap<&str, &str> = BTreeMap::new();
        let mut seen = BTreeSet::from([start]);
        let mut queue = VecDeque::from([start]);
        while let Some(at) = queue.pop_front() {
            if at == goal {
                let mut path = vec![at];
                while let Some(&prev) = came.get(path[path.len() - 1]) {
                    path.push(prev);
                }
                path.reverse();
                return Some(path);
            }
            for next in self.out.get(at).into_iter().flat_map(|m| m.keys()) {
                if seen.insert(next) {
                    came.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        None
    }
}
