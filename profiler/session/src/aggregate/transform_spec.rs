//! [`TransformSpec`]: a transform described by function names and patterns, as `prof report`'s
//! options and the page's URL hold it, and turned into a [`Transform`] against one session.
//!
//! Regular expressions are compiled with `regex-lite` (the `regex` syntax without Unicode
//! classes) on both sides, so the command line and the wasm viewer match exactly the same names
//! and the viewer stays small.

use super::transform::{NameMatcher, Transform};
use crate::json::{Json, Step, Unknown};
use crate::session::{Session, StrId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One transform as text: what the command line's options and the page's state hold. JSON form:
/// `{"kind": "focus-function", "function": "parse"}`, `{"kind": "collapse-recursion"}`,
/// `{"kind": "hide", "pattern": "^std::"}`.
///
/// It is read through a struct of optional fields rather than serde's internally tagged
/// enums, which buffer the object in serde's `Content` first: 29 kB of the wasm viewer for this
/// one type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", try_from = "SpecFields")]
pub enum TransformSpec {
    /// [`Transform::FocusFunction`] on the function with this name.
    FocusFunction {
        /// The function's name.
        function: String,
    },
    /// [`Transform::FocusSubtree`] on this call path of function names, outermost first.
    FocusSubtree {
        /// The path's function names, outermost first.
        path: Vec<String>,
    },
    /// [`Transform::Merge`] of the function with this name into its callers.
    Merge {
        /// The function's name.
        function: String,
    },
    /// [`Transform::DropFunction`]: drop the samples through the function with this name.
    Drop {
        /// The function's name.
        function: String,
    },
    /// [`Transform::CollapseRecursion`].
    CollapseRecursion,
    /// [`Transform::CollapseModule`] for the module with this name (its full name as the session
    /// holds it, or its file name: `libc.so.6` for `/usr/lib/libc.so.6`).
    CollapseModule {
        /// The module's name.
        module: String,
    },
    /// [`Transform::FocusMatching`]: pprof's `-focus REGEX`.
    Focus {
        /// The regular expression.
        pattern: String,
    },
    /// [`Transform::IgnoreMatching`]: pprof's `-ignore REGEX`.
    Ignore {
        /// The regular expression.
        pattern: String,
    },
    /// [`Transform::Hide`]: pprof's `-hide REGEX`.
    Hide {
        /// The regular expression.
        pattern: String,
    },
    /// [`Transform::FoldScheduler`]: a switched-out thread's time charged to the call that
    /// entered the kernel.
    FoldScheduler,
}

/// The JSON form's fields, every one optional: what [`TransformSpec`] is read through. Fields
/// a kind does not use are ignored, as serde's tagged enums ignore them.
#[derive(Deserialize)]
struct SpecFields {
    kind: String,
    function: Option<String>,
    path: Option<Vec<String>>,
    module: Option<String>,
    pattern: Option<String>,
}

impl TryFrom<SpecFields> for TransformSpec {
    type Error = String;

    fn try_from(f: SpecFields) -> Result<TransformSpec, String> {
        fn needs<T>(field: Option<T>, name: &str) -> Result<T, String> {
            field.ok_or_else(|| format!("missing field `{name}`"))
        }
        Ok(match f.kind.as_str() {
            "focus-function" => TransformSpec::FocusFunction {
                function: needs(f.function, "function")?,
            },
            "focus-subtree" => TransformSpec::FocusSubtree {
                path: needs(f.path, "path")?,
            },
            "merge" => TransformSpec::Merge {
                function: needs(f.function, "function")?,
            },
            "drop" => TransformSpec::Drop {
                function: needs(f.function, "function")?,
            },
            "collapse-recursion" => TransformSpec::CollapseRecursion,
            "collapse-module" => TransformSpec::CollapseModule {
                module: needs(f.module, "module")?,
            },
            "focus" => TransformSpec::Focus {
                pattern: needs(f.pattern, "pattern")?,
            },
            "ignore" => TransformSpec::Ignore {
                pattern: needs(f.pattern, "pattern")?,
            },
            "hide" => TransformSpec::Hide {
                pattern: needs(f.pattern, "pattern")?,
            },
            "fold-scheduler" => TransformSpec::FoldScheduler,
            other => {
                return Err(format!(
                    "unknown variant `{other}`, expected one of `focus-function`, `focus-subtree`, `merge`, `drop`, `collapse-recursion`, `collapse-module`, `focus`, `ignore`, `hide`, `fold-scheduler`"
                ))
            }
        })
    }
}

impl TransformSpec {
    /// Reads one transform's JSON form with [`Json`] (how the wasm viewer reads the page's
    /// state, without serde_json's deserializer): the same fields as the serde form, through the
    /// same checks, and fields a kind does not use ignored.
    pub fn read_json(json: &mut Json<'_>) -> Step<TransformSpec> {
        let optional = |json: &mut Json<'_>| -> Step<Option<String>> {
            if json.null()? {
                Ok(None)
            } else {
                json.string().map(|s| Some(s.into_owned()))
            }
        };
        let names = &["kind", "function", "path", "module", "pattern"];
        let mut fields = json.fields("struct SpecFields", names, Unknown::Skip)?;
        let mut spec = SpecFields {
            kind: String::new(),
            function: None,
            path: None,
            module: None,
            pattern: None,
        };
        while let Some(i) = json.field(&mut fields)? {
            match i {
                0 => spec.kind = json.string()?.into_owned(),
                1 => spec.function = optional(json)?,
                2 => {
                    spec.path = if json.null()? {
                        None
                    } else {
                        Some(json.strings()?)
                    }
                }
                3 => spec.module = optional(json)?,
                _ => spec.pattern = optional(json)?,
            }
        }
        json.require(&fields, 1)?;
        TransformSpec::try_from(spec).map_err(|e| json.error(e))
    }

    /// The transform this describes in `session`, or one line saying why there is none: a
    /// function or module the session does not have, or a pattern that is not a regex.
    pub fn resolve(&self, session: &Session) -> Result<Transform, String> {
        Ok(match self {
            TransformSpec::FocusFunction { function } => {
                Transform::FocusFunction(function_id(session, function)?)
            }
            TransformSpec::FocusSubtree { path } => Transform::FocusSubtree(
                path.iter()
                    .map(|f| function_id(session, f))
                    .collect::<Result<_, _>>()?,
            ),
            TransformSpec::Merge { function } => Transform::Merge(function_id(session, function)?),
            TransformSpec::Drop { function } => {
                Transform::DropFunction(function_id(session, function)?)
            }
            TransformSpec::CollapseRecursion => Transform::CollapseRecursion,
            TransformSpec::CollapseModule { module } => {
                Transform::CollapseModule(module_id(session, module)?)
            }
            TransformSpec::Focus { pattern } => Transform::FocusMatching(matcher(pattern)?),
            TransformSpec::Ignore { pattern } => Transform::IgnoreMatching(matcher(pattern)?),
            TransformSpec::Hide { pattern } => Transform::Hide(matcher(pattern)?),
            TransformSpec::FoldScheduler => Transform::FoldScheduler,
        })
    }

    /// Every spec resolved in order; the first failure names the spec it came from.
    pub fn resolve_all(
        specs: &[TransformSpec],
        session: &Session,
    ) -> Result<Vec<Transform>, String> {
        specs
            .iter()
            .map(|spec| spec.resolve(session).map_err(|e| format!("{spec}: {e}")))
            .collect()
    }

    /// The specs that resolve in `session`, resolved in order, and for every spec why it does
    /// not (`None` when it does): a spec of another profile (a stale URL, say) is left out,
    /// never an error. How the viewer applies the page's transforms.
    pub fn resolve_those_that_apply(
        specs: &[TransformSpec],
        session: &Session,
    ) -> (Vec<Transform>, Vec<Option<String>>) {
        let mut transforms = Vec::with_capacity(specs.len());
        let errors = specs
            .iter()
            .map(|spec| match spec.resolve(session) {
                Ok(t) => {
                    transforms.push(t);
                    None
                }
                Err(e) => Some(e),
            })
            .collect();
        (transforms, errors)
    }
}

/// What a chip in the page says: `Focus: parse`, `Hide /^std::/`, `Collapse recursion`.
impl fmt::Display for TransformSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransformSpec::FocusFunction { function } => write!(f, "Focus: {function}"),
            TransformSpec::FocusSubtree { path } => {
                write!(f, "Focus subtree: {}", path.join(" > "))
            }
            TransformSpec::Merge { function } => write!(f, "Merge: {function}"),
            TransformSpec::Drop { function } => write!(f, "Drop: {function}"),
            TransformSpec::CollapseRecursion => f.write_str("Collapse recursion"),
            TransformSpec::CollapseModule { module } => write!(f, "Collapse module: {module}"),
            TransformSpec::Focus { pattern } => write!(f, "Focus /{pattern}/"),
            TransformSpec::Ignore { pattern } => write!(f, "Ignore /{pattern}/"),
            TransformSpec::Hide { pattern } => write!(f, "Hide /{pattern}/"),
            TransformSpec::FoldScheduler => f.write_str("Scheduler folded into the blocking call"),
        }
    }
}

/// The id of the function named `name`: a name some frame has, not just any string; or a
/// module's name, which is what a frame made by [`Transform::CollapseModule`] is called.
fn function_id(session: &Session, name: &str) -> Result<StrId, String> {
    let named = |id: &StrId| session.str(*id) == name;
    let frames = || session.frames.iter();
    frames()
        .map(|f| f.name)
        .find(named)
        .or_else(|| frames().filter_map(|f| f.module).find(named))
        .ok_or_else(|| format!("no function named {name:?} in the profile"))
}

/// The id of the module named `name`, in full or by its file name.
fn module_id(session: &Session, name: &str) -> Result<StrId, String> {
    let mut modules: Vec<StrId> = session.frames.iter().filter_map(|f| f.module).collect();
    crate::order::sort_by(&mut modules, |a, b| a.cmp(b));
    modules.dedup();
    if let Some(&id) = modules.iter().find(|&&id| session.str(id) == name) {
        return Ok(id);
    }
    let by_file: Vec<StrId> = modules
        .iter()
        .copied()
        .filter(|&id| session.str(id).rsplit(['/', '\\']).next() == Some(name))
        .collect();
    match by_file[..] {
        [id] => Ok(id),
        [] => Err(format!("no module named {name:?} in the profile")),
        _ => Err(format!(
            "{name:?} names {} modules; give the full path",
            by_file.len()
        )),
    }
}

/// A matcher for `pattern`, or one line saying why it is not a regex.
fn matcher(pattern: &str) -> Result<NameMatcher, String> {
    let re = regex_lite::Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        format!(
            "invalid regex: {}",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        )
    })?;
    Ok(NameMatcher::new(move |name| re.is_match(name)))
}

/// The transforms every view of `session` starts with unless asked otherwise: for a wall
/// session with the kernel's scheduler frames, [`TransformSpec::FoldScheduler`]; none for the
/// others.
pub fn default_transforms(session: &Session) -> Vec<TransformSpec> {
    use super::scheduler::{is_kernel_module, SCHEDULER_FUNCTIONS};
    let scheduler = session.frames.iter().any(|f| {
        f.module.is_some_and(|m| is_kernel_module(session.str(m)))
            && SCHEDULER_FUNCTIONS.contains(&session.str(f.name))
    });
    if session.meta.mode == crate::session::Mode::Wall && scheduler {
        vec![TransformSpec::FoldScheduler]
    } else {
        Vec::new()
    }
}
