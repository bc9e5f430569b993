//! The call tree: stacks merged by function name, with self and total weight per node.
//!
//! Built once per (filter, transforms) and then queried many times (flame layout, top-N, search),
//! so it is stored as flat columns indexed by [`NodeId`], children in one array (CSR), sorted by
//! function name like flamegraph.pl does.

use super::filter::{Filter, StackWeights};
use super::shape::Shape;
use super::transform::Transform;
use crate::session::{FrameId, Session, StrId};
use serde::{Deserialize, Serialize};

/// Each node's self weight and count: the sums of `weights` over the stacks `map` puts there.
fn self_sums(shape: &Shape, map: &[Option<u32>], weights: &StackWeights) -> (Vec<u64>, Vec<u64>) {
    let mut self_weight = vec![0u64; shape.len()];
    let mut self_count = vec![0; shape.len()];
    for (stack, node) in map.iter().enumerate() {
        if let Some(n) = node {
            self_weight[*n as usize] =
                self_weight[*n as usize].saturating_add(weights.weight[stack]);
            self_count[*n as usize] += weights.count[stack];
        }
    }
    (self_weight, self_count)
}

/// A node of a [`CallTree`]. Node 0 is the root, which stands for "all samples" and has no function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The root of every tree.
    pub const ROOT: NodeId = NodeId(0);

    /// The position in the tree's columns.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A call tree with weights: stacks merged by function name. Built once, queried many times; the
/// nodes are flat columns indexed by [`NodeId`], a parent before its children, and each node's
/// children are sorted by function name.
#[derive(Clone, Debug, PartialEq, Eq)]
///
/// A node takes 32 bytes (a million distinct stacks): its self weight and count are
/// its totals less its children's, and its depth the length of its chain of parents, computed
/// when asked for rather than stored (24 bytes more).
pub struct CallTree {
    parent: Vec<NodeId>,
    func: Vec<StrId>,
    frame: Vec<FrameId>,
    total_weight: Vec<u64>,
    total_count: Counts,
    child_start: Vec<u32>,
    children: Vec<NodeId>,
}

/// The nodes' sample counts: in `u32` when the root's (the largest) fits, as it nearly always
/// does, else in `u64`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Counts {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Counts {
    fn new(counts: Vec<u64>) -> Counts {
        match u32::try_from(counts.first().copied().unwrap_or(0)) {
            Ok(_) => Counts::Narrow(counts.iter().map(|&c| c as u32).collect()),
            Err(_) => Counts::Wide(counts),
        }
    }

    fn get(&self, i: usize) -> u64 {
        match self {
            Counts::Narrow(c) => u64::from(c[i]),
            Counts::Wide(c) => c[i],
        }
    }
}

/// A session's stacks as a list of transforms rewrites them: the tree of functions they form
/// (its root stands for all samples) and each stack's node in it, or none when a transform
/// drops the stack's samples. O(stacks), not O(samples), but a session may hold 100,000
/// stacks: computed once per (session, transforms) and shared by the call tree
/// ([`CallTree::build_transformed`]), the timeline ([`TransformedStacks::charged_functions`])
/// and the stack chart, so that a change of threads, time range or window does not compute it
/// again. Every use must pass the session it was made from.
#[derive(Clone, Debug)]
pub struct TransformedStacks {
    pub(crate) shape: Shape,
    pub(crate) map: Vec<Option<u32>>,
    transformed: bool,
}

impl TransformedStacks {
    /// The stacks of `session` rewritten by `transforms` applied in order.
    pub fn new(session: &Session, transforms: &[Transform]) -> Self {
        let (mut shape, mut map) = Shape::of_session(session);
        for transform in transforms {
            let (next, step) = transform.apply(&shape, session);
            for slot in &mut map {
                *slot = slot.and_then(|n| step[n as usize]);
            }
            shape = next;
        }
        TransformedStacks {
            shape,
            map,
            transformed: !transforms.is_empty(),
        }
    }

    /// Whether any transform was applied (else the stacks are only merged by function name).
    pub fn is_transformed(&self) -> bool {
        self.transformed
    }

    /// Per stack of `session`, the function its samples are charged to (the leaf of the
    /// rewritten stack, as the call tree charges it), or `None` when a transform drops them. A
    /// stack whose every frame a transform removed is charged to the root, which has no
    /// function: it keeps its own leaf function here.
    pub fn charged_functions(&self, session: &Session) -> Vec<Option<StrId>> {
        self.map
            .iter()
            .zip(&session.stacks)
            .map(|(node, stack)| match node {
                None => None,
                Some(0) => Some(session.frame(stack.frame).name),
                Some(n) => Some(self.shape.func[*n as usize]),
            })
            .collect()
    }
}

impl CallTree {
    /// The call tree of the samples `filter` keeps, without transforms.
    pub fn new(session: &Session, filter: &Filter) -> Self {
        Self::filtered(session, filter, &[])
    }

    /// The call tree of the samples `filter` keeps, rewritten by `transforms` applied in order.
    /// What [`CallTree::build`] gives for the filter's weights, built in less memory: the
    /// per-stack sums and the rewritten stacks are freed as soon as the tree has what it needs
    /// of them (two million distinct stacks).
    pub fn filtered(session: &Session, filter: &Filter, transforms: &[Transform]) -> Self {
        let weights = StackWeights::compute(session, filter);
        let TransformedStacks { shape, map, .. } = TransformedStacks::new(session, transforms);
        let (self_weight, self_count) = self_sums(&shape, &map, &weights);
        drop((weights, map));
        Self::from_shape(shape, self_weight, self_count, session)
    }

    /// The call tree of per-stack `weights`, rewritten by `transforms` applied in order.
    pub fn build(session: &Session, weights: &StackWeights, transforms: &[Transform]) -> Self {
        let TransformedStacks { shape, map, .. } = TransformedStacks::new(session, transforms);
        let (self_weight, self_count) = self_sums(&shape, &map, weights);
        drop(map);
        Self::from_shape(shape, self_weight, self_count, session)
    }

    /// The call tree of per-stack `weights` over stacks already rewritten (made from
    /// `session`): O(stacks + nodes), no pass over the samples and no transform applied again.
    pub fn build_transformed(
        session: &Session,
        weights: &StackWeights,
        stacks: &TransformedStacks,
    ) -> Self {
        let (self_weight, self_count) = self_sums(&stacks.shape, &stacks.map, weights);
        Self::from_shape(stacks.shape.columns(), self_weight, self_count, session)
    }

    /// Finishes a tree from a shape and its nodes' self weights and counts. The shape's columns
    /// become the tree's (no copy).
    pub(crate) fn from_shape(
        shape: Shape,
        self_weight: Vec<u64>,
        self_count: Vec<u64>,
        session: &Session,
    ) -> Self {
        let n = shape.len();
        // The self sums become the totals in place.
        let (mut total_weight, mut total_count) = (self_weight, self_count);
        for i in (1..n).rev() {
            let p = shape.parent[i] as usize;
            total_weight[p] = total_weight[p].saturating_add(total_weight[i]);
            total_count[p] += total_count[i];
        }
        let total_count = Counts::new(total_count);
        // Each node's number of children, then (summed) where its children start, then (as
        // they are placed) where the next node's start: shifted back by one at the end. One
        // column, not three.
        let mut child_start = vec![0u32; n + 1];
        for i in 1..n {
            let p = shape.parent[i] as usize;
            child_start[p] += 1;
        }
        let mut acc = 0u32;
        for start in &mut child_start {
            let count = *start;
            *start = acc;
            acc += count;
        }
        let mut children = vec![NodeId(0); n.saturating_sub(1)];
        for i in 1..n {
            let p = shape.parent[i] as usize;
            children[child_start[p] as usize] = NodeId(i as u32);
            child_start[p] += 1;
        }
        for p in (1..=n).rev() {
            child_start[p] = child_start[p - 1];
        }
        child_start[0] = 0;
        for p in 0..n {
            let range = child_start[p] as usize..child_start[p + 1] as usize;
            crate::order::sort_by(&mut children[range], |a, b| {
                session
                    .str(shape.func[a.index()])
                    .cmp(session.str(shape.func[b.index()]))
            });
        }
        let Shape {
            parent,
            func,
            frame,
            ..
        } = shape;
        CallTree {
            // In place: a `u32` and a `NodeId` have the same layout.
            parent: parent.into_iter().map(NodeId).collect(),
            func,
            frame,
            total_weight,
            total_count,
            child_start,
            children,
        }
    }

    /// The number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when the tree is only its root.
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }

    /// The root.
    pub fn root(&self) -> NodeId {
        NodeId::ROOT
    }

    /// The caller of `node` (`None` for the root).
    pub fn parent(&self, node: NodeId) -> Option<NodeId> {
        (node != NodeId::ROOT).then(|| self.parent[node.index()])
    }

    /// The function (its name's string id) of `node`; `StrId(0)`, the empty name, for the root.
    pub fn func(&self, node: NodeId) -> StrId {
        self.func[node.index()]
    }

    /// The function name of `node` ("" for the root).
    pub fn name<'s>(&self, session: &'s Session, node: NodeId) -> &'s str {
        session.str(self.func(node))
    }

    /// A frame standing for `node` (the first one seen), for its file and line; `None` for the root.
    pub fn frame(&self, node: NodeId) -> Option<FrameId> {
        (node != NodeId::ROOT).then(|| self.frame[node.index()])
    }

    /// The depth of `node`: 0 for the root, 1 for outermost functions. Walks up to the root.
    pub fn depth(&self, node: NodeId) -> u32 {
        let (mut depth, mut at) = (0, node);
        while let Some(p) = self.parent(at) {
            depth += 1;
            at = p;
        }
        depth
    }

    /// The callees of `node`, sorted by function name.
    pub fn children(&self, node: NodeId) -> &[NodeId] {
        let i = node.index();
        &self.children[self.child_start[i] as usize..self.child_start[i + 1] as usize]
    }

    /// Weight of the samples whose leaf is `node`: its total less its callees'.
    pub fn self_weight(&self, node: NodeId) -> u64 {
        let below: u64 = self
            .children(node)
            .iter()
            .map(|c| self.total_weight(*c))
            .fold(0, u64::saturating_add);
        self.total_weight(node).saturating_sub(below)
    }

    /// Weight of the samples in `node` and below.
    pub fn total_weight(&self, node: NodeId) -> u64 {
        self.total_weight[node.index()]
    }

    /// Number of samples whose leaf is `node`: its total less its callees'.
    pub fn self_count(&self, node: NodeId) -> u64 {
        let below: u64 = self
            .children(node)
            .iter()
            .map(|c| self.total_count(*c))
            .sum();
        self.total_count(node) - below
    }

    /// Number of samples in `node` and below.
    pub fn total_count(&self, node: NodeId) -> u64 {
        self.total_count.get(node.index())
    }

    /// The functions from the root's child down to `node`, outermost first.
    pub fn path(&self, node: NodeId) -> Vec<StrId> {
        let mut path = Vec::with_capacity(self.depth(node) as usize);
        let mut at = node;
        while let Some(p) = self.parent(at) {
            path.push(self.func(at));
            at = p;
        }
        path.reverse();
        path
    }

    /// Every node in depth-first order (parents before children, siblings by name).
    pub fn preorder(&self) -> Vec<NodeId> {
        let mut order = Vec::with_capacity(self.len());
        let mut todo = vec![NodeId::ROOT];
        while let Some(n) = todo.pop() {
            order.push(n);
            todo.extend(self.children(n).iter().rev());
        }
        order
    }
}
