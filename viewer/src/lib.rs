//! WebAssembly bindings over `prof`'s aggregation core, for the browser viewer in `web/`.
//!
//! Every number the page shows is computed here by `prof` itself; the JavaScript only draws.
//! Structured results cross the boundary as JSON text (small) or typed arrays (flame layouts,
//! which can hold hundreds of thousands of rectangles).

mod layout;
mod profile;
mod view;

pub use layout::FlameLayout;
pub use profile::{Profile, SearchResult};

use wasm_bindgen::prelude::*;

/// The version of `prof` this viewer was built from.
#[wasm_bindgen(js_name = profVersion)]
pub fn prof_version() -> String {
    prof::VERSION.to_owned()
}
