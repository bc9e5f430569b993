//! Pure functions over a [`Session`](crate::session::Session): call tree, top-N, flame graph
//! layout, filters, transforms and diff. No I/O and no globals, so the same code runs in the
//! command line, in tests and in the browser (wasm32).
