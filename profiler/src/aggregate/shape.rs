//! The shape of a call tree: a prefix tree of function names without weights. Transforms
//! rewrite shapes ([`super::transform`]); a [`super::CallTree`] is a shape with weights.

use crate::session::{FrameId, Session, StrId};
use std::collections::HashMap;

/// A prefix tree of function names without weights: what transforms rewrite. Node 0 is the root;
/// a parent always has a smaller index than its children.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub parent: Vec<u32>,
    pub func: Vec<StrId>,
    /// One frame (the first seen) standing for each node, for file and line.
    pub frame: Vec<FrameId>,
    index: HashMap<(u32, StrId), u32>,
}

impl Shape {
    /// A shape holding only the root.
    pub fn new() -> Self {
        Shape {
            parent: vec![0],
            func: vec![StrId(0)],
            frame: vec![FrameId(u32::MAX)],
            index: HashMap::new(),
        }
    }

    /// The node for `func` called from `parent`, added on first sight.
    pub fn child(&mut self, parent: u32, func: StrId, frame: FrameId) -> u32 {
        let next = self.parent.len() as u32;
        let id = *self.index.entry((parent, func)).or_insert(next);
        if id == next {
            self.parent.push(parent);
            self.func.push(func);
            self.frame.push(frame);
        }
        id
    }

    /// The shape of a session's stacks, and the node of each stack.
    pub fn of_session(session: &Session) -> (Shape, Vec<Option<u32>>) {
        let mut shape = Shape::new();
        let mut map: Vec<Option<u32>> = Vec::with_capacity(session.stacks.len());
        for (i, node) in session.stacks.iter().enumerate() {
            let parent = match node.parent {
                None => Some(0),
                // A parent after its child would be a malformed session; its samples are left out.
                Some(p) if p.index() < i => map[p.index()],
                Some(_) => None,
            };
            let name = session.frame(node.frame).name;
            map.push(parent.map(|p| shape.child(p, name, node.frame)));
        }
        (shape, map)
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }
}
