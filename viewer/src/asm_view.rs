//! The Assembly view's numbers: one function's weight per machine instruction over the samples
//! the view selects (threads, range, transforms), from the core's `function_addresses` and
//! `instruction_weights`, every text formatted by its one formatter. The instructions
//! themselves come from `prof serve` (read from the recorded binary), not from here: the page
//! asks where the code to show is ([`Profile::assembly_target_json`]), fetches it, and hands
//! the instructions' file offsets back for their weights ([`Profile::assembly_json`]).

use crate::json_out::{JsonOut, ToJson};
use crate::profile::Profile;
use crate::source_view::function_id;
use prof_session::aggregate::{
    format_percent, format_weight, function_addresses, hottest_place, instruction_weights,
    thousands, AddressWeights, SampleWeights, TransformSpec,
};
use wasm_bindgen::prelude::*;

/// One instruction's weights, formatted.
struct Row {
    /// Its index among the instructions given.
    index: usize,
    weights: SampleWeights,
    whole: u64,
    /// Its self weight as a fraction of the hottest instruction's (total when none has self
    /// weight): how hot to draw it.
    heat: f64,
}

impl Row {
    fn write_keys(&self, w: &mut JsonOut, sample_type: &prof_session::session::SampleType) {
        let s = &self.weights;
        w.key("selfText")
            .string(&format_weight(sample_type, s.self_weight));
        w.key("selfPct")
            .string(&format_percent(s.self_weight, self.whole));
        w.key("selfSamples").string(&thousands(s.self_samples));
        w.key("totalText")
            .string(&format_weight(sample_type, s.total));
        w.key("totalPct")
            .string(&format_percent(s.total, self.whole));
        w.key("totalSamples").string(&thousands(s.total_samples));
    }
}

/// The rows with the session's sample type, for writing.
struct Rows<'a> {
    rows: Vec<Row>,
    outside: Option<Row>,
    hottest: Option<usize>,
    sample_type: &'a prof_session::session::SampleType,
    summary: String,
}

impl ToJson for Rows<'_> {
    fn write_json(&self, w: &mut JsonOut) {
        w.begin_object();
        w.key("rows").begin_array();
        for row in &self.rows {
            w.begin_object();
            w.key("index").u64(row.index as u64);
            row.write_keys(w, self.sample_type);
            w.key("heat").f64(row.heat);
            w.end_object();
        }
        w.end_array();
        w.key("outside");
        match &self.outside {
            Some(row) => {
                w.begin_object();
                row.write_keys(w, self.sample_type);
                w.end_object();
            }
            None => {
                w.null();
            }
        }
        w.key("hottest");
        match self.hottest {
            Some(i) => w.u64(i as u64),
            None => w.null(),
        };
        w.key("summary").string(&self.summary);
        w.end_object();
    }
}

impl Profile {
    /// The weights of function `name` at each place of its code, over what the view shows.
    fn addresses_shown(&self, name: &str) -> Option<Vec<AddressWeights>> {
        let func = function_id(&self.session, name)?;
        let (transforms, _) =
            TransformSpec::resolve_those_that_apply(&self.view.transforms, &self.session);
        Some(function_addresses(
            &self.session,
            &self.weights,
            &transforms,
            func,
        ))
    }
}

#[wasm_bindgen]
impl Profile {
    /// Whether the Assembly view can have code to show: the session was recorded by prof (it
    /// names its host, where `prof serve` may read the binaries) with the binaries' mappings and
    /// frames' addresses. Imports (pprof, perf script, folded stacks) have no host and are not
    /// offered the view, as a profile without times is not offered the stack chart.
    #[wasm_bindgen(js_name = hasCode)]
    pub fn has_code(&self) -> bool {
        let session = &self.session;
        !session.meta.hostname.is_empty()
            && !session.mappings.is_empty()
            && (0..session.frames.len()).any(|i| session.frames.at(i).address.is_some())
    }

    /// Where the code of function `name` to show lies, as JSON: `{mapping, offset, binary}` (the
    /// session's mapping of the binary, the file offset of its hottest instruction, the
    /// binary's path), or `{why}`, one line saying why there is none.
    #[wasm_bindgen(js_name = assemblyTargetJson)]
    pub fn assembly_target_json(&self, name: &str) -> String {
        let mut w = JsonOut::new();
        w.begin_object();
        let why = match self.addresses_shown(name) {
            None => Some(format!("{name} is not a function of this profile.")),
            Some(addresses) if addresses.is_empty() => Some(format!(
                "No sample of {name} in what is shown has an instruction address (profiles \
                 imported from folded stacks or perf script have none)."
            )),
            Some(addresses) => match hottest_place(&addresses) {
                Some(place) => {
                    let mapping = place.mapping.unwrap_or_default();
                    let path = self.session.mappings[mapping].path;
                    w.key("mapping").u64(mapping as u64);
                    w.key("offset").u64(place.offset);
                    w.key("binary").string(self.session.str(path));
                    None
                }
                None => Some(format!(
                    "The addresses of {name} lie in no binary the profile records (no mappings: \
                     an import without them, or code outside any file)."
                )),
            },
        };
        if let Some(why) = why {
            w.key("why").string(&why);
        }
        w.end_object();
        w.finish()
    }

    /// The weights of function `name` at each of the instructions shown: those of the binary of
    /// `mapping` at file offsets `starts` (ascending), the last ending at `end`, as JSON:
    /// `{rows: [{index, selfText, selfPct, selfSamples, totalText, totalPct, totalSamples,
    /// heat}] (the weighted instructions only), outside: {selfText, ...} or null (its samples at
    /// places not shown), hottest: index or null, summary}`.
    #[wasm_bindgen(js_name = assemblyJson)]
    pub fn assembly_json(&self, name: &str, mapping: u32, starts: &[f64], end: f64) -> String {
        let addresses = self.addresses_shown(name).unwrap_or_default();
        // Offsets cross as doubles: exact below 2^53, far beyond any file read.
        let starts: Vec<u64> = starts.iter().map(|&s| s as u64).collect();
        let shown = instruction_weights(&addresses, mapping as usize, &starts, end as u64);
        let whole = self.tree.total_weight(self.tree.root());
        let hottest = shown.hottest.map(|i| shown.instructions[i]);
        let (max_self, max_total) = hottest.map_or((0, 0), |h| (h.self_weight, h.total));
        let heat = |w: &SampleWeights| match (max_self, max_total) {
            (0, 0) => 0.0,
            (0, max) => w.total as f64 / max as f64,
            (max, _) => w.self_weight as f64 / max as f64,
        };
        let rows: Vec<Row> = (shown.instructions.iter().enumerate())
            .filter(|(_, w)| w.total > 0 || w.self_weight > 0)
            .map(|(index, w)| Row {
                index,
                weights: *w,
                whole,
                heat: heat(w),
            })
            .collect();
        let outside = (shown.outside != SampleWeights::default()).then_some(Row {
            index: 0,
            weights: shown.outside,
            whole,
            heat: 0.0,
        });
        let samples: u64 = rows.iter().map(|r| r.weights.self_samples).sum();
        let summary = format!(
            "{} of {} instructions sampled, {} samples",
            thousands(rows.len() as u64),
            thousands(starts.len() as u64),
            thousands(samples)
        );
        Rows {
            rows,
            outside,
            hottest: shown.hottest,
            sample_type: &self.session.meta.sample_type,
            summary,
        }
        .to_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof_session::session::{FrameSpec, MappingSpec, SessionBuilder};

    /// `work` sampled at 0x1010 (3 ms) and 0x1012 (1 ms) of `/bin/app` (mapped at 0x1000 from
    /// file offset 0x400), and at 0x50, in no mapping (1 ms).
    fn profile() -> Profile {
        let mut b = SessionBuilder::default();
        b.push_mapping(&MappingSpec {
            start: 0x1000,
            limit: 0x2000,
            offset: 0x400,
            path: "/bin/app",
            build_id: None,
        });
        let at = |address| FrameSpec {
            address: Some(address),
            ..FrameSpec::named("work")
        };
        let t = b.thread(1, "main");
        for (address, ms) in [(0x1010, 3), (0x1012, 1), (0x50, 1)] {
            let frame = b.intern_frame(&at(address));
            let stack = b.intern_stack_path(&[frame]).unwrap();
            for i in 0..ms {
                b.push_sample(stack, t, i, 1_000_000);
            }
        }
        Profile::of(b.finish())
    }

    #[test]
    fn the_target_is_the_hottest_instructions_file_offset_and_binary() {
        let json: serde_json::Value =
            serde_json::from_str(&profile().assembly_target_json("work")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"mapping": 0, "offset": 0x410, "binary": "/bin/app"})
        );
        let none: serde_json::Value =
            serde_json::from_str(&profile().assembly_target_json("nobody")).unwrap();
        assert_eq!(none["why"], "nobody is not a function of this profile.");
    }

    #[test]
    fn a_function_without_addresses_or_mappings_says_why_in_one_line() {
        let mut b = SessionBuilder::default();
        let t = b.thread(1, "main");
        let folded = b.intern_frame(&FrameSpec::named("folded"));
        let kernel = b.intern_frame(&FrameSpec {
            address: Some(0xffff_ffff_8100_0000),
            ..FrameSpec::named("kernel")
        });
        for frame in [folded, kernel] {
            let stack = b.intern_stack_path(&[frame]).unwrap();
            b.push_sample(stack, t, 0, 1);
        }
        let profile = Profile::of(b.finish());
        let why = |name| {
            let json: serde_json::Value =
                serde_json::from_str(&profile.assembly_target_json(name)).unwrap();
            assert!(json.get("mapping").is_none(), "{json}");
            json["why"].as_str().unwrap().to_owned()
        };
        let folded = why("folded");
        assert!(
            folded.starts_with("No sample of folded in what is shown has an instruction address")
        );
        let kernel = why("kernel");
        assert!(kernel.starts_with("The addresses of kernel lie in no binary the profile records"));
        assert!(!folded.contains('\n') && !kernel.contains('\n'));
    }

    #[test]
    fn each_instruction_gets_its_formatted_weights_and_the_rest_is_outside() {
        let starts = [0x40e as f64, 0x410 as f64, 0x412 as f64];
        let json: serde_json::Value =
            serde_json::from_str(&profile().assembly_json("work", 0, &starts, 0x416 as f64))
                .unwrap();
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{json}");
        assert_eq!(rows[0]["index"], 1);
        assert_eq!(rows[0]["selfText"], "3.00 ms");
        assert_eq!(rows[0]["selfPct"], "60.0%");
        assert_eq!(rows[0]["selfSamples"], "3");
        assert_eq!(rows[0]["heat"], 1.0);
        assert_eq!(rows[1]["heat"], 0.333_333_333_333);
        assert_eq!(json["hottest"], 1);
        assert_eq!(json["outside"]["selfText"], "1.00 ms");
        assert_eq!(json["summary"], "2 of 3 instructions sampled, 4 samples");
    }
}
