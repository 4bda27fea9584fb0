//! A FIFO queue: enqueue, dequeue.

use super::mismatch;
use crate::Model;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::Hash;

/// A first-in first-out queue of `T`, empty at first. A dequeue on an
/// empty queue answers `None` (it does not wait).
#[derive(Clone, Debug, Default)]
pub struct Queue<T> {
    _types: std::marker::PhantomData<fn() -> T>,
}

impl<T> Queue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Queue {
            _types: std::marker::PhantomData,
        }
    }
}

/// An operation on a [`Queue`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueOp<T> {
    Enqueue(T),
    Dequeue,
}

/// A [`Queue`]'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueRet<T> {
    Enqueue,
    /// The head, or `None` if the queue was empty.
    Dequeue(Option<T>),
}

impl<T: Clone + Eq + Hash + Debug> Model for Queue<T> {
    type State = VecDeque<T>;
    type Input = QueueOp<T>;
    type Output = QueueRet<T>;

    fn init(&self) -> VecDeque<T> {
        VecDeque::new()
    }

    fn step(
        &self,
        s: &VecDeque<T>,
        input: &QueueOp<T>,
        output: Option<&QueueRet<T>>,
    ) -> Option<VecDeque<T>> {
        match (input, output) {
            (QueueOp::Enqueue(x), None | Some(QueueRet::Enqueue)) => {
                let mut s = s.clone();
                s.push_back(x.clone());
                Some(s)
            }
            // Unknown: it removed the head, whichever that was.
            (QueueOp::Dequeue, None) => {
                let mut s = s.clone();
                s.pop_front();
                Some(s)
            }
            (QueueOp::Dequeue, Some(QueueRet::Dequeue(x))) => {
                if s.front() != x.as_ref() {
                    return None;
                }
                let mut s = s.clone();
                s.pop_front();
                Some(s)
            }
            (input, Some(output)) => mismatch("queue", input, output),
        }
    }

    fn describe(&self, input: &QueueOp<T>, output: Option<&QueueRet<T>>) -> String {
        match (input, output) {
            (QueueOp::Enqueue(x), _) => format!("enq {x:?}"),
            (QueueOp::Dequeue, Some(QueueRet::Dequeue(Some(x)))) => format!("deq -> {x:?}"),
            (QueueOp::Dequeue, Some(QueueRet::Dequeue(None))) => "deq -> empty".into(),
            (QueueOp::Dequeue, _) => "deq".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        let m = Queue::<u8>::new();
        let s = m
            .step(&m.init(), &QueueOp::Enqueue(1), Some(&QueueRet::Enqueue))
            .unwrap();
        let s = m.step(&s, &QueueOp::Enqueue(2), None).unwrap();
        assert!(m
            .step(&s, &QueueOp::Dequeue, Some(&QueueRet::Dequeue(Some(2))))
            .is_none());
        let s = m
            .step(&s, &QueueOp::Dequeue, Some(&QueueRet::Dequeue(Some(1))))
            .unwrap();
        assert_eq!(s, [2]);
        let s = m.step(&s, &QueueOp::Dequeue, None).unwrap();
        assert!(s.is_empty());
        assert_eq!(
            m.step(&s, &QueueOp::Dequeue, Some(&QueueRet::Dequeue(None))),
            Some(s.clone())
        );
        assert_eq!(m.step(&s, &QueueOp::Dequeue, None), Some(s));
    }
}
