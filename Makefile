# Hestia build, run and test entry points. See README.md.
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# A packager's OAuth clients, built in for accounts without a client_id of
# their own (docs/oauth.md "For packagers"): make dist OAUTH_GOOGLE_CLIENT_ID=…
LDFLAGS += $(if $(OAUTH_GOOGLE_CLIENT_ID),-X main.googleClientID=$(OAUTH_GOOGLE_CLIENT_ID))
LDFLAGS += $(if $(OAUTH_GOOGLE_CLIENT_SECRET),-X main.googleClientSecret=$(OAUTH_GOOGLE_CLIENT_SECRET))
LDFLAGS += $(if $(OAUTH_MICROSOFT_CLIENT_ID),-X main.microsoftClientID=$(OAUTH_MICROSOFT_CLIENT_ID))
WEB_STAMP := web/node_modules/.package-lock.json

.PHONY: all build install dist run web deps test test-go test-web lint fmt bench bench-mail bench-cal bench-tools bench-voice clean eval probe-server

all: build

## deps: check the toolchains; install Node.js/npm from Debian if missing (root only)
deps:
	@command -v $(GO) >/dev/null || { echo "Go is required (https://go.dev/dl), not found in PATH"; exit 1; }
	@command -v npm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq nodejs npm; \
	  else echo "npm is required to build the web UI: install Node.js 20+"; exit 1; fi; }

$(WEB_STAMP): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch $@

## web: build the PWA into web/dist (embedded by the next `make build`)
web: deps $(WEB_STAMP)
	cd web && npm run build

## build: bin/hestia, the daemon and the whole command line (embeds web/dist as last built).
## Static (CGO_ENABLED=0): with cgo the net package's resolver links libc, and loading it and
## starting threads through pthreads cost every one-shot process about 1.5 ms.
## It is linked into bin/.new and installed from there: the linker writes through a shared
## mapping, and a file written so started 0.3-0.5 ms slower each time (Linux 6.18, ext4) than
## the same bytes written by install(1), as an installed or a freshly read binary is; install
## also replaces a binary that is running instead of failing.
build:
	@mkdir -p bin/.new
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/.new/hestia ./cmd/hestia
	@install -m 0755 bin/.new/hestia bin/hestia
	@rm -rf bin/.new

## install: build the web UI and the binary, then install bin/hestia into $(PREFIX)/bin
## (default ~/.local/bin) with scripts/install.sh, which says whether that is on PATH
PREFIX ?= $(HOME)/.local
install: web build
	PREFIX="$(PREFIX)" scripts/install.sh bin/hestia

## dist: release tarballs in dist/ for DIST_TARGETS, each a static binary with the web UI
## embedded (built first), README, LICENSE and config.example.toml when present, and
## install.sh; plus SHA256SUMS. `make dist DIST_TARGETS=darwin/arm64` builds one.
DIST_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
dist: web
	@rm -rf dist && mkdir -p dist
	@set -e; for t in $(DIST_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; name=hestia-$(VERSION)-$$os-$$arch; d=dist/$$name; \
	  mkdir -p $$d; \
	  echo "dist: $$name"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $$d/hestia ./cmd/hestia; \
	  for f in README.md LICENSE config.example.toml; do if [ -f $$f ]; then cp $$f $$d/; fi; done; \
	  cp scripts/install.sh $$d/; \
	  tar -C dist -czf dist/$$name.tar.gz $$name; rm -rf $$d; \
	done
	@cd dist && if command -v sha256sum >/dev/null; then sha256sum *.tar.gz; else shasum -a 256 *.tar.gz; fi > SHA256SUMS
	@ls -l dist

## run: install what is needed, build UI and binary, start the daemon
run: web build
	./bin/hestia serve

## test: the whole test suite (Go, then the web UI's unit and browser tests)
test: test-go test-web

test-go:
	$(GO) vet ./...
	$(GO) test -timeout 25m ./...

test-web: deps $(WEB_STAMP)
	cd web && npm run typecheck && npm test && npm run build && npm run e2e

## eval: the evaluation suite (internal/eval). With EVAL_BASE_URL and EVAL_MODEL (and EVAL_PROVIDER,
## EVAL_API_KEY) it runs against that endpoint; without, with the scripted model, as CI does.
## The JSON report goes to EVAL_REPORT (default bin/eval-report.json).
EVAL_REPORT ?= bin/eval-report.json
eval:
	@if [ -n "$(EVAL_BASE_URL)" ]; then \
	  $(GO) run ./cmd/hestia eval --base-url "$(EVAL_BASE_URL)" --model "$(EVAL_MODEL)" \
	    --provider "$${EVAL_PROVIDER:-openai}" --api-key "$(EVAL_API_KEY)" --json "$(EVAL_REPORT)"; \
	else \
	  mkdir -p $(dir $(EVAL_REPORT)); \
	  HESTIA_EVAL_REPORT=$(abspath $(EVAL_REPORT)) $(GO) test -count=1 -v -run '^TestScriptedSuite$$' ./internal/eval >$(EVAL_REPORT).log 2>&1; s=$$?; \
	  grep -E '^(---|ok|FAIL|PASS)|eval_test.go' $(EVAL_REPORT).log; exit $$s; \
	fi

## probe-server: the end-to-end tests against a real llama-server serving the probe model
## (scripts/probe-server.sh sets it up in $$HESTIA_PROBE_CACHE, default ~/.cache/hestia-probe)
probe-server:
	scripts/probe-server.sh test

## bench: the performance benchmarks (not part of `make test`)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-tools: the tool definitions a chat's first request sends, every connector configured
## (bytes, ~tokens at 4 chars/token, and Qwen3 tokens with its chat template when the probe-model
## tokenizer is at hand: PROBE_TOKENIZER, default ~/.cache/hestia-probe/deps/tokenizer, + python3-jinja2)
PROBE_MODEL ?= ../shared/tools/probe-model
bench-tools:
	@mkdir -p bin
	HESTIA_TOOLS_DUMP=$(CURDIR)/bin/tools-dump.json $(GO) test -count=1 -run '^TestFirstRequestToolTokens$$' -v ./internal/app
	@tok=$${PROBE_TOKENIZER:-$$HOME/.cache/hestia-probe/deps/tokenizer}; \
	if [ -f "$$tok/tokenizer.json" ] && [ -f "$(PROBE_MODEL)/qwentok.py" ] && python3 -c 'import jinja2' 2>/dev/null; then \
	  python3 scripts/tool-tokens.py bin/tools-dump.json "$$tok" "$(PROBE_MODEL)"; \
	else echo "Qwen3 token count skipped: needs $$tok/tokenizer.json ($(PROBE_MODEL)/setup-deps.sh tokenizer), $(PROBE_MODEL)/qwentok.py and python3-jinja2"; fi

## bench-cal: `hestia cal agenda` against `khal list` on one generated vdir (needs khal)
bench-cal:
	scripts/bench-cal-khal.sh $(BENCH_CAL_N)

## bench-mail: Hestia's mail mirror side by side with notmuch and mu (when installed) on a
## synthetic Maildir of BENCH_MAIL_N messages; prints the comparison table (not part of `make test`)
BENCH_MAIL_N ?= 100000
BENCH_CAL_N ?= 5000
bench-mail: build
	$(GO) run ./internal/mail/mailbench/benchmail -hestia bin/hestia -n $(BENCH_MAIL_N)

## bench-voice: voice mode's latency from the end of the user's speech to the first audio of the
## reply, split into VAD, STT, model first token and TTS first chunk, with the scripted model and
## fake speech servers; prints the pipeline's own overhead against its 150 ms budget (BENCH_VOICE_N runs)
BENCH_VOICE_N ?= 20
bench-voice:
	HESTIA_BENCH_VOICE=$(BENCH_VOICE_N) $(GO) test -count=1 -run '^TestLatencyBudget$$' -v ./internal/voice

fmt:
	gofmt -w $$(git ls-files '*.go')

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

clean:
	rm -rf bin dist web/node_modules
	find web/dist -mindepth 1 ! -name .keep -delete 2>/dev/null || true
