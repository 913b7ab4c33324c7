//! harness-guard: guards for the DeepSeek Harness cordis host, compiled to WebAssembly.
//!
//! Two failures wedge or kill agent sessions, and this crate guards both:
//! `platform: "client"` inspect queries that no page answers (a deadline, the
//! page's refusal surfaced, an unbound agent refused), and inbox entries that
//! are not messages (repaired, quarantined or reported at the claim).
//!
//! The pure core ([`config`], [`flights`], [`inbox`], [`ledger`], [`error`]) works
//! on plain Rust types and is tested natively. The boundary (`interop`) patches
//! the live host objects; the `#[wasm_bindgen]` exports below only parse their
//! inputs, call into it and map errors to coded JavaScript `Error`s.
//!
//! ```js
//! // From JavaScript (the package's `guard` entry point):
//! // const dispose = installInspectClientGuard(ctx.cordisInspect, { deadlineMs: 15000 })
//! ```
#![deny(missing_docs, missing_debug_implementations)]

pub mod config;
pub mod echo;
pub mod error;
pub mod flights;
pub mod inbox;
pub mod ledger;
pub mod throttle;

#[cfg(target_arch = "wasm32")]
mod interop;

#[cfg(target_arch = "wasm32")]
pub use exports::*;

#[cfg(target_arch = "wasm32")]
mod exports {
    use std::cell::RefCell;
    use std::rc::Rc;

    use wasm_bindgen::prelude::*;

    use crate::config::{self, Config};
    pub use crate::interop::Installation;
    use crate::interop::{self, to_js_error};
    use crate::ledger::{InspectReport, Ledger, Violation};

    /// Validate the plugin config; returns it normalized with every default filled in.
    /// An invalid value throws an `Error` with `code: 'HARNESS_GUARD_INVALID_CONFIG'`
    /// and `field`, naming the field, the value and the allowed range.
    #[wasm_bindgen(js_name = parseConfig)]
    pub fn parse_config(raw: JsValue) -> Result<JsValue, JsValue> {
        let config = config::parse(&interop::raw_config(&raw)).map_err(|e| to_js_error(&e))?;
        Ok(normalized(&config))
    }

    fn normalized(c: &Config) -> JsValue {
        let json = format!(
            r#"{{"inspect":{{"enabled":{},"deadlineMs":{},"refusalGraceMs":{}}},"inbox":{{"enabled":{},"mode":"{}","previewChars":{}}}}}"#,
            c.inspect.enabled,
            c.inspect.deadline_ms,
            c.inspect.refusal_grace_ms,
            c.inbox.enabled,
            c.inbox.mode.as_str(),
            c.inbox.preview_chars
        );
        js_sys::JSON::parse(&json).unwrap_or(JsValue::UNDEFINED)
    }

    /// A wasm class over a shared [`Ledger`]: the guard records into it, the
    /// plugin's service reads it.
    macro_rules! ledger_class {
        ($class:ident, $record:ty, $records:ident, $serves:literal, $counts:literal) => {
            #[doc = concat!("The records `", $serves, "` serves.")]
            #[wasm_bindgen]
            #[derive(Debug, Default)]
            pub struct $class(Rc<RefCell<Ledger<$record>>>);

            #[wasm_bindgen]
            impl $class {
                /// An empty ledger.
                #[wasm_bindgen(constructor)]
                pub fn new() -> Self {
                    Self::default()
                }
                /// Copies of the kept records, oldest first.
                pub fn $records(&self) -> JsValue {
                    self.0
                        .try_borrow()
                        .map_or(JsValue::NULL, |l| interop::to_js_list(l.records()))
                }
                #[doc = concat!("`", $counts, "`.")]
                pub fn counts(&self) -> JsValue {
                    self.0
                        .try_borrow()
                        .map_or(JsValue::NULL, |l| interop::to_js(l.counts()))
                }
                /// Forget the records and counts; the guard stays installed.
                pub fn reset(&self) {
                    if let Ok(mut l) = self.0.try_borrow_mut() {
                        l.reset();
                    }
                }
            }
        };
    }

    ledger_class!(
        InspectLedger,
        InspectReport,
        reports,
        "inspectClientGuard",
        "{ deadline, refused, unboundAgent, disposed }"
    );
    ledger_class!(
        InboxLedger,
        Violation,
        violations,
        "inboxInputGuard",
        "{ repaired, quarantined, observed }"
    );

    /// Install the inspect guard on a registry (raw, or any cordis read of it).
    ///
    /// `options` is `{ deadlineMs?, refusalGraceMs? }` (validated as the config is);
    /// `hooks` is `{ on(event, listener) → dispose, warn?(text), onReport?(report) }`.
    /// A registry without `query` and `resolveClientQuery` throws `HARNESS_GUARD_HOST_SHAPE`
    /// and is left untouched. Installing on an already guarded registry installs nothing.
    #[wasm_bindgen(js_name = installInspectGuard)]
    pub fn install_inspect_guard(
        registry: JsValue,
        options: JsValue,
        ledger: &InspectLedger,
        hooks: JsValue,
    ) -> Result<Installation, JsValue> {
        let config = config::parse_inspect_options(&interop::raw_config(&options))
            .map_err(|e| to_js_error(&e))?;
        interop::install_inspect(&registry, config, ledger.0.clone(), &hooks)
            .map_err(|e| to_js_error(&e))
    }

    /// Install the inbox guard. `options` is the `inbox` config section; `hooks` is
    /// `{ on(event, listener, options) → dispose, warn?(text), createUserMessage }`.
    #[wasm_bindgen(js_name = installInboxGuard)]
    pub fn install_inbox_guard(
        options: JsValue,
        ledger: &InboxLedger,
        hooks: JsValue,
    ) -> Result<Installation, JsValue> {
        let raw = config::Raw::Object(vec![("inbox".into(), interop::raw_config(&options))]);
        let config = config::parse(&raw).map_err(|e| to_js_error(&e))?;
        interop::install_inbox(config.inbox, ledger.0.clone(), &hooks).map_err(|e| to_js_error(&e))
    }

    /// The object under `Symbol.for('cordis.original')`, else the value itself.
    #[wasm_bindgen(js_name = originalOf)]
    pub fn original_of(value: JsValue) -> JsValue {
        interop::original_of(&value)
    }
}
