//! The Source view's numbers: one function's weight per source line over the samples the view
//! selects (threads, range, transforms), from the core's `function_lines`, every text formatted
//! by its one formatter. The source text itself comes from the server, not from here.

use crate::json_out::{JsonOut, ToJson};
use crate::profile::Profile;
use crate::view::Weights;
use prof_session::aggregate::{
    format_percent, format_weight, function_lines, FileWeights, TransformSpec,
};
use prof_session::session::{Session, StrId};
use wasm_bindgen::prelude::*;

/// One weighted line of a file.
struct LineRow {
    line: u32,
    weights: Weights,
    /// The line's total as a fraction of the function's heaviest line's (0 to 1): how hot to
    /// draw it.
    heat: f64,
}

/// One file the function has lines in.
struct FileRow {
    /// The file as the session names it (what the server is asked for).
    file: String,
    total_text: String,
    total_pct: String,
    lines: Vec<LineRow>,
}

/// The function's lines, heaviest file first.
struct SourceLines {
    name: String,
    files: Vec<FileRow>,
    /// Where the heaviest line is: index into `files` and line number.
    hottest: Option<(usize, u32)>,
    /// `3 lines in 2 files`.
    summary: String,
}

impl ToJson for LineRow {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("line").u64(u64::from(self.line));
        self.weights.write_keys(w);
        w.key("heat").f64(self.heat);
        w.end_object();
    }
}

impl ToJson for FileRow {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("file").string(&self.file);
        w.key("totalText").string(&self.total_text);
        w.key("totalPct").string(&self.total_pct);
        w.key("lines").array(&self.lines);
        w.end_object();
    }
}

impl ToJson for SourceLines {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("name").string(&self.name);
        w.key("files").array(&self.files);
        w.key("hottest");
        match self.hottest {
            Some((file, line)) => w.u64s([file as u64, u64::from(line)]),
            None => w.null(),
        };
        w.key("summary").string(&self.summary);
        w.end_object();
    }
}

/// The id of the function named `name`, if a frame has that name.
pub(crate) fn function_id(session: &Session, name: &str) -> Option<StrId> {
    let mut names = session.frames.iter().map(|f| f.name);
    names.find(|&id| session.str(id) == name)
}

fn rows(
    session: &Session,
    files: Vec<FileWeights>,
    whole: u64,
) -> (Vec<FileRow>, Option<(usize, u32)>) {
    let weight = |w| format_weight(&session.meta.sample_type, w);
    let hottest = files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| {
            f.lines
                .iter()
                .map(move |(&line, &(_, total))| (total, i, line))
        })
        // The heaviest, and of equal ones the first file's lowest line.
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| (b.1, b.2).cmp(&(a.1, a.2))));
    let max = hottest.map_or(0, |h| h.0);
    let rows = files
        .into_iter()
        .map(|file| FileRow {
            total_text: weight(file.total),
            total_pct: format_percent(file.total, whole),
            lines: file
                .lines
                .iter()
                .map(|(&line, &(own, total))| LineRow {
                    line,
                    weights: Weights::of(&session.meta.sample_type, own, total, whole),
                    heat: if max == 0 {
                        0.0
                    } else {
                        total as f64 / max as f64
                    },
                })
                .collect(),
            file: file.file,
        })
        .collect();
    (rows, hottest.map(|(_, file, line)| (file, line)))
}

#[wasm_bindgen]
impl Profile {
    /// The lines of function `name` with their self and total weight over what the view shows,
    /// as JSON: `{name, files: [{file, totalText, totalPct, lines: [{line, self, total,
    /// selfText, selfPct, totalText, totalPct, heat}]}], hottest: [file index, line] or null,
    /// summary}`; `files` is empty when no sample shown has a line of it.
    #[wasm_bindgen(js_name = sourceLinesJson)]
    pub fn source_lines_json(&self, name: &str) -> String {
        let files = match function_id(&self.session, name) {
            Some(func) => {
                let (transforms, _) =
                    TransformSpec::resolve_those_that_apply(&self.view.transforms, &self.session);
                function_lines(&self.session, &self.weights, &transforms, func)
            }
            None => Vec::new(),
        };
        let whole = self.tree.total_weight(self.tree.root());
        let (files, hottest) = rows(&self.session, files, whole);
        let lines: usize = files.iter().map(|f| f.lines.len()).sum();
        let plural = |n: usize, one: &str, many: &str| {
            format!(
                "{} {}",
                prof_session::aggregate::thousands(n as u64),
                if n == 1 { one } else { many }
            )
        };
        let summary = format!(
            "{} in {}",
            plural(lines, "line", "lines"),
            plural(files.len(), "file", "files")
        );
        SourceLines {
            name: name.to_owned(),
            files,
            hottest,
            summary,
        }
        .to_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::{FrameSpec, SessionBuilder};

    fn profile() -> Profile {
        let mut b = SessionBuilder::default();
        let at = |name, file, line| FrameSpec {
            name,
            file: Some(file),
            line: Some(line),
            ..FrameSpec::default()
        };
        let main = b.intern_frame(&at("main", "main.rs", 1));
        let work = b.intern_frame(&at("work", "work.rs", 10));
        let inlined = b.intern_frame(&at("work", "inl.rs", 3));
        let t = b.thread(1, "main");
        let a = b.intern_stack_path(&[main, work]).unwrap();
        let c = b.intern_stack_path(&[main, inlined]).unwrap();
        b.push_sample(a, t, 0, 3_000_000);
        b.push_sample(c, t, 1, 1_000_000);
        Profile::of(b.finish())
    }

    #[test]
    fn every_file_of_the_function_with_formatted_lines_and_the_hottest() {
        let profile = profile();
        let json: serde_json::Value =
            serde_json::from_str(&profile.source_lines_json("work")).unwrap();
        let files = json["files"].as_array().unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0]["file"], "work.rs");
        let line = &files[0]["lines"][0];
        assert_eq!(line["line"], 10);
        assert_eq!(line["selfText"], "3.00 ms");
        assert_eq!(line["totalPct"], "75.0%");
        assert_eq!(line["heat"], 1.0);
        // Floats go to the page to 12 decimals.
        assert_eq!(files[1]["lines"][0]["heat"], 0.333_333_333_333);
        assert_eq!(json["hottest"], serde_json::json!([0, 10]));
        assert_eq!(json["summary"], "2 lines in 2 files");
    }

    #[test]
    fn an_unknown_function_has_no_lines() {
        let json: serde_json::Value =
            serde_json::from_str(&profile().source_lines_json("nobody")).unwrap();
        assert_eq!(json["files"].as_array().unwrap().len(), 0);
        assert!(json["hottest"].is_null());
    }
}
