//! A flame graph layout in columns, handed to JavaScript as typed arrays.

use prof_session::aggregate::{CallTree, FlameOptions, FlameOrder, NodeId, Rect};
use wasm_bindgen::prelude::*;

/// The function id given to rectangles that stand for several merged slivers.
pub const MERGED: u32 = u32::MAX;

/// Which part of a flame graph to lay out and how: the page's flame view settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Sibling order.
    pub order: FlameOrder,
    /// The visible part of the root's width, as fractions `[from, to)` (`(0, 1)`: all of it).
    pub window: (f64, f64),
}

impl View {
    /// The page's flame settings: the window `[from, to)` of the root's width, siblings
    /// heaviest first when `left_heavy`, else by name.
    pub fn of_page(from: f64, to: f64, left_heavy: bool) -> View {
        View {
            order: if left_heavy {
                FlameOrder::HeaviestFirst
            } else {
                FlameOrder::Name
            },
            window: (from, to),
        }
    }
}

impl Default for View {
    fn default() -> Self {
        View {
            order: FlameOrder::Name,
            window: (0.0, 1.0),
        }
    }
}

/// The rectangles of a flame graph, positions as fractions of the visible window's width.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct FlameLayout {
    x: Vec<f64>,
    width: Vec<f64>,
    weight: Vec<f64>,
    depth: Vec<u32>,
    func: Vec<u32>,
    node: Vec<u32>,
    merged_count: Vec<u32>,
    highlight: Vec<u8>,
    max_depth: u32,
}

impl FlameLayout {
    /// Lays out `tree` from `root` for a canvas `pixels` wide: rectangles narrower than a pixel
    /// are merged by the aggregation core, never dropped. `highlight`, one byte per function id,
    /// marks functions to highlight; a merged rectangle is highlighted when any function in the
    /// subtrees it stands for is.
    pub fn compute(
        tree: &CallTree,
        root: NodeId,
        pixels: f64,
        highlight: Option<&[u8]>,
        view: View,
    ) -> FlameLayout {
        let total = tree.total_weight(root);
        let mut layout = FlameLayout::default();
        if total == 0 {
            return layout;
        }
        let (from, to) = view.window;
        let (from, to) = (from.clamp(0.0, 1.0), to.clamp(0.0, 1.0));
        let (from, to) = if to > from { (from, to) } else { (0.0, 1.0) };
        let start = (from * total as f64).floor() as u64;
        let end = ((to * total as f64).ceil() as u64).max(start + 1);
        let visible = end - start;
        let min_width = ((visible as f64 / pixels.max(1.0)).ceil() as u64).max(1);
        let rects: Vec<Rect> = tree.flame_with(
            root,
            &FlameOptions {
                min_width,
                order: view.order,
                window: Some((start, end)),
            },
        );
        let scale = 1.0 / visible as f64;
        for r in &rects {
            let marked = highlight.is_some_and(|mask| {
                tree.rect_matches(r, min_width, |f| {
                    prof_session::aggregate::is_marked(mask, f)
                })
            });
            layout.highlight.push(u8::from(marked));
            // A merged rectangle zooms into the heaviest of the nodes it stands for.
            let node = match r.merged {
                0 | 1 => r.node,
                _ => tree.rect_nodes(r, min_width)[0],
            };
            layout.x.push((r.start as f64 - start as f64) * scale);
            layout.width.push(r.width as f64 * scale);
            layout.weight.push(r.width as f64);
            layout.depth.push(r.depth);
            layout.func.push(if r.merged > 1 {
                MERGED
            } else {
                tree.func(r.node).0
            });
            layout.node.push(node.0);
            layout.merged_count.push(r.merged);
            layout.max_depth = layout.max_depth.max(r.depth);
        }
        layout
    }
}

#[wasm_bindgen]
impl FlameLayout {
    /// The number of rectangles.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> usize {
        self.x.len()
    }

    /// The deepest row (the root is row 0).
    #[wasm_bindgen(getter, js_name = maxDepth)]
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// The function id of merged rectangles.
    #[wasm_bindgen(getter)]
    pub fn merged(&self) -> u32 {
        MERGED
    }

    /// Left edges, as fractions of the root's width.
    pub fn x(&self) -> Vec<f64> {
        self.x.clone()
    }

    /// Widths, as fractions of the root's width.
    pub fn width(&self) -> Vec<f64> {
        self.width.clone()
    }

    /// Widths in weight units (the total weight each rectangle stands for).
    pub fn weight(&self) -> Vec<f64> {
        self.weight.clone()
    }

    /// Rows above the root.
    pub fn depth(&self) -> Vec<u32> {
        self.depth.clone()
    }

    /// Function ids (string ids of their names); merged rectangles get the id `merged` returns.
    pub fn func(&self) -> Vec<u32> {
        self.func.clone()
    }

    /// Call tree node ids (for a merged rectangle, the heaviest node it stands for, which a
    /// click zooms into).
    pub fn node(&self) -> Vec<u32> {
        self.node.clone()
    }

    /// 1 for each rectangle to highlight (see [`FlameLayout::compute`]), else 0.
    pub fn highlight(&self) -> Vec<u8> {
        self.highlight.clone()
    }

    /// How many nodes each rectangle stands for.
    #[wasm_bindgen(js_name = mergedCount)]
    pub fn merged_count(&self) -> Vec<u32> {
        self.merged_count.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::aggregate::Filter;
    use prof_session::session::{FrameSpec, SessionBuilder};

    /// `main` calls `big` (weight 1000) and 500 tiny functions (weight 1 each).
    fn tree() -> (prof_session::session::Session, CallTree) {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let main = b.intern_frame(&FrameSpec::named("main"));
        let big = b.intern_frame(&FrameSpec::named("big"));
        let stack = b.intern_stack_path(&[main, big]).unwrap();
        b.push_sample(stack, t, 0, 1000);
        for i in 0..500 {
            let name = format!("tiny_{i}");
            let tiny = b.intern_frame(&FrameSpec::named(&name));
            let stack = b.intern_stack_path(&[main, tiny]).unwrap();
            b.push_sample(stack, t, 0, 1);
        }
        let session = b.finish();
        let tree = CallTree::new(&session, &Filter::all());
        (session, tree)
    }

    #[test]
    fn slivers_narrower_than_a_pixel_are_merged_and_keep_their_weight() {
        let (_, tree) = tree();
        let layout = FlameLayout::compute(&tree, tree.root(), 100.0, None, View::default());
        // root, main, big, and one rectangle for the 500 tiny calls.
        assert_eq!(layout.count(), 4);
        let merged: Vec<usize> = (0..layout.count())
            .filter(|&i| layout.func[i] == MERGED)
            .collect();
        assert_eq!(merged.len(), 1);
        let m = merged[0];
        assert_eq!(layout.merged_count[m], 500);
        assert_eq!(layout.weight[m], 500.0);
        let row_width: f64 = (0..layout.count())
            .filter(|&i| layout.depth[i] == 2)
            .map(|i| layout.width[i])
            .sum();
        assert!((row_width - 1.0).abs() < 1e-9, "{row_width}");
    }

    #[test]
    fn a_merged_rectangle_holding_a_match_is_highlighted_and_zooms_to_its_heaviest_node() {
        let (session, tree) = tree();
        let mut mask = vec![0u8; session.strings.len()];
        let tiny = session.strings.iter().position(|s| s == "tiny_7").unwrap();
        mask[tiny] = 1;
        let layout = FlameLayout::compute(&tree, tree.root(), 100.0, Some(&mask), View::default());
        let highlighted: Vec<usize> = (0..layout.count())
            .filter(|&i| layout.highlight[i] == 1)
            .collect();
        assert_eq!(highlighted.len(), 1);
        assert_eq!(layout.func[highlighted[0]], MERGED);
        let zoom_to = NodeId(layout.node[highlighted[0]]);
        assert!(tree.name(&session, zoom_to).starts_with("tiny_"));
        let plain = FlameLayout::compute(&tree, tree.root(), 100.0, None, View::default());
        assert!(plain.highlight.iter().all(|&h| h == 0));
    }

    #[test]
    fn a_window_shows_its_part_of_the_graph_across_the_canvas() {
        let (session, tree) = tree();
        // big is the first 1000 of 1500: the window [0.6, 1) shows its tail and the tiny ones.
        let view = View {
            window: (0.6, 1.0),
            ..View::default()
        };
        let layout = FlameLayout::compute(&tree, tree.root(), 1000.0, None, view);
        let big = (0..layout.count())
            .find(|&i| tree.name(&session, NodeId(layout.node[i])) == "big")
            .unwrap();
        assert!(layout.x[big] < 0.0, "big starts left of the window");
        // 600 weight units over 1000 pixels: the tiny calls (1 each) are wide enough now.
        let tiny = (0..layout.count())
            .filter(|&i| {
                tree.name(&session, NodeId(layout.node[i]))
                    .starts_with("tiny_")
            })
            .count();
        assert_eq!(tiny, 500);
    }

    #[test]
    fn a_wide_enough_canvas_shows_every_frame() {
        let (_, tree) = tree();
        let layout = FlameLayout::compute(&tree, tree.root(), 10_000.0, None, View::default());
        assert_eq!(layout.count(), 503);
        assert!(layout.func.iter().all(|&f| f != MERGED));
    }

    #[test]
    fn a_zoomed_layout_starts_at_its_root() {
        let (session, tree) = tree();
        let main = tree.children(tree.root())[0];
        assert_eq!(tree.name(&session, main), "main");
        let layout = FlameLayout::compute(&tree, main, 10_000.0, None, View::default());
        assert_eq!(layout.node[0], main.0);
        assert_eq!(
            (layout.x[0], layout.width[0], layout.depth[0]),
            (0.0, 1.0, 0)
        );
        assert_eq!(layout.max_depth(), 1);
    }
}
