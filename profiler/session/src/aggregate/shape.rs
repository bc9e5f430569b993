//! The shape of a call tree: a prefix tree of function names without weights. Transforms
//! rewrite shapes ([`super::transform`]); a [`super::CallTree`] is a shape with weights.

use crate::session::{FrameId, Session, StrId};
use hashbrown::hash_table::{Entry, HashTable};
use std::hash::BuildHasher;

/// A prefix tree of function names without weights: what transforms rewrite. Node 0 is the root;
/// a parent always has a smaller index than its children.
///
/// While it is built, `index` finds a node by (parent, function): a table of node ids hashed by
/// the node's columns, 5 bytes a slot (a `HashMap<(u32, StrId), u32>` took 13 bytes a
/// slot, 52 MB for two million nodes, more than the tree's own columns). [`Shape::finish`] frees
/// it once no node is added any more.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub parent: Vec<u32>,
    pub func: Vec<StrId>,
    /// One frame (the first seen) standing for each node, for file and line.
    pub frame: Vec<FrameId>,
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl Shape {
    /// A shape holding only the root.
    pub fn new() -> Self {
        Shape {
            parent: vec![0],
            func: vec![StrId(0)],
            frame: vec![FrameId(u32::MAX)],
            index: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// The node for `func` called from `parent`, added on first sight.
    pub fn child(&mut self, parent: u32, func: StrId, frame: FrameId) -> u32 {
        // Every node but the root is in the index until `finish`.
        debug_assert_eq!(
            self.index.len() + 1,
            self.len(),
            "Shape::child after finish"
        );
        let (parents, funcs, hasher) = (&mut self.parent, &mut self.func, &self.hasher);
        match self.index.entry(
            hasher.hash_one((parent, func)),
            |&n| parents[n as usize] == parent && funcs[n as usize] == func,
            |&n| hasher.hash_one((parents[n as usize], funcs[n as usize])),
        ) {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(new) => {
                let id = parents.len() as u32;
                new.insert(id);
                parents.push(parent);
                funcs.push(func);
                self.frame.push(frame);
                id
            }
        }
    }

    /// A copy of the columns, without the index (a finished shape has none).
    pub fn columns(&self) -> Shape {
        Shape {
            parent: self.parent.clone(),
            func: self.func.clone(),
            frame: self.frame.clone(),
            index: HashTable::new(),
            hasher: self.hasher.clone(),
        }
    }

    /// Frees the index that finds nodes by (parent, function): [`Shape::child`] must not be
    /// called after this (it would add a node that exists already).
    pub fn finish(&mut self) {
        self.index = HashTable::new();
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
        shape.finish();
        (shape, map)
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }
}
