# voxgate — the two commands are `make run` and `make test`; both install
# what is missing on a fresh Debian machine first.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# -trimpath keeps the checkout's folder out of what Go compiles, so the build
# cache serves every clone and worktree of the repository alike: without it
# the cgo packages (eSpeak NG, LAME, Opus, FLAC, soxr) are compiled again, and
# cached again, for each folder the repository is cloned into. Exported, so
# the go commands the tests run themselves share it too.
export GOFLAGS := -trimpath $(GOFLAGS)

# The suite's race-built test binaries need a few GiB of scratch space (the
# build cache and go test's work folder); below this much, `make test` clears
# the build cache first and says so, rather than failing mid-run with "no
# space left on device" in the linker.
MIN_FREE_KIB := 8000000

# Debian packages the build, the plugins and the tests need:
#   libespeak-ng-dev, espeak-ng  the offline provider (cgo) and test clips
#   libmp3lame-dev, libsoxr-dev  MP3 encoding and resampling (cgo)
#   libopusenc-dev, libopus-dev  Ogg Opus output (cgo; libopusenc writes the Ogg container)
#   libflac-dev                  FLAC output (cgo)
#   libchromaprint-dev           acoustic fingerprints of answers, for provenance identify (cgo)
#   libopusfile-dev              decoding Ogg Opus to fingerprint it (cgo)
#   libmpg123-dev                MP3 decoding (cgo; gateway/audio/internal/mpg123 says
#                                why not a pure-Go decoder)
#   libebur128-dev               EBU R128 loudness measurement of the loudness field (cgo)
#   sox, ffmpeg                  tests check our WAV/MP3 output with standard tools
#                                (ffmpeg's ebur128 filter judges the loudness field)
#   curl                         the README's examples, which a test runs as written
#   festival, festvox-kallpc16k, another speech engine (a diphone voice and an
#     festvox-us-slt-hts         HTS voice of a person) whose word times are
#                                ground truth for the aligner's tests
#   pkg-config, gcc              cgo
#   nodejs, npm (when missing)   build the dashboard (gateway/edge/ui/web); the public JS
#                                client test (test/jsclient) and the official
#                                OpenAI and ElevenLabs SDKs (test/sdkclients)
#   chromium                     headless browser tests driven from Go with chromedp:
#                                CORS from a page's fetch, and the dashboard
#   postgresql, redis-server     tests start throwaway servers of their own
#                                (internal/pgtest, internal/redistest); no
#                                system service is started or needed
#   protobuf-compiler            protoc, for `make proto` and the test that the
#                                generated plugin protocol is current
#   nginx                        the reference relay of `make bench` (cmd/voxbench runs
#                                the binary itself with a config of its own in a temp
#                                dir; the system service is neither used nor needed)
#   systemd                      systemd-analyze verify checks deploy/voxgate.service
#                                (deploy/unit_test.go); nothing is started under systemd
APT_PACKAGES := gcc pkg-config curl libespeak-ng-dev espeak-ng espeak-ng-data libmp3lame-dev libsoxr-dev libopusenc-dev libopus-dev libflac-dev libebur128-dev libchromaprint-dev libopusfile-dev libmpg123-dev sox libsox-fmt-all ffmpeg festival festvox-kallpc16k festvox-us-slt-hts postgresql redis-server protobuf-compiler chromium nginx systemd

PLUGINS := $(patsubst plugins/%/,%,$(sort $(dir $(wildcard plugins/*/main.go))))

export VOXGATE_BIN_DIR := $(BIN)

.PHONY: all deps build ui run test test-short disk-check bench bench-micro proto proto-tools vet fmt clean

all: build

## deps: install missing system packages (apt-get as root, else sudo)
deps:
	@command -v $(GO) >/dev/null || { echo "Go is not installed: install Go 1.26+ (see README.md)"; exit 1; }
	@missing=""; for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
	command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
		echo "==> installing system packages:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

## build: the dashboard's assets, bin/voxgate, bin/plugins/voxgate-*, and the test plugin
build: deps ui
	@echo "==> building voxgate $(VERSION)"
	@mkdir -p $(BIN)/plugins $(BIN)/testplugins
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/voxgate ./cmd/voxgate
	@for p in $(PLUGINS); do echo "    plugin $$p"; $(GO) build -o $(BIN)/plugins/voxgate-$$p ./plugins/$$p || exit 1; done
	@if [ -d internal/testplugin ]; then $(GO) build -o $(BIN)/testplugins/voxgate-testplugin ./internal/testplugin; fi

## ui: the dashboard (Preact, bundled by esbuild, pinned by its
##     package-lock.json) into gateway/edge/ui/dist, which the binary embeds
UI_WEB := gateway/edge/ui/web
ui: gateway/edge/ui/dist/index.html

gateway/edge/ui/dist/index.html: $(UI_WEB)/node_modules $(UI_WEB)/build.mjs $(wildcard $(UI_WEB)/src/*)
	cd $(UI_WEB) && node build.mjs

$(UI_WEB)/node_modules: $(UI_WEB)/package-lock.json
	cd $(UI_WEB) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## run: build and serve the committed gateway.yaml
run: build
	$(BIN)/voxgate serve --config gateway.yaml --dev-log

## test: the whole suite, as CI runs it, under the race detector. Four test
##       binaries at a time (-p 4; go test's default is one per core): most of
##       them wait on plugin processes, sockets and timeouts more than they
##       compute. The end-to-end packages (test/e2e), the longest, start first.
##       -ldflags=-w leaves DWARF out of the test binaries: a race-built e2e
##       binary links in about 5 s instead of 9 to 10, over a hundred of them
##       on a fresh machine; stack traces keep their names and lines.
test: disk-check build test/jsclient/node_modules test/sdkclients/node_modules
	$(GO) vet ./...
	$(GO) test -race -count=1 -p 4 -timeout 14m -ldflags=-w ./test/e2e/... ./...

# disk-check: room for the race-built test binaries, where go caches builds
# and where go test writes them (TMPDIR); the cache is cleared when short.
disk-check:
	@cache="$$($(GO) env GOCACHE)"; mkdir -p "$$cache"; \
	for d in "$$cache" "$${TMPDIR:-/tmp}"; do \
	  free=$$(df -Pk "$$d" | awk 'NR==2 {print $$4}'); \
	  if [ "$$free" -lt $(MIN_FREE_KIB) ]; then \
	    echo "only $$((free / 1024)) MiB free for $$d; clearing Go's build cache ($$cache) so the test binaries fit"; \
	    $(GO) clean -cache; \
	    free=$$(df -Pk "$$d" | awk 'NR==2 {print $$4}'); \
	    if [ "$$free" -lt $(MIN_FREE_KIB) ]; then \
	      echo "still only $$((free / 1024)) MiB free for $$d: the suite needs about $$(($(MIN_FREE_KIB) / 1024)) MiB; free some space (or point TMPDIR elsewhere) and run make test again"; exit 1; \
	    fi; \
	  fi; \
	done

# The public @speech-sdk/core client, pinned by package-lock.json.
test/jsclient/node_modules: test/jsclient/package-lock.json
	cd test/jsclient && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The official openai and @elevenlabs/elevenlabs-js SDKs, pinned by package-lock.json.
test/sdkclients/node_modules: test/sdkclients/package-lock.json
	cd test/sdkclients && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## bench: the gateway against calling the provider directly and against nginx
##        as the reference relay, on loopback (cmd/voxbench): one table on stdout,
##        every figure in bench-results.json; method and the latest run in BENCHMARKS.md
bench: build
	$(GO) build -o $(BIN)/voxbench ./cmd/voxbench
	$(BIN)/voxbench -bin $(BIN) -out bench-results.json

## bench-micro: the go test micro-benchmarks of the packages
bench-micro: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./gateway/... ./plugins/... ./test/e2e/...

## proto: regenerate the plugin protocol's Go code from sdk/proto/voxgate.proto
proto: proto-tools
	PATH="$(BIN)/tools:$$PATH" $(GO) generate ./sdk/proto

# protoc comes from Debian (deps); its Go plugins are built at the versions
# go.mod pins (its tool block), into bin/tools, so regenerating unchanged
# .proto files gives byte-identical code.
proto-tools: deps
	@mkdir -p $(BIN)/tools
	GOBIN=$(BIN)/tools $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) $(UI_WEB)/node_modules
	find gateway/edge/ui/dist -mindepth 1 ! -name README.md -delete
