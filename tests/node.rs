//! Boundary tests under Node (`wasm-bindgen-test-runner`): patching, `this`, timers, coded errors.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;
