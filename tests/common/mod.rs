//! Cases shared by every host the boundary tests run on.

use harness_guard::{in_flight, install_inspect_client_guard, parse_config};
use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen(module = "/tests/fixtures/host.js")]
extern "C" {
    type FakeRegistry;
    #[wasm_bindgen(constructor)]
    fn new() -> FakeRegistry;
    #[wasm_bindgen(js_name = newHost)]
    fn new_host() -> JsValue;
    #[wasm_bindgen(js_name = configWithFunction)]
    fn config_with_function() -> JsValue;
    #[wasm_bindgen(js_name = newSignal)]
    fn new_signal() -> JsValue;
    #[wasm_bindgen(js_name = hasOwn)]
    fn has_own(target: &JsValue, key: &str) -> bool;
    #[wasm_bindgen(js_name = markerOf)]
    fn marker_of(f: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = callQuery)]
    fn call_query(target: &JsValue, platform: &str, agent: &str, signal: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = pendingSize)]
    fn pending_size(registry: &FakeRegistry) -> u32;
    #[wasm_bindgen(js_name = seenThisIs)]
    fn seen_this_is(registry: &FakeRegistry, index: u32, value: &JsValue) -> bool;
    fn answer(target: &JsValue, agent: &str, request_id: &str, resolution: &JsValue) -> JsValue;
}

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn options(deadline_ms: f64) -> JsValue {
    let o = Object::new();
    Reflect::set(&o, &"deadlineMs".into(), &deadline_ms.into()).unwrap();
    o.into()
}

/// The programmatic install; returns its `dispose()`.
fn install(registry: &FakeRegistry, deadline_ms: f64) -> Result<js_sys::Function, JsValue> {
    install_inspect_client_guard(registry.into(), options(deadline_ms), new_host())
}

fn dispose(f: &js_sys::Function) {
    f.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
fn config_errors_cross_as_coded_js_errors() {
    let config = js_sys::JSON::parse(r#"{"inspect":{"deadlineMs":0}}"#).unwrap();
    let err = parse_config(config).unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(get(&err, "code"), "HARNESS_GUARD_INVALID_CONFIG");
    assert_eq!(get(&err, "field"), "inspect.deadlineMs");
    let message = get(&err, "message").as_string().unwrap();
    assert!(message.contains("1..=2147483647"), "{message}");
}

#[wasm_bindgen_test]
fn defaults_come_back_normalized() {
    let c = parse_config(JsValue::UNDEFINED).unwrap();
    assert_eq!(get(&get(&c, "inspect"), "deadlineMs"), 15000);
    assert_eq!(get(&get(&c, "inspect"), "refusalGraceMs"), 1000);
    assert_eq!(get(&get(&c, "inbox"), "mode"), "repair");
}

#[wasm_bindgen_test]
fn a_field_no_copy_can_hold_is_named() {
    let err = parse_config(config_with_function()).unwrap_err();
    assert_eq!(get(&err, "field"), "inspect.deadlineMs");
    let message = get(&err, "message").as_string().unwrap();
    assert!(message.contains("a value of type function"), "{message}");
}

/// `parseConfig` on what `js` evaluates to: the normalized config, or the error's message.
fn parse_js(js: &str) -> Result<JsValue, String> {
    let value = js_sys::Function::new_no_args(&format!("return {js}"))
        .call0(&JsValue::UNDEFINED)
        .unwrap();
    parse_config(value).map_err(|e| get(&e, "message").as_string().unwrap())
}

#[wasm_bindgen_test]
fn the_config_deserializer_reads_what_the_loaders_schema_resolves() {
    // Plain objects read; a cycle past the schema's depth ends.
    let c = parse_js("{ inspect: { deadlineMs: 2000 }, inbox: { mode: 'report' } }").unwrap();
    assert_eq!(get(&get(&c, "inspect"), "deadlineMs"), 2000);
    assert_eq!(get(&get(&c, "inbox"), "mode"), "report");
    let err =
        parse_js("(() => { const o = {}; o.extra = o; return { inspect: o } })()").unwrap_err();
    assert!(err.contains("inspect.extra is an object"), "{err}");
    // Each kind is named in the refusal, at its field.
    for (js, said) in [
        (
            "{ inspect: { deadlineMs: [1] } }",
            "inspect.deadlineMs is a value of type array",
        ),
        (
            "{ inspect: { deadlineMs: new Uint8Array(2) } }",
            "inspect.deadlineMs is a value of type bytes",
        ),
        (
            "{ inspect: { deadlineMs: new Set([1]) } }",
            "inspect.deadlineMs is a value of type Set",
        ),
        // A Proxy, even one whose prototype cannot be asked for, is unreadable.
        (
            "{ inspect: { deadlineMs: new Proxy({}, { getPrototypeOf() { throw 1 } }) } }",
            "inspect.deadlineMs is a value of type unreadable",
        ),
        (
            "{ inspect: { deadlineMs: 2n ** 70n } }",
            "inspect.deadlineMs is a value of type bigint",
        ),
        // What schemastery resolves as no number (a bigint) or as an empty
        // object (a Map) is refused at its field, not run with the defaults.
        (
            "{ inspect: { deadlineMs: 2000n } }",
            "inspect.deadlineMs is a value of type bigint",
        ),
        (
            "{ inbox: new Map([['mode', 'report']]) }",
            "inbox is a value of type Map",
        ),
        (
            "{ inspect: { deadlineMs: 1.5 } }",
            "inspect.deadlineMs is 1.5",
        ),
        ("{ inbox: { mode: 'fix' } }", "inbox.mode is \"fix\""),
    ] {
        let err = parse_js(js).unwrap_err();
        assert!(err.contains(said), "{js}: {err}");
    }
}

#[wasm_bindgen_test]
fn a_registry_without_resolve_is_left_untouched_with_a_warning() {
    let bare = Object::new();
    let query = js_sys::Function::new_no_args("return 1");
    Reflect::set(&bare, &"query".into(), &query).unwrap();
    let host = new_host();
    let inert =
        install_inspect_client_guard(bare.clone().into(), options(10.0), host.clone()).unwrap();
    assert_eq!(
        get(&bare, "query"),
        JsValue::from(query),
        "nothing was patched"
    );
    let warnings = get(&host, "warnings");
    assert!(js_sys::JSON::stringify(&warnings)
        .unwrap()
        .as_string()
        .unwrap()
        .contains("resolveClientQuery"));
    dispose(&inert);
}

#[wasm_bindgen_test]
async fn host_queries_pass_through_with_the_callers_this() {
    let registry = FakeRegistry::new();
    let installed = install(&registry, 1000.0).unwrap();
    let target: JsValue = registry.clone();
    assert!(has_own(&target, "query"), "the wrapper is an own property");
    assert!(get(&marker_of(&get(&target, "query")), "original").is_function());
    let value = JsFuture::from(call_query(&target, "host", "a", &new_signal()))
        .await
        .unwrap();
    assert_eq!(get(&value, "host"), JsValue::TRUE);
    assert!(
        seen_this_is(&registry, 0, &target),
        "this reached the previous method unchanged"
    );
    dispose(&installed);
    assert!(
        !has_own(&target, "query"),
        "restored: the inherited method shows again"
    );
    assert!(!has_own(&target, "resolveClientQuery"));
}

#[wasm_bindgen_test]
async fn a_second_install_wraps_nothing() {
    let registry = FakeRegistry::new();
    let target: JsValue = registry.clone();
    let first = install(&registry, 1000.0).unwrap();
    let wrapper = get(&target, "query");
    let second = install(&registry, 1000.0).unwrap();
    assert_eq!(
        get(&target, "query"),
        wrapper,
        "the second install is inert"
    );
    dispose(&second);
    assert_eq!(
        get(&target, "query"),
        wrapper,
        "disposing the inert one restores nothing"
    );
    dispose(&first);
    assert!(!has_own(&target, "query"));
}

#[wasm_bindgen_test]
async fn a_deadline_rejects_with_a_coded_error_and_clears_the_entry() {
    let registry = FakeRegistry::new();
    let target: JsValue = registry.clone();
    let installed = install(&registry, 20.0).unwrap();
    let err = JsFuture::from(call_query(&target, "client", "a", &new_signal()))
        .await
        .unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(get(&err, "code"), "INSPECT_CLIENT_DEADLINE");
    assert!(get(&err, "message")
        .as_string()
        .unwrap()
        .contains("within 20ms"));
    assert_eq!(
        pending_size(&registry),
        0,
        "the registry's abort path removed the entry"
    );
    let in_flight = in_flight();
    assert_eq!(in_flight.get(0), 0);
    assert_eq!(
        in_flight.get(1),
        JsValue::FALSE,
        "no timer outlives its query"
    );
    dispose(&installed);
}

#[wasm_bindgen_test]
async fn disposal_rejects_flights_at_once() {
    let registry = FakeRegistry::new();
    let target: JsValue = registry.clone();
    let installed = install(&registry, 60_000.0).unwrap();
    let waiting = call_query(&target, "client", "a", &new_signal());
    dispose(&installed);
    let err = JsFuture::from(waiting).await.unwrap_err();
    assert_eq!(get(&err, "code"), "INSPECT_CLIENT_GUARD_DISPOSED");
    assert_eq!(pending_size(&registry), 0);
    assert_eq!(in_flight().get(1), JsValue::FALSE);
}

#[wasm_bindgen_test]
async fn the_deadline_timer_holds_the_process_exactly_while_a_query_waits() {
    let registry = FakeRegistry::new();
    let target: JsValue = registry.clone();
    let installed = install(&registry, 60_000.0).unwrap();
    let waiting = call_query(&target, "client", "a", &new_signal());
    let state = |label: &str| {
        let f = in_flight();
        (
            f.get(0).as_f64().unwrap_or(-1.0),
            f.get(1).as_bool().unwrap_or_default(),
            f.get(2).as_bool().unwrap_or_default(),
            label.to_owned(),
        )
    };
    assert_eq!(
        state("waiting"),
        (1.0, true, true, "waiting".into()),
        "a query waits: the timer is set and holds the process"
    );
    let resolution = js_sys::JSON::parse(r#"{"ok":true,"data":{}}"#).unwrap();
    let accepted = answer(&target, "a", "inspect-1", &resolution);
    assert_eq!(get(&accepted, "accepted"), JsValue::TRUE);
    JsFuture::from(waiting).await.unwrap();
    assert_eq!(
        state("settled"),
        (0.0, false, true, "settled".into()),
        "nothing waits: the timer stays set for the next query, and lets the process go"
    );
    dispose(&installed);
    assert_eq!(
        state("disposed"),
        (0.0, false, false, "disposed".into()),
        "disposal with nothing waiting clears it"
    );
}
