//! WebAssembly bindings over `prof`'s aggregation core (the `prof-session` crate), for the browser viewer in `web/`.
//!
//! Every number the page shows is computed here by `prof` itself; the JavaScript only draws.
//! Structured results cross the boundary as JSON text (small) or typed arrays (flame layouts,
//! which can hold hundreds of thousands of rectangles).
#![deny(unsafe_code)]

mod asm_view;
mod diff_view;
mod json_out;
mod layout;
mod loading;
mod profile;
mod scope_bars;
mod scope_view;
mod source_view;
mod time;
mod transforms;
mod trees;
mod view;

pub use diff_view::Diff;
pub use layout::FlameLayout;
pub use loading::{wasm_memory_bytes, SessionBytes};
pub use profile::{Profile, SearchResult};
pub use scope_bars::ScopeBars;
pub use time::{StackChartLayout, TimelineData};
pub use trees::{Sandwich, TreeTable};

use wasm_bindgen::prelude::*;

/// The version of `prof` this viewer was built from.
#[wasm_bindgen(js_name = profVersion)]
pub fn prof_version() -> String {
    prof_session::VERSION.to_owned()
}

/// What the page shows while a profile loads: `Fetching 12.3 MiB of 45.6 MiB (27.0%)`, or
/// without the total when it is unknown (0).
#[wasm_bindgen(js_name = loadProgressText)]
pub fn load_progress_text(received: f64, total: f64) -> String {
    use prof_session::aggregate::{format_percent, format_weight};
    use prof_session::session::{SampleType, Unit};
    let bytes = SampleType::new("bytes", Unit::Bytes);
    let (received, total) = (received as u64, total as u64);
    if total == 0 {
        format!("Fetching {}", format_weight(&bytes, received))
    } else {
        format!(
            "Fetching {} of {} ({})",
            format_weight(&bytes, received),
            format_weight(&bytes, total),
            format_percent(received.min(total), total)
        )
    }
}
