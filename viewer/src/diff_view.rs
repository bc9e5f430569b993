//! [`Diff`]: a profile compared with another (`prof serve --diff BASE NEW`, the Diff view): the
//! differential flame graph in the new profile's shape, coloured as `prof convert --to svg
//! --diff` colours it, and the table of `prof diff`.
//!
//! Both sides are whole profiles, as `prof diff` compares them: the page's thread set, time
//! range and transforms select samples within one profile and do not apply here (threads differ
//! between runs, and so do times).

use crate::json_out::{JsonOut, ToJson};
use crate::layout::{FlameLayout, View};
use crate::profile::Profile;
use prof_session::aggregate::{
    check_comparable, format_percent, format_share_change, format_weight, format_weight_change,
    thousands, CallTree, DiffColumn, DiffOptions, DiffSide, DiffTable, DiffTree, Filter, NodeId,
    SortBy,
};
use prof_session::session::SampleType;
use wasm_bindgen::prelude::*;

/// A new profile against a base: the merged call trees and the new profile's own tree, whose
/// shape the flame graph draws.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Diff {
    /// Both sides, the base scaled to the new total: what the colours come from.
    normalized: DiffTree,
    /// Both sides as recorded: what the tooltips say.
    raw: DiffTree,
    /// The new profile's whole call tree.
    new_tree: CallTree,
    /// For each node of `new_tree`, its node in the diff trees.
    diff_node: Vec<Option<usize>>,
    /// The largest change of a frame's self weight, in `normalized`.
    max_change: u128,
    base_label: String,
    new_label: String,
    base_type: SampleType,
    new_type: SampleType,
}

/// One side of a frame in the tooltip.
struct SideTexts {
    label: &'static str,
    total_text: String,
    total_pct: String,
    self_text: String,
    self_pct: String,
}

/// What the tooltip says about one frame: both sides and the change.
struct FrameTexts<'a> {
    name: &'a str,
    sides: [SideTexts; 3],
    /// -1, 0 or 1: the sign of the change of the frame's self weight (what its colour shows).
    change: i8,
}

/// One row of the diff table.
struct TableRow<'a> {
    name: &'a str,
    base: String,
    new: String,
    delta: String,
    /// -1, 0 or 1: whether the function's share shrank, stayed or grew.
    change: i8,
}

/// The diff table as the page shows it.
struct TableTexts<'a> {
    summary: [String; 3],
    /// How many functions the table has; `rows` holds at most the limit asked for.
    count: usize,
    /// What the page says when `rows` are not all of them (else empty).
    cut_text: String,
    rows: Vec<TableRow<'a>>,
}

impl ToJson for SideTexts {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("label").string(self.label);
        w.key("totalText").string(&self.total_text);
        w.key("totalPct").string(&self.total_pct);
        w.key("selfText").string(&self.self_text);
        w.key("selfPct").string(&self.self_pct);
        w.end_object();
    }
}

impl ToJson for FrameTexts<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("name").string(self.name);
        w.key("sides").array(&self.sides);
        w.key("change").i64(i64::from(self.change));
        w.end_object();
    }
}

impl ToJson for TableRow<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("name").string(self.name);
        w.key("base").string(&self.base);
        w.key("new").string(&self.new);
        w.key("delta").string(&self.delta);
        w.key("change").i64(i64::from(self.change));
        w.end_object();
    }
}

impl ToJson for TableTexts<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("summary")
            .strings(self.summary.iter().map(String::as_str));
        w.key("count").u64(self.count as u64);
        w.key("cutText").string(&self.cut_text);
        w.key("rows").array(&self.rows);
        w.end_object();
    }
}

fn sign(change: f64) -> i8 {
    if change > 0.0 {
        1
    } else if change < 0.0 {
        -1
    } else {
        0
    }
}

#[wasm_bindgen]
impl Profile {
    /// This profile (the new one, labelled `new_label`) against `base` (labelled `base_label`),
    /// both whole. An error, in one line, when their weights are in different units.
    #[wasm_bindgen(js_name = diffAgainst)]
    pub fn diff_against(
        &self,
        base: &Profile,
        base_label: &str,
        new_label: &str,
    ) -> Result<Diff, JsError> {
        let sides = (
            DiffSide {
                label: base_label,
                session: &base.session,
            },
            DiffSide {
                label: new_label,
                session: &self.session,
            },
        );
        check_comparable(sides.0, sides.1).map_err(|e| JsError::new(&e.to_string()))?;
        let base_tree = CallTree::new(&base.session, &Filter::all());
        let new_tree = CallTree::new(&self.session, &Filter::all());
        let raw = DiffTree::new((&base.session, &base_tree), (&self.session, &new_tree));
        let normalized = raw.clone().normalized();
        let diff_node = raw.nodes_of(&self.session, &new_tree);
        Ok(Diff {
            max_change: normalized.max_self_change(),
            normalized,
            raw,
            new_tree,
            diff_node,
            base_label: base_label.to_owned(),
            new_label: new_label.to_owned(),
            base_type: base.session.meta.sample_type.clone(),
            new_type: self.session.meta.sample_type.clone(),
        })
    }
}

#[wasm_bindgen]
impl Profile {
    /// Makes this profile (a diff's base) weigh its samples in `new`'s shown sample type when it
    /// has a type of that name, so both sides of a diff measure the same thing; otherwise it
    /// keeps its own, and [`Profile::diff_against`] says whether the two compare. Only the
    /// session changes: a base serves diffs alone, never a view of its own.
    #[wasm_bindgen(js_name = followSampleType)]
    pub fn follow_sample_type(&mut self, new: &Profile) {
        let name = &new.session.meta.sample_type.name;
        if self.session.sample_types().iter().any(|t| &t.name == name) {
            // The name is one of its types: selecting it cannot fail.
            let _ = self.session.select_sample_type(name);
        }
    }
}

impl Diff {
    fn node(&self, node: u32) -> Result<NodeId, JsError> {
        let id = NodeId(node);
        if id.index() < self.new_tree.len() {
            Ok(id)
        } else {
            Err(JsError::new(&format!("no call tree node {node}")))
        }
    }

    /// The colour of `new_tree`'s node `node`, as `[r, g, b]`.
    fn color(&self, node: u32) -> [u8; 3] {
        match self.diff_node.get(node as usize).copied().flatten() {
            Some(d) => {
                prof_session::aggregate::diff_color(self.normalized.self_change(d), self.max_change)
            }
            None => [250, 250, 250],
        }
    }
}

#[wasm_bindgen]
impl Diff {
    /// The differential flame graph from the new profile's node `root`, for a canvas `pixels`
    /// wide, showing the part `[from, to)` of the root's width (fractions), siblings heaviest
    /// first when `left_heavy` (as [`Profile::layout`]), highlighting what `new` (the profile
    /// this diff was made from) highlights.
    pub fn layout(
        &self,
        new: &Profile,
        root: u32,
        pixels: f64,
        from: f64,
        to: f64,
        left_heavy: bool,
    ) -> Result<FlameLayout, JsError> {
        let view = View::of_page(from, to, left_heavy);
        Ok(FlameLayout::compute(
            &self.new_tree,
            self.node(root)?,
            pixels,
            new.highlight.as_deref(),
            view,
        ))
    }

    /// The fill of each frame of a layout of this diff, given its `nodes` (the layout's `node`
    /// column): three bytes, red, green and blue, per frame.
    pub fn colors(&self, nodes: &[u32]) -> Vec<u8> {
        nodes.iter().flat_map(|&n| self.color(n)).collect()
    }

    /// What the flame graph's title says: `b.json against a.json: red grew, blue shrank...`.
    #[wasm_bindgen(js_name = titleText)]
    pub fn title_text(&self) -> String {
        format!(
            "{} against {}: red grew, blue shrank (as shares of each profile's total); \
             widths from {}",
            self.new_label, self.base_label, self.new_label
        )
    }

    /// The tooltip of the new profile's node `node`: its total and self weight in the base, in
    /// the new profile and the change, each also as a share of its profile's total, as JSON.
    #[wasm_bindgen(js_name = nodeJson)]
    pub fn node_json(&self, new: &Profile, node: u32) -> Result<String, JsError> {
        let id = self.node(node)?;
        let name = if id == NodeId::ROOT {
            "all"
        } else {
            self.new_tree.name(&new.session, id)
        };
        let (base_self, new_self, base_total, new_total) =
            match self.diff_node.get(node as usize).copied().flatten() {
                Some(d) => {
                    let (bs, ns) = self.raw.self_weight(d);
                    let (bt, nt) = self.raw.total_weight(d);
                    (bs, ns, bt, nt)
                }
                None => (0, 0, 0, 0),
            };
        let (whole_base, whole_new) = self.raw.total_weight(0);
        let side = |label, ty: &SampleType, s: u64, t: u64, whole: u64| SideTexts {
            label,
            total_text: format_weight(ty, t),
            total_pct: format_percent(t, whole),
            self_text: format_weight(ty, s),
            self_pct: format_percent(s, whole),
        };
        let texts = FrameTexts {
            name,
            sides: [
                side("Base", &self.base_type, base_self, base_total, whole_base),
                side("New", &self.new_type, new_self, new_total, whole_new),
                SideTexts {
                    label: "Change",
                    total_text: format_weight_change(&self.new_type, base_total, new_total),
                    total_pct: format_share_change(base_total, whole_base, new_total, whole_new),
                    self_text: format_weight_change(&self.new_type, base_self, new_self),
                    self_pct: format_share_change(base_self, whole_base, new_self, whole_new),
                },
            ],
            change: self.color_sign(node),
        };
        Ok(texts.to_json())
    }

    /// A merged block's weight in the new profile and its share of the new total, as JSON
    /// `{weight, share}`.
    #[wasm_bindgen(js_name = weightJson)]
    pub fn weight_json(&self, weight: f64) -> String {
        let whole = self.new_tree.total_weight(self.new_tree.root());
        let weight = weight as u64;
        let mut w = JsonOut::new();
        w.begin_object();
        w.key("weight")
            .string(&format_weight(&self.new_type, weight));
        w.key("share").string(&format_percent(weight, whole));
        w.end_object();
        w.finish()
    }

    /// The function names from the root down to the new profile's node `node` (root left out),
    /// as JSON: the zoom path of a frame.
    #[wasm_bindgen(js_name = pathJson)]
    pub fn path_json(&self, new: &Profile, node: u32) -> Result<String, JsError> {
        let mut at = Some(self.node(node)?);
        let mut names = Vec::new();
        while let Some(n) = at.filter(|&n| n != NodeId::ROOT) {
            names.push(self.new_tree.name(&new.session, n));
            at = self.new_tree.parent(n);
        }
        names.reverse();
        let mut w = JsonOut::new();
        w.strings(names);
        Ok(w.finish())
    }

    /// The new profile's node reached from the root by following function names (a JSON
    /// array), as far as they lead.
    #[wasm_bindgen(js_name = nodeByPath)]
    pub fn node_by_path(&self, new: &Profile, names_json: &str) -> Result<u32, JsError> {
        let names = crate::profile::names(names_json)?;
        let tree = &self.new_tree;
        let mut node = tree.root();
        for name in &names {
            match tree
                .children(node)
                .iter()
                .find(|&&c| tree.name(&new.session, c) == name)
            {
                Some(&child) => node = child,
                None => break,
            }
        }
        Ok(node.0)
    }

    /// The table of `prof diff BASE NEW` (`by`: `"self"` or `"total"` weights) with every
    /// function, ordered by `column` (`name`, `base`, `new`, `delta` or `change`), the first
    /// `limit` rows, as JSON `{summary, count, rows}`. `base` and `new` are the profiles this
    /// diff was made from.
    #[wasm_bindgen(js_name = tableJson)]
    pub fn table_json(
        &self,
        base: &Profile,
        new: &Profile,
        by: &str,
        column: &str,
        descending: bool,
        limit: usize,
    ) -> Result<String, JsError> {
        let by = match by {
            "total" => SortBy::Total,
            _ => SortBy::SelfWeight,
        };
        let column = match column {
            "name" => DiffColumn::Name,
            "base" => DiffColumn::Base,
            "new" => DiffColumn::New,
            "delta" => DiffColumn::Delta,
            _ => DiffColumn::Change,
        };
        let sides = [
            (self.base_label.as_str(), &base.session),
            (self.new_label.as_str(), &new.session),
        ]
        .map(|(label, session)| DiffSide { label, session });
        let options = DiffOptions::default().top(usize::MAX).by(by);
        let mut table = DiffTable::new(sides[0], sides[1], options)
            .map_err(|e| JsError::new(&e.to_string()))?;
        table.sort(column, descending);
        let rows = table
            .rows()
            .iter()
            .take(limit)
            .map(|row| {
                let [base, new, delta] = table.cells(row);
                TableRow {
                    name: &row.name,
                    base,
                    new,
                    delta,
                    change: sign(table.change(row)),
                }
            })
            .collect();
        let count = table.rows().len();
        let cut_text = match count > limit {
            true => format!(
                "(the first {} of {} functions shown)",
                thousands(limit as u64),
                thousands(count as u64)
            ),
            false => String::new(),
        };
        Ok(TableTexts {
            summary: table.summary(),
            count,
            cut_text,
            rows,
        }
        .to_json())
    }
}

impl Diff {
    fn color_sign(&self, node: u32) -> i8 {
        match self.diff_node.get(node as usize).copied().flatten() {
            Some(d) => self.normalized.self_change(d).signum() as i8,
            None => 0,
        }
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

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_table_and_the_frames_say_what_prof_diff_and_the_svg_say() {
        let base = profile(&[("main;work", 3), ("main;parse", 1)]);
        let new = profile(&[("main;work", 9), ("main;parse", 1)]);
        let diff = new.diff_against(&base, "a.json", "b.json").unwrap();
        // The table: prof diff's texts, in prof diff's order, then by name.
        let table = json(
            &diff
                .table_json(&base, &new, "self", "change", true, 10)
                .unwrap(),
        );
        assert_eq!(table["count"], 2);
        assert_eq!(
            table["rows"][0],
            serde_json::json!({"name": "work", "base": "75.0%", "new": "90.0%",
                               "delta": "+15.0%", "change": 1})
        );
        assert_eq!(table["rows"][1]["delta"], "-15.0%");
        assert_eq!(
            table["summary"][1],
            "base  a.json: 2 samples, 4 ns total (unknown program)"
        );
        let by_name = json(
            &diff
                .table_json(&base, &new, "self", "name", false, 1)
                .unwrap(),
        );
        assert_eq!(by_name["rows"].as_array().unwrap().len(), 1);
        assert_eq!(by_name["rows"][0]["name"], "parse");
        assert_eq!(by_name["cutText"], "(the first 1 of 2 functions shown)");
        assert_eq!(table["cutText"], "");
        // The frames: the new profile's shape, each in the core's colour.
        let layout = diff.layout(&new, 0, 1000.0, 0.0, 1.0, false).unwrap();
        let nodes = layout.node();
        let colors = diff.colors(&nodes);
        assert_eq!(colors.len(), 3 * nodes.len());
        let frame = |name: &str| {
            let i = (0..nodes.len())
                .find(|&i| {
                    nodes[i] != 0 && diff.new_tree.name(&new.session, NodeId(nodes[i])) == name
                })
                .unwrap();
            (
                nodes[i],
                [colors[3 * i], colors[3 * i + 1], colors[3 * i + 2]],
            )
        };
        let (work, work_color) = frame("work");
        assert_eq!(work_color[0], 255, "work grew: red");
        assert_eq!(frame("parse").1[2], 255, "parse shrank: blue");
        assert_eq!(frame("main").1, [250, 250, 250]);
        let tip = json(&diff.node_json(&new, work).unwrap());
        assert_eq!(tip["name"], "work");
        assert_eq!(tip["sides"][0]["totalPct"], "75.0%");
        assert_eq!(tip["sides"][1]["totalPct"], "90.0%");
        assert_eq!(tip["sides"][2]["totalPct"], "+15.0%");
        assert_eq!(tip["sides"][2]["totalText"], "+6 ns");
        assert_eq!(tip["change"], 1);
        assert_eq!(
            json(&diff.path_json(&new, work).unwrap()),
            serde_json::json!(["main", "work"])
        );
        assert_eq!(diff.node_by_path(&new, r#"["main","work"]"#).unwrap(), work);
    }

    #[test]
    fn a_base_follows_the_sample_type_the_new_profile_shows() {
        use prof_session::session::{SampleType, Unit};
        // cpu time first, sample counts second; each row is one sample.
        let typed = |rows: &[(&str, u64)]| {
            let mut b = SessionBuilder::default();
            b.set_sample_types(
                SampleType::new("cpu", Unit::Nanoseconds),
                vec![SampleType::samples()],
            );
            let t = b.thread(1, "main");
            for (i, (stack, weight)) in rows.iter().enumerate() {
                let names: Vec<&str> = stack.split(';').collect();
                b.push_named(&names, t, i as u64, *weight);
            }
            b.finish()
        };
        let mut base = Profile::of(typed(&[("main;work", 3), ("main;parse", 1)]));
        let mut session = typed(&[
            ("main;work", 3),
            ("main;work", 3),
            ("main;work", 3),
            ("main;parse", 1),
        ]);
        session.select_sample_type("samples").unwrap();
        let new = Profile::of(session);
        // As loaded, the base measures cpu time and the new profile sample counts.
        let side = |session| DiffSide {
            label: "x",
            session,
        };
        assert!(check_comparable(side(&base.session), side(&new.session)).is_err());
        base.follow_sample_type(&new);
        assert_eq!(base.session.meta.sample_type.name, "samples");
        let diff = new.diff_against(&base, "a.json", "b.json").unwrap();
        let table = json(
            &diff
                .table_json(&base, &new, "self", "change", true, 10)
                .unwrap(),
        );
        // work: 1 of 2 samples, then 3 of 4.
        assert_eq!(table["rows"][0]["name"], "work");
        assert_eq!(table["rows"][0]["base"], "50.0%");
        assert_eq!(table["rows"][0]["new"], "75.0%");
        // A type the base lacks leaves it as it is.
        let mut other = Profile::of(typed(&[("main", 1)]));
        let mut wall = typed(&[("main", 1)]);
        wall.meta.sample_type = SampleType::new("wall", Unit::Nanoseconds);
        other.follow_sample_type(&Profile::of(wall));
        assert_eq!(other.session.meta.sample_type.name, "cpu");
    }
}
