//! The call tree table, the sandwich and the function table, as the page asks for them. Every
//! number is the core's (`CallTree::inverted`, `callers`, `callees`, `function_table`) and every
//! text is formatted by its one formatter.

use crate::json_out::{JsonOut, ToJson};
use crate::layout::{FlameLayout, View};
use crate::profile::Profile;
use crate::view::{module_name, Counts, FunctionModules, TopEntry, Weights};
use prof_session::aggregate::{format_location, CallTree, Column, NodeId, TableOrder};
use prof_session::session::{Session, StrId};
use wasm_bindgen::prelude::*;

/// One row of the call tree table, or one frame of a sandwich, with its texts.
struct NodeRow<'a> {
    node: u32,
    func: u32,
    name: &'a str,
    location: Option<String>,
    /// The module of the node's frame (`view::module_name`), when known.
    module: Option<&'a str>,
    weights: Weights,
    /// Its samples, self and total (the inverted tree's self as its self weight is chosen).
    counts: Counts,
    /// Grouped by scope, a scope frame's exact calls (`1,234`); absent for every other row.
    calls: Option<String>,
}

impl ToJson for NodeRow<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("node").u64(u64::from(self.node));
        w.key("func").u64(u64::from(self.func));
        w.key("name").string(self.name);
        w.key("location").opt_string(self.location.as_deref());
        w.key("module").opt_string(self.module);
        self.weights.write_keys(w);
        self.counts.write_keys(w);
        if let Some(calls) = &self.calls {
            w.key("calls").string(calls);
        }
        w.end_object();
    }
}

impl<'a> NodeRow<'a> {
    /// `node` of `tree` with `self_weight` and `self_count` (which the caller chooses: an
    /// inverted tree shows other self weights than it stores) and percentages of `whole`.
    fn of(
        session: &'a Session,
        tree: &CallTree,
        node: NodeId,
        (self_weight, self_count): (u64, u64),
        whole: u64,
    ) -> Self {
        let total = tree.total_weight(node);
        let frame = tree.frame(node).map(|id| session.frame(id));
        let location = frame.and_then(|f| format_location(session, f));
        NodeRow {
            node: node.0,
            func: tree.func(node).0,
            name: tree.name(session, node),
            location,
            module: frame.and_then(|f| module_name(session, f)),
            weights: Weights::of(&session.meta.sample_type, self_weight, total, whole),
            counts: Counts {
                self_count,
                total_count: tree.total_count(node),
            },
            calls: None,
        }
    }
}

/// The call tree as table rows: every node that carries weight in display order (depth first,
/// children heaviest first), with its depth and the size of its subtree, so that the page can
/// expand and collapse without asking; texts are asked for only for the rows on screen.
#[wasm_bindgen]
#[derive(Debug)]
pub struct TreeTable {
    /// The inverted tree, when the table is inverted; else the profile's own tree is read.
    inverted: Option<CallTree>,
    order: Vec<u32>,
    depth: Vec<u32>,
    size: Vec<u32>,
}

impl TreeTable {
    fn tree<'a>(&'a self, profile: &'a Profile) -> &'a CallTree {
        self.inverted.as_ref().unwrap_or(&profile.tree)
    }

    fn node(&self, profile: &Profile, node: u32) -> Result<NodeId, JsError> {
        if (node as usize) < self.tree(profile).len() {
            Ok(NodeId(node))
        } else {
            Err(JsError::new(&format!("no call tree node {node}")))
        }
    }
}

#[wasm_bindgen]
impl TreeTable {
    /// The node of each row of the fully expanded table, in order.
    pub fn order(&self) -> Vec<u32> {
        self.order.clone()
    }

    /// Each row's depth: 1 for the outermost functions (the roots' children).
    pub fn depth(&self) -> Vec<u32> {
        self.depth.clone()
    }

    /// Each row's subtree in rows, itself included: collapsing a row skips that many.
    pub fn size(&self) -> Vec<u32> {
        self.size.clone()
    }

    /// Whether this is the inverted tree (roots are the functions with self weight).
    #[wasm_bindgen(getter)]
    pub fn inverted(&self) -> bool {
        self.inverted.is_some()
    }

    /// The texts of the rows for `nodes`, as JSON: name, place, self and total with shares.
    #[wasm_bindgen(js_name = rowsJson)]
    pub fn rows_json(&self, profile: &Profile, nodes: Vec<u32>) -> Result<String, JsError> {
        let tree = self.tree(profile);
        let whole = tree.total_weight(tree.root());
        let mut rows = Vec::with_capacity(nodes.len());
        for node in nodes {
            let node = self.node(profile, node)?;
            // The inverted tree's roots are the functions that spend the time themselves: a
            // root's self is its total, and no other node has any.
            let own = if self.inverted.is_none() {
                (tree.self_weight(node), tree.self_count(node))
            } else if tree.parent(node) == Some(tree.root()) {
                (tree.inverted_self_weight(node), tree.total_count(node))
            } else {
                (tree.inverted_self_weight(node), 0)
            };
            let mut row = NodeRow::of(&profile.session, tree, node, own, whole);
            // The inverted tree's paths run from the leaves: not paths of scopes.
            if let (None, Some(calls)) = (&self.inverted, &profile.scope_calls) {
                row.calls = calls
                    .of_node(tree, node)
                    .map(prof_session::aggregate::thousands);
            }
            rows.push(row);
        }
        Ok(rows.to_json())
    }

    /// The function names from the outermost row down to `node`, as a JSON array.
    #[wasm_bindgen(js_name = pathJson)]
    pub fn path_json(&self, profile: &Profile, node: u32) -> Result<String, JsError> {
        let node = self.node(profile, node)?;
        let path = self.tree(profile).path(node);
        let names = path.into_iter().map(|f| profile.session.str(f));
        let mut w = JsonOut::new();
        w.strings(names);
        Ok(w.finish())
    }

    /// The node reached by following function names (a JSON array) from the root, as far as
    /// they lead (0, the root, when the first is not there).
    #[wasm_bindgen(js_name = nodeByPath)]
    pub fn node_by_path(&self, profile: &Profile, names_json: &str) -> Result<u32, JsError> {
        let names = crate::profile::names(names_json)?;
        let tree = self.tree(profile);
        let mut node = tree.root();
        for name in &names {
            match tree
                .children(node)
                .iter()
                .find(|&&c| tree.name(&profile.session, c) == name)
            {
                Some(&child) => node = child,
                None => break,
            }
        }
        Ok(node.0)
    }
}

/// One function's sandwich: who calls it (an inverted tree, the function at its base) and what
/// it calls, each merged over all its call sites.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Sandwich {
    func: StrId,
    callers: CallTree,
    callees: CallTree,
}

impl Sandwich {
    fn side(&self, callers: bool) -> &CallTree {
        if callers {
            &self.callers
        } else {
            &self.callees
        }
    }
}

#[wasm_bindgen]
impl Sandwich {
    /// The function's name, self and total (with shares of everything shown), as JSON: the
    /// numbers `prof report` prints for it.
    #[wasm_bindgen(js_name = summaryJson)]
    pub fn summary_json(&self, profile: &Profile) -> String {
        let tree = &profile.tree;
        let whole = tree.total_weight(tree.root());
        let row = tree
            .functions(&profile.session)
            .into_iter()
            .find(|r| r.func == self.func);
        match row {
            Some(row) => TopEntry::of(&profile.session, &row, whole).to_json(),
            None => "null".to_owned(),
        }
    }

    /// The flame graph of the callers (`callers`) or the callees, laid out from the function
    /// itself (row 0) for a canvas `pixels` wide, showing the part `[from, to)` of its width
    /// (fractions: a wheel zoom or a pan, as in the flame graph), its frames of the functions
    /// `highlight` marks (one byte per function id: a search's matches) highlighted.
    pub fn layout(
        &self,
        callers: bool,
        pixels: f64,
        from: f64,
        to: f64,
        highlight: Option<Vec<u8>>,
    ) -> FlameLayout {
        let tree = self.side(callers);
        let view = View {
            window: (from, to),
            ..View::default()
        };
        match tree.children(tree.root()).first() {
            Some(&func) => FlameLayout::compute(tree, func, pixels, highlight.as_deref(), view),
            None => FlameLayout::default(),
        }
    }

    /// A frame of one side, as JSON: its function, place, self and total with shares of
    /// everything shown.
    #[wasm_bindgen(js_name = nodeJson)]
    pub fn node_json(
        &self,
        profile: &Profile,
        callers: bool,
        node: u32,
    ) -> Result<String, JsError> {
        let tree = self.side(callers);
        if node as usize >= tree.len() {
            return Err(JsError::new(&format!("no sandwich node {node}")));
        }
        let node = NodeId(node);
        let whole = profile.tree.total_weight(profile.tree.root());
        // The callers side is inverted: its stored self weights are at the outermost frames.
        let own = if callers {
            (0, 0)
        } else {
            (tree.self_weight(node), tree.self_count(node))
        };
        Ok(NodeRow::of(&profile.session, tree, node, own, whole).to_json())
    }

    /// The stack of a frame of one side, outermost first, as a JSON array of function names:
    /// from the function down to a callee, or from a caller down to the function.
    #[wasm_bindgen(js_name = stackJson)]
    pub fn stack_json(
        &self,
        profile: &Profile,
        callers: bool,
        node: u32,
    ) -> Result<String, JsError> {
        let tree = self.side(callers);
        if node as usize >= tree.len() {
            return Err(JsError::new(&format!("no sandwich node {node}")));
        }
        let mut path = tree.path(NodeId(node));
        // The callers' tree grows from the function outwards: its paths run innermost first.
        if callers {
            path.reverse();
        }
        let mut w = JsonOut::new();
        w.strings(path.into_iter().map(|f| profile.session.str(f)));
        Ok(w.finish())
    }
}

/// The function table's answer: the rows, and what they are out of.
struct FunctionTable<'a> {
    rows: Vec<TopEntry<'a>>,
    /// `12 of 500 functions`, or `500 functions`.
    summary: String,
    /// Whether the session counted calls (`prof record --calls`): the table has a Calls column.
    with_calls: bool,
}

impl ToJson for FunctionTable<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("rows").array(&self.rows);
        w.key("summary").string(&self.summary);
        w.key("withCalls").bool(self.with_calls);
        w.end_object();
    }
}

#[wasm_bindgen]
impl Profile {
    /// The call tree table of the samples shown, inverted or not.
    #[wasm_bindgen(js_name = treeTable)]
    pub fn tree_table(&self, inverted: bool) -> TreeTable {
        let inverted = inverted.then(|| self.tree.inverted(&self.session));
        let tree = inverted.as_ref().unwrap_or(&self.tree);
        let order: Vec<NodeId> = tree.preorder_by_weight(&self.session);
        let mut row_of = vec![u32::MAX; tree.len()];
        for (i, node) in order.iter().enumerate() {
            row_of[node.index()] = i as u32;
        }
        let mut size = vec![0u32; order.len()];
        for i in (0..order.len()).rev() {
            size[i] += 1;
            if let Some(parent) = tree.parent(order[i]) {
                let p = row_of[parent.index()];
                if p != u32::MAX {
                    size[p as usize] += size[i];
                }
            }
        }
        // Parents come before their children in the order: a row's depth is its parent's and
        // one (the tree stores no depth).
        let mut depth = vec![0u32; order.len()];
        for (i, &node) in order.iter().enumerate() {
            depth[i] = match tree.parent(node).map(|p| row_of[p.index()]) {
                Some(p) if p != u32::MAX => depth[p as usize] + 1,
                _ => tree.depth(node),
            };
        }
        TreeTable {
            depth,
            order: order.iter().map(|n| n.0).collect(),
            size,
            inverted,
        }
    }

    /// The sandwich of the function named `name`; `undefined` when no sample shown has it.
    pub fn sandwich(&self, name: &str) -> Option<Sandwich> {
        let func = self.session.strings.iter().position(|s| s == name)?;
        let func = StrId(func as u32);
        let callees = self.tree.callees(&self.session, func);
        if callees.total_weight(callees.root()) == 0 && callees.total_count(callees.root()) == 0 {
            return None;
        }
        Some(Sandwich {
            func,
            callers: self.tree.callers(&self.session, func),
            callees,
        })
    }

    /// Every function shown whose name contains `filter` (any case), or matches it as a
    /// regular expression when `regex`, sorted by `column` (`name`, `self`, `total`) either
    /// way, as JSON `{rows, summary}`.
    #[wasm_bindgen(js_name = functionTableJson)]
    pub fn function_table_json(
        &self,
        column: &str,
        descending: bool,
        filter: &str,
        regex: bool,
    ) -> Result<String, JsError> {
        let column = match column {
            "name" => Column::Name,
            "self" => Column::SelfWeight,
            "total" => Column::Total,
            other => return Err(JsError::new(&format!("no column {other:?}"))),
        };
        let order = TableOrder { column, descending };
        let tree = &self.tree;
        let rows = if regex {
            let regex = regex_lite::Regex::new(filter)
                .map_err(|e| JsError::new(&format!("invalid regex: {e}")))?;
            tree.function_table(&self.session, order, |name| regex.is_match(name))
        } else {
            tree.function_table(&self.session, order, |name| {
                prof_session::aggregate::name_contains(name, filter)
            })
        };
        let whole = tree.total_weight(tree.root());
        let all = if filter.is_empty() {
            rows.len()
        } else {
            tree.functions(&self.session).len()
        };
        let count = |n: usize| prof_session::aggregate::thousands(n as u64);
        let noun = if all == 1 { "function" } else { "functions" };
        let summary = if rows.len() == all {
            format!("{} {noun}", count(all))
        } else {
            format!("{} of {} {noun}", count(rows.len()), count(all))
        };
        let modules = FunctionModules::of(&self.session);
        let counted = prof_session::aggregate::counted_by_name(&self.session);
        let entries = rows
            .iter()
            .map(|row| TopEntry {
                module: modules.get(row.func),
                calls: counted
                    .get(row.name.as_str())
                    .map(|&c| prof_session::aggregate::thousands(c)),
                ..TopEntry::of(&self.session, row, whole)
            })
            .collect();
        Ok(FunctionTable {
            rows: entries,
            summary,
            with_calls: !counted.is_empty(),
        }
        .to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::SessionBuilder;

    fn profile(lines: &[(&str, u64)]) -> Profile {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        for (i, (stack, weight)) in lines.iter().enumerate() {
            let names: Vec<&str> = stack.split(';').collect();
            b.push_named(&names, t, i as u64, *weight);
        }
        Profile::of(b.finish())
    }

    fn example() -> Profile {
        profile(&[
            ("main;parse;lex", 30),
            ("main;eval;lex", 5),
            ("main;eval", 40),
            ("worker;lex", 15),
        ])
    }

    /// Each row's subtree size is the run of rows after it that are deeper.
    fn check_sizes(table: &TreeTable) {
        for i in 0..table.order.len() {
            let end = (i + 1..table.order.len())
                .find(|&j| table.depth[j] <= table.depth[i])
                .unwrap_or(table.order.len());
            assert_eq!(table.size[i] as usize, end - i, "row {i}");
        }
    }

    fn names(p: &Profile, table: &TreeTable) -> Vec<String> {
        let tree = table.tree(p);
        table
            .order
            .iter()
            .map(|&n| {
                format!(
                    "{}{}",
                    " ".repeat(tree.depth(NodeId(n)) as usize - 1),
                    tree.name(&p.session, NodeId(n))
                )
            })
            .collect()
    }

    #[test]
    fn the_tree_table_lists_rows_heaviest_first_with_subtree_sizes() {
        let p = example();
        let table = p.tree_table(false);
        assert_eq!(
            names(&p, &table),
            ["main", " eval", "  lex", " parse", "  lex", "worker", " lex"]
        );
        assert_eq!(table.size, [5, 2, 1, 2, 1, 2, 1]);
        check_sizes(&table);
        let rows: serde_json::Value =
            serde_json::from_str(&table.rows_json(&p, vec![table.order[1]]).unwrap()).unwrap();
        assert_eq!(rows[0]["name"], "eval");
        assert_eq!(rows[0]["totalText"], "45 ns");
        assert_eq!(rows[0]["selfPct"], "44.4%");
    }

    #[test]
    fn the_inverted_table_shows_self_weight_at_its_roots_only() {
        let p = example();
        let table = p.tree_table(true);
        assert!(table.inverted());
        assert_eq!(
            names(&p, &table),
            ["lex", " parse", "  main", " worker", " eval", "  main", "eval", " main"]
        );
        check_sizes(&table);
        let nodes = vec![table.order[0], table.order[1]];
        let rows: serde_json::Value =
            serde_json::from_str(&table.rows_json(&p, nodes).unwrap()).unwrap();
        assert_eq!(rows[0]["selfText"], "50 ns");
        assert_eq!(rows[0]["totalText"], "50 ns");
        assert_eq!(rows[1]["selfText"], "0 ns");
        assert_eq!(rows[1]["totalText"], "30 ns");
        let path = table.path_json(&p, table.order[2]).unwrap();
        assert_eq!(path, r#"["lex","parse","main"]"#);
        let node = table.node_by_path(&p, r#"["lex","parse","main"]"#).unwrap();
        assert_eq!(node, table.order[2]);
    }

    /// Each sample here is one sample of its weight: the counts are the samples, self and
    /// total, the inverted tree's as its self weights are (all at its roots).
    #[test]
    fn tree_rows_count_their_samples_upright_and_inverted() {
        let p = profile(&[
            ("main;parse;lex", 30),
            ("main;parse;lex", 30),
            ("main;eval", 40),
        ]);
        let rows = |table: &TreeTable, nodes: Vec<u32>| -> serde_json::Value {
            serde_json::from_str(&table.rows_json(&p, nodes).unwrap()).unwrap()
        };
        let upright = p.tree_table(false);
        let all = rows(&upright, upright.order.clone());
        let counts: Vec<(&str, &str, &str)> = all
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap();
                (text("name"), text("totalCount"), text("selfCount"))
            })
            .collect();
        assert_eq!(
            counts,
            [
                ("main", "3", "0"),
                ("parse", "2", "0"),
                ("lex", "2", "2"),
                ("eval", "1", "1")
            ]
        );
        let inverted = p.tree_table(true);
        let roots = rows(&inverted, vec![inverted.order[0], inverted.order[1]]);
        assert_eq!(roots[0]["name"], "lex");
        assert_eq!(roots[0]["selfCount"], "2");
        assert_eq!(roots[0]["totalCount"], "2");
        assert_eq!(roots[1]["name"], "parse");
        assert_eq!(roots[1]["selfCount"], "0");
        assert_eq!(roots[1]["totalCount"], "2");
    }

    /// A sandwich frame's stack runs outermost first on both sides: from the function down to
    /// a callee, from a caller down to the function.
    #[test]
    fn sandwich_stacks_run_outermost_first_on_both_sides() {
        let p = example();
        let sandwich = p.sandwich("parse").unwrap();
        let stack = |callers: bool, name: &str| {
            let tree = sandwich.side(callers);
            let node = (1..tree.len() as u32)
                .find(|&n| tree.name(&p.session, NodeId(n)) == name)
                .unwrap();
            sandwich.stack_json(&p, callers, node).unwrap()
        };
        assert_eq!(stack(false, "lex"), r#"["parse","lex"]"#);
        assert_eq!(stack(true, "main"), r#"["main","parse"]"#);
    }

    /// The table's module of a function is its frames' file name; none when unknown.
    #[test]
    fn the_function_table_names_each_functions_module() {
        use prof_session::session::FrameSpec;
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let main = b.intern_frame(&FrameSpec::named("main"));
        let bare = b.intern_frame(&FrameSpec {
            module: Some("/usr/lib/liblzma.so.5"),
            ..FrameSpec::named("liblzma.so.5+0x4290")
        });
        let stack = b.intern_stack_path(&[main, bare]).unwrap();
        b.push_sample(stack, t, 0, 10);
        let p = Profile::of(b.finish());
        let table: serde_json::Value =
            serde_json::from_str(&p.function_table_json("name", false, "", false).unwrap())
                .unwrap();
        let rows = table["rows"].as_array().unwrap();
        assert_eq!(rows[0]["name"], "liblzma.so.5+0x4290");
        assert_eq!(rows[0]["module"], "liblzma.so.5");
        assert_eq!(rows[0]["selfCount"], "1");
        assert_eq!(rows[1]["name"], "main");
        assert_eq!(rows[1]["module"], serde_json::Value::Null);
        assert_eq!(rows[1]["totalCount"], "1");
    }

    #[test]
    fn grouped_by_scope_the_tree_rows_of_scope_frames_carry_their_calls() {
        use prof_session::session::{SiteKind, Span};
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let request = b.intern_site("request", None, None, SiteKind::Scope);
        let parse = b.intern_site("parse", None, None, SiteKind::Scope);
        let span = |b: &mut SessionBuilder, site, start_ns, parent| {
            b.push_span(Span {
                site,
                thread: t,
                start_ns,
                end_ns: start_ns + 100,
                parent,
                fields: Vec::new(),
            })
        };
        let outer = span(&mut b, request, 0, None);
        let inner = span(&mut b, parse, 10, Some(outer));
        span(&mut b, parse, 50, Some(outer));
        b.push_named(&["main", "lex"], t, 20, 7);
        b.set_last_sample_context(Some(inner), None);
        b.push_named(&["main"], t, 500, 3);
        let mut p = Profile::of(b.finish());
        p.set_view(r#"{"groupBy": "scope"}"#).unwrap();
        let table = p.tree_table(false);
        assert_eq!(
            names(&p, &table),
            [
                "scope:request",
                " scope:parse",
                "  main",
                "   lex",
                "scope:(none)",
                " main"
            ]
        );
        let rows: serde_json::Value =
            serde_json::from_str(&table.rows_json(&p, table.order.clone()).unwrap()).unwrap();
        let calls: Vec<&serde_json::Value> = (0..6).map(|i| &rows[i]["calls"]).collect();
        let json = |s: &str| serde_json::Value::String(s.to_owned());
        let null = serde_json::Value::Null;
        assert_eq!(calls, [&json("1"), &json("2"), &null, &null, &null, &null]);
        // Not grouped, or grouped by task: no calls.
        p.set_view(r#"{}"#).unwrap();
        let table = p.tree_table(false);
        let rows = table.rows_json(&p, table.order.clone()).unwrap();
        assert!(!rows.contains("calls"), "{rows}");
    }

    #[test]
    fn the_task_wait_type_shows_the_waits_grouped_or_not_and_back() {
        use prof_session::session::{FrameSpec, Poll};
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let f = |b: &mut SessionBuilder, n: &str| b.intern_frame(&FrameSpec::named(n));
        let (task, nap, sleep) = (f(&mut b, "task"), f(&mut b, "nap"), f(&mut b, "sleep"));
        let at_sleep = b.intern_stack_path(&[task, nap, sleep]).unwrap();
        let fetch = b.intern_task(1, "fetch");
        for (start_ns, end_ns) in [(0, 10), (40, 50), (90, 100)] {
            b.push_poll(Poll {
                task: fetch,
                thread: t,
                start_ns,
                end_ns,
                waited_at: (end_ns < 100).then_some(at_sleep),
            });
        }
        b.push_named(&["main", "lex"], t, 5, 7);
        b.set_last_sample_context(None, Some(fetch));
        let mut p = Profile::of(b.finish());
        let types: serde_json::Value = serde_json::from_str(&p.sample_types_json()).unwrap();
        assert_eq!(types[1]["name"], "task_wait", "{types}");
        let shown = |p: &Profile| {
            let table = p.tree_table(false);
            let rows: serde_json::Value =
                serde_json::from_str(&table.rows_json(p, table.order.clone()).unwrap()).unwrap();
            let names = names(p, &table);
            (names, rows[0]["totalText"].as_str().unwrap().to_owned())
        };
        // Waits of 30 and 40 ns at `sleep` under `nap`.
        p.set_view(r#"{"type": "task_wait"}"#).unwrap();
        assert_eq!(
            shown(&p),
            (
                vec!["task".into(), " nap".into(), "  sleep".into()],
                "70 ns".into()
            )
        );
        p.set_view(r#"{"type": "task_wait", "groupBy": "task"}"#)
            .unwrap();
        assert_eq!(shown(&p).0[..2], ["task:fetch", " task"]);
        // Back to the samples, still grouped, then not.
        p.set_view(r#"{"groupBy": "task"}"#).unwrap();
        assert_eq!(shown(&p).0, ["task:fetch", " main", "  lex"]);
        p.set_view(r#"{}"#).unwrap();
        assert_eq!(
            shown(&p),
            (vec!["main".into(), " lex".into()], "7 ns".into())
        );
        let types: serde_json::Value = serde_json::from_str(&p.sample_types_json()).unwrap();
        assert_eq!(types.as_array().unwrap().len(), 2, "{types}");
    }

    #[test]
    fn a_sandwich_has_the_functions_numbers_and_none_for_an_absent_function() {
        let p = example();
        assert!(p.sandwich("nowhere").is_none());
        let sandwich = p.sandwich("eval").expect("eval has samples");
        let summary: serde_json::Value = serde_json::from_str(&sandwich.summary_json(&p)).unwrap();
        assert_eq!(summary["totalText"], "45 ns");
        assert_eq!(summary["selfText"], "40 ns");
        let callers = sandwich.layout(true, 1000.0, 0.0, 1.0, None);
        // eval, then main.
        assert_eq!(callers.count(), 2);
        let callees = sandwich.layout(false, 1000.0, 0.0, 1.0, None);
        // eval, then lex.
        assert_eq!(callees.count(), 2);
        assert_eq!(callees.highlight(), [0, 0]);
        // A search for lex marks its frame.
        let mask = p.search("^lex$").unwrap().mask();
        let marked = sandwich.layout(false, 1000.0, 0.0, 1.0, Some(mask));
        assert_eq!(marked.highlight(), [0, 1]);
        // The right half of the callees: eval starts about a view's width left of it and ends
        // at its right edge.
        let half = sandwich.layout(false, 1000.0, 0.5, 1.0, None);
        let (x, width) = (half.x()[0], half.width()[0]);
        assert!(x < -0.9 && (x + width - 1.0).abs() < 1e-9, "{x} {width}");
    }

    #[test]
    fn the_function_table_counts_what_the_filter_keeps() {
        let p = example();
        let all: serde_json::Value =
            serde_json::from_str(&p.function_table_json("total", true, "", false).unwrap())
                .unwrap();
        assert_eq!(all["summary"], "5 functions");
        assert_eq!(all["rows"][0]["name"], "main");
        let some: serde_json::Value =
            serde_json::from_str(&p.function_table_json("name", false, "E", false).unwrap())
                .unwrap();
        assert_eq!(some["summary"], "4 of 5 functions");
        let names: Vec<&str> = some["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["eval", "lex", "parse", "worker"]);
        let regex: serde_json::Value =
            serde_json::from_str(&p.function_table_json("self", true, "^.a", true).unwrap())
                .unwrap();
        assert_eq!(regex["summary"], "2 of 5 functions");
    }
}
