//! The viewer's files, embedded in the binary at build time: the wasm module and its JS glue
//! (built from `viewer/` by `build.rs`) and the static page from `web/`.

use std::borrow::Cow;

#[derive(rust_embed::RustEmbed)]
#[folder = "$OUT_DIR/pkg"]
struct Pkg;

#[derive(rust_embed::RustEmbed)]
#[folder = "$CARGO_MANIFEST_DIR/../../web"]
struct Web;

/// An embedded file: its bytes and MIME type.
#[derive(Debug)]
pub struct Asset {
    /// The file's content.
    pub data: Cow<'static, [u8]>,
    /// Its `Content-Type`.
    pub mime: &'static str,
}

/// The embedded asset at `path` (relative, e.g. `index.html` or `pkg/prof_viewer.wasm`).
pub fn get(path: &str) -> Option<Asset> {
    let file = match path.strip_prefix("pkg/") {
        Some(rest) => Pkg::get(rest)?,
        None => Web::get(path)?,
    };
    Some(Asset {
        data: file.data,
        mime: mime_for(path),
    })
}

/// The paths of every embedded asset.
pub fn paths() -> impl Iterator<Item = String> {
    Web::iter()
        .chain(Pkg::iter().map(|p| format!("pkg/{p}").into()))
        .map(Cow::into_owned)
}

fn mime_for(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_the_wasm_viewer_are_embedded() {
        let index = get("index.html").expect("web/index.html is embedded");
        assert_eq!(index.mime, "text/html; charset=utf-8");
        let wasm = get("pkg/prof_viewer_bg.wasm").expect("the wasm viewer is embedded");
        assert_eq!(wasm.mime, "application/wasm");
        assert_eq!(&wasm.data[..4], b"\0asm");
        assert!(get("pkg/prof_viewer.js").is_some());
    }

    /// The viewer's module, as the page downloads it, is at most this many bytes. The build is
    /// deterministic (same sources, same tool chain: same bytes), so a change that pulls code
    /// into the module fails here rather than growing the page unseen. It was 715 kB before
    /// the viewer's size work, 110 kB of it twenty copies of the standard stable sort (one per item type and
    /// comparison) that `prof_session::order` made one, and 29 kB serde's buffering for the
    /// internally tagged `TransformSpec`, now read through a plain struct (617 kB). Raise it
    /// only with the reason in the commit; docs/benchmarks.md says what the rest of the module
    /// is. The Scopes view (the scope and task tables, their filters, group by task and
    /// session format 5's tables) added 99 kB (716 kB, its sorts already through
    /// `prof_session::order`): raised for it. Its scope bars on the timeline and in the stack chart
    /// (the spans indexed per thread and depth, the bars of a window, their tooltips) added
    /// 17.7 kB (723.3 to 740.9 kB, their JSON built as values rather than through `json!`'s
    /// serializers): raised for them. Group by scope with its call counts (the scope frames, the
    /// calls per path of scopes, the call tree's Calls texts) added 5.9 kB (738.8 to 744.7 kB,
    /// its maps of types the module already had): raised for it. The call tree in less
    /// memory (the shape's index a hash table of node ids, top-N in two walks) added 5.5 kB
    /// (751.8 kB with all of the above): raised, with 4 kB of room. Task waits (the
    /// session file's `tasks.polls.waited_at` column, the `task_wait` type shown in place of the
    /// samples, the poll tooltip's wait, through the core's one sort rather than two more
    /// instances of the standard one, which would have cost 12 kB) added 8.1 kB (752.5 to
    /// 760.6 kB): raised for it, with 3.4 kB of room. Reading the session file with prof's own
    /// small JSON reader (`prof_session::json`) rather than serde_json's deserializer instances took
    /// it to 717.5 kB, and reading the page's view, transforms and names with it too (no serde
    /// deserializer left in the module) to 683.4 kB, and `Session::select_sample_type`'s own
    /// error type (the viewer showed it through `crate::Error`'s Display, every variant's
    /// message and the IP address formatting with it) to 675.4 kB, and the file reader filling
    /// each struct by field index (no `Option` per field and its drop on every error path) to
    /// 657.0 kB: lowered to just above. Top-N through the core's one sort and the timeline's
    /// runs grouped by a counting sort (no `select_nth_unstable` or unstable sort left) took it
    /// to 635.0 kB: lowered again. The viewer's JSON answers written by its own small writer
    /// (`json_out`), not serde_json's serializers, `Value` and its BTreeMap, took it to 596.2 kB.
    /// The page decompressing gzip files with the browser's `DecompressionStream`, so that the
    /// module links no inflater (miniz_oxide, flate2's reader, crc32 and their tables), took it
    /// to 546.2 kB. The Top functions filter matching ASCII letters in either case, not through
    /// `str::to_lowercase` and its Unicode tables, took it to 525.1 kB. Floats written by the
    /// core's integer-only `fixed`, not core's float formatting (Grisu, Dragon and their
    /// tables), took it to 501.9 kB; its quick path in 128-bit integers (as fast as core's, not
    /// 2.5 times slower) to 502.7 kB; the dropped samples' share in the header
    /// (`aggregate::format_dropped`) to 503.03 kB. The `prof report` command of the view's
    /// selection in the thread selector's tooltip (`Filter::report_options`, `shell_words`)
    /// took it to 507.32 kB; a wall session's default transform (the scheduler folded into the
    /// blocking call, `aggregate::scheduler`, which the page applies as `prof report` does: the
    /// fold, its spec and the specs written back to the page as JSON) added 3.4 kB more
    /// (510.82 kB). The aggregation core moving into its own crate (`prof-session`) added 0.19 kB:
    /// the 24 source paths its panic locations carry are 8 bytes longer each
    /// (`profiler/session/src/` for `profiler/src/`). The session's start time held as
    /// nanoseconds (read from the file's RFC 3339 text, and shown as it) added 5.0 kB
    /// (516.05 kB): raised for it. The viewer's filter chips (their texts from the core), the
    /// counts per thread after every filter and transform, the timeline and stack chart keeping
    /// only the samples every filter keeps (one check with the call tree's), and the Sandwich's
    /// zoomed windows added 5.6 kB (521.62 kB): raised for them. The stack chart laid out in the
    /// timeline's thread order (`aggregate::track_order`, the shown threads picked in its order
    /// rather than sorted, which a sort instance of their own cost 1.3 kB more), a wall sample
    /// lasting the wait it weighs, and the Scopes tab's calls naming their thread's id added
    /// 1.2 kB (522.84 kB): raised for them. The session's early end of sampling
    /// (`meta.sampling_ended`: read from the file, stated with the dropped samples by
    /// `aggregate::format_losses`) added 2.6 kB (525.48 kB): raised for it. The module of each
    /// frame in the hovers (`view::module_name`: its file name in the flame graph's, call
    /// tree's, Sandwich's and stack chart's answers) added 1.0 kB (526.51 kB): raised for it.
    /// The tables' sample counts and module column (each function's module looked up by its
    /// string id) and the stacks the frame menu copies from the Sandwich and the stack chart
    /// added 4.2 kB (530.76 kB): raised for them. The session's `calls` table (the counted
    /// functions of `prof record --calls`, read from the file with the rest) added 2.1 kB
    /// (532.86 kB): raised for it. The Assembly view (`aggregate::function_addresses` and
    /// `instruction_weights`: a function's samples by address, by file offset, and charged to
    /// the instructions `prof serve` read, with their texts) added 11.4 kB (544.29 kB), after
    /// its sums went through the core's one sort rather than a hash map, a `BTreeMap` and a
    /// sort of their own (they had cost 21.1 kB): raised for it. Top functions' Calls column
    /// (`aggregate::counted_by_name`: the counted functions' calls by name, a hash map the
    /// module had not used with `&str` keys) added 2.4 kB (546.71 kB): raised for it. Whether
    /// to offer the Assembly tab at all (`Profile::has_code`: a host, mappings and an address)
    /// added 0.6 kB (547.35 kB): raised for it. Reading the counted functions' timed calls
    /// (`prof record --calls-timed`: a `timed` object in each `calls` row) added 1.1 kB
    /// (548.48 kB): raised for it.
    const WASM_BOUND: usize = 548_600;

    #[test]
    fn the_wasm_viewer_stays_within_its_size_bound() {
        let wasm = get("pkg/prof_viewer_bg.wasm").expect("the wasm viewer is embedded");
        assert!(
            wasm.data.len() <= WASM_BOUND,
            "the viewer's module is {} bytes, past its bound of {WASM_BOUND}",
            wasm.data.len()
        );
    }

    #[test]
    fn unknown_paths_are_not_served() {
        assert!(get("../Cargo.toml").is_none());
        assert!(get("pkg/../../Cargo.toml").is_none());
    }
}
