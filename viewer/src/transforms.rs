//! The transform stack of the page: the specs of the state (`transforms` in the URL), resolved
//! against the loaded session by the core, and the chips' texts.

use crate::json_out::{JsonOut, ToJson};
use crate::profile::Profile;
use prof_session::aggregate::{Transform, TransformSpec};
use prof_session::session::Session;
use wasm_bindgen::prelude::*;

/// One chip of the transform bar: what it says, and why it is not applied (if it is not).
#[derive(Debug)]
pub(crate) struct Chip {
    /// `Focus: parse`, `Hide /^std::/`.
    text: String,
    /// Why the transform does not apply to this session (a name it lacks), or `None`.
    error: Option<String>,
}

impl ToJson for Chip {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("text").string(&self.text);
        w.key("error").opt_string(self.error.as_deref());
        w.end_object();
    }
}

/// The transforms of `specs` that apply to `session`, in order, and a chip for every spec. A
/// spec that does not resolve (a function of another profile, say) is left out and its chip
/// says why: the page never fails on a stale URL.
pub(crate) fn resolve(session: &Session, specs: &[TransformSpec]) -> (Vec<Transform>, Vec<Chip>) {
    let (transforms, errors) = TransformSpec::resolve_those_that_apply(specs, session);
    let chips = specs
        .iter()
        .zip(errors)
        .map(|(spec, error)| Chip {
            text: spec.to_string(),
            error: error.map(|e| format!("not applied: {e}")),
        })
        .collect();
    (transforms, chips)
}

/// A spec in the JSON form the page's state holds (`{"kind": "hide", "pattern": "^std::"}`).
impl ToJson for TransformSpec {
    fn write_json(&self, w: &mut JsonOut) {
        let (kind, arg) = match self {
            TransformSpec::FocusFunction { function } => {
                ("focus-function", Some(("function", function)))
            }
            TransformSpec::FocusSubtree { path } => {
                w.begin_object();
                w.key("kind").string("focus-subtree");
                w.key("path").strings(path.iter().map(String::as_str));
                w.end_object();
                return;
            }
            TransformSpec::Merge { function } => ("merge", Some(("function", function))),
            TransformSpec::Drop { function } => ("drop", Some(("function", function))),
            TransformSpec::CollapseRecursion => ("collapse-recursion", None),
            TransformSpec::CollapseModule { module } => {
                ("collapse-module", Some(("module", module)))
            }
            TransformSpec::Focus { pattern } => ("focus", Some(("pattern", pattern))),
            TransformSpec::Ignore { pattern } => ("ignore", Some(("pattern", pattern))),
            TransformSpec::Hide { pattern } => ("hide", Some(("pattern", pattern))),
            TransformSpec::FoldScheduler => ("fold-scheduler", None),
        };
        w.begin_object();
        w.key("kind").string(kind);
        if let Some((key, value)) = arg {
            w.key(key).string(value);
        }
        w.end_object();
    }
}

fn parse_spec(spec_json: &str) -> Result<TransformSpec, JsError> {
    prof_session::json::Json::parse(spec_json.as_bytes(), TransformSpec::read_json)
        .map_err(|e| JsError::new(&format!("bad transform: {e}")))
}

#[wasm_bindgen]
impl Profile {
    /// The chips of the current transform stack, as JSON `[{text, error}]`.
    #[wasm_bindgen(js_name = transformChipsJson)]
    pub fn transform_chips_json(&self) -> String {
        let (_, chips) = resolve(&self.session, &self.view.transforms);
        chips.to_json()
    }

    /// The transforms the page starts this file with when its URL names none, as JSON specs:
    /// what `prof report` applies by default (a wall session's scheduler folded into the
    /// blocking call, `prof_session::aggregate::default_transforms`), so the two show the same table.
    #[wasm_bindgen(js_name = defaultTransformsJson)]
    pub fn default_transforms_json(&self) -> String {
        prof_session::aggregate::default_transforms(&self.session).to_json()
    }

    /// Checks one transform (JSON, as in the state) before it joins the stack: its chip's text,
    /// or an error saying why it cannot apply (a bad regex, an unknown function).
    #[wasm_bindgen(js_name = checkTransform)]
    pub fn check_transform(&self, spec_json: &str) -> Result<String, JsError> {
        let spec = parse_spec(spec_json)?;
        spec.resolve(&self.session).map_err(|e| JsError::new(&e))?;
        Ok(spec.to_string())
    }

    /// The module (binary or library) of a call tree node's frame, if the session knows it:
    /// what "collapse module" offers for that frame.
    #[wasm_bindgen(js_name = nodeModule)]
    pub fn node_module(&self, node: u32) -> Option<String> {
        let frame = self.tree.frame(prof_session::aggregate::NodeId(node))?;
        let module = self.session.frames.get(frame.index())?.module?;
        Some(self.session.str(module).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::SessionBuilder;

    #[test]
    fn specs_are_written_as_the_page_and_serde_read_them() {
        let specs: Vec<TransformSpec> = serde_json::from_str(
            r#"[{"kind":"focus-function","function":"a"},{"kind":"focus-subtree","path":["a","b"]},
                {"kind":"merge","function":"m"},{"kind":"drop","function":"d"},
                {"kind":"collapse-recursion"},{"kind":"collapse-module","module":"libc.so.6"},
                {"kind":"focus","pattern":"f"},{"kind":"ignore","pattern":"i"},
                {"kind":"hide","pattern":"h\""},{"kind":"fold-scheduler"}]"#,
        )
        .unwrap();
        let again: Vec<TransformSpec> = serde_json::from_str(&specs.to_json()).unwrap();
        assert_eq!(again, specs);
        assert_eq!(
            serde_json::to_string(&specs).unwrap(),
            specs.to_json(),
            "the same text as serde's"
        );
    }

    #[test]
    fn a_transform_the_session_cannot_resolve_is_a_chip_not_applied() {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        b.push_named(&["main", "parse"], t, 0, 10);
        let session = b.finish();
        let specs: Vec<TransformSpec> = serde_json::from_str(
            r#"[{"kind":"merge","function":"nope"},{"kind":"hide","pattern":"^parse$"},
                {"kind":"focus","pattern":"("}]"#,
        )
        .unwrap();
        let (transforms, chips) = resolve(&session, &specs);
        assert_eq!(transforms.len(), 1);
        let json: serde_json::Value = serde_json::from_str(&chips.to_json()).unwrap();
        assert_eq!(json[0]["text"], "Merge: nope");
        assert_eq!(
            json[0]["error"],
            "not applied: no function named \"nope\" in the profile"
        );
        assert_eq!(json[1]["text"], "Hide /^parse$/");
        assert!(json[1]["error"].is_null());
        assert!(json[2]["error"]
            .as_str()
            .unwrap()
            .starts_with("not applied: invalid regex"));
    }

    #[test]
    fn a_change_of_transforms_alone_reuses_the_weights_and_gives_fresh_numbers() {
        use prof_session::aggregate::{CallTree, Filter, StackWeights};
        use prof_session::session::ThreadIdx;
        let mut b = SessionBuilder::default();
        let main = b.thread(1, "main");
        let worker = b.thread(2, "worker");
        b.push_named(&["main", "parse", "lex"], main, 0, 30);
        b.push_named(&["main", "eval"], main, 10, 20);
        b.push_named(&["work", "lex"], worker, 20, 5);
        let session = b.finish();
        let mut bytes = Vec::new();
        prof_session::session::write(&session, &mut bytes).unwrap();
        let mut profile = Profile::of(prof_session::session::read_bytes(&bytes).unwrap());
        let main_only = || Filter::all().threads([ThreadIdx(0)]);
        let both = || Filter::all().threads([ThreadIdx(0), ThreadIdx(1)]);
        let merge = r#"[{"kind": "merge", "function": "parse"}]"#;
        let focus = r#"[{"kind": "focus", "pattern": "^lex$"}]"#;
        for (view, filter, specs) in [
            (
                format!(r#"{{"threads": [0], "transforms": {merge}}}"#),
                main_only(),
                merge,
            ),
            (
                format!(r#"{{"threads": [0], "transforms": {focus}}}"#),
                main_only(),
                focus,
            ),
            (
                format!(r#"{{"threads": [0, 1], "transforms": {focus}}}"#),
                both(),
                focus,
            ),
            (
                r#"{"threads": [0, 1], "range": [10, 30]}"#.to_owned(),
                both().time_range(10, 30),
                "[]",
            ),
            ("{}".to_owned(), Filter::all(), "[]"),
        ] {
            profile.set_view(&view).unwrap();
            let specs: Vec<TransformSpec> = serde_json::from_str(specs).unwrap();
            let transforms = TransformSpec::resolve_all(&specs, &session).unwrap();
            let weights = StackWeights::compute(&session, &filter);
            let expected = CallTree::build(&session, &weights, &transforms);
            assert_eq!(profile.tree, expected, "{view}");
        }
    }
}
