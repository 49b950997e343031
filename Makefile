# flamedb — build, run, test, bench.
#
#   make          builds bin/flamedb (installs missing Debian packages first)
#   make run      builds and starts the server on http://localhost:4040, data in ./data
#   make test     unit + integration tests, then all of them again under ASan/UBSan
#   make bench    benchmarks (figures, no pass/fail)
#   make cluster-test  cluster/ against real ClickHouse servers (part of `make test`)
#   make install PREFIX=/usr/local
#
# BUILD selects the object directory, SAN adds sanitizer flags; `make test`
# uses both to build a second, instrumented tree in build-san/.

BUILD   ?= build
BIN     ?= bin
PREFIX  ?= /usr/local
SAN     ?=
# nettle: SHA-256 of --auth tokens (server/auth.c); GnuTLS's own crypto
# library, which libmicrohttpd's TLS already loads into the server.
PKGS    := lmdb libmicrohttpd jansson libzstd zlib libdeflate libprotobuf-c libcurl libxxhash re2 nettle

CC      ?= cc
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread $(SAN)
# C++ only for query/regex.cc, the C face of RE2 (selectors' regexes).
CXX     ?= g++
CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++17 -Wall -Wextra -Werror -pthread $(SAN)
LDFLAGS += -pthread $(SAN)
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) libelf libdw 2>/dev/null) -I$(BUILD)/gen
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -liberty -lstdc++ -lm

LIB_SRC := $(wildcard common/*.c storage/*.c ingest/*.c query/*.c cluster/*.c client/*.c)
LIB_CXX := $(wildcard query/*.cc)
SRV_SRC := $(wildcard server/*.c)
WEB     := $(sort $(wildcard web/*))
# pprof's profile.proto, compiled by protoc-c at build time (issue 6).
PROTO   := $(wildcard proto/*.proto)
PROTO_C := $(PROTO:proto/%.proto=$(BUILD)/gen/%.pb-c.c)
PROTO_H := $(PROTO_C:.c=.h)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(LIB_CXX:%.cc=$(BUILD)/%.o) $(PROTO_C:.c=.o)
SRV_OBJ := $(SRV_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/web_assets.o
TESTS   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
# The agent (issue 4): its own binary, its own libraries.
AGENT_PKGS := libelf libdw libcurl zlib
AGENT_SRC  := $(filter-out agent/main.c,$(wildcard agent/*.c))
# ingest/demangle.c (libiberty's demangler, issue 13) is shared with the server.
AGENT_OBJ  := $(AGENT_SRC:%.c=$(BUILD)/%.o) $(BUILD)/ingest/demangle.o $(BUILD)/client/push.o $(BUILD)/common/gzip.o $(BUILD)/common/utf8.o
AGENT_BIN  := $(if $(wildcard agent/main.c),$(BIN)/flamedb-agent)
AGENT_LIBS  = $(shell pkg-config --libs $(AGENT_PKGS) 2>/dev/null) -liberty -lm
AGENT_TESTS := $(patsubst tests/agent/%.c,$(BUILD)/tests/%,$(wildcard tests/agent/test_*.c))
BENCHES := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/bench_*.c))

.PHONY: all deps run test unit integration doctest browser agent-unit agent-test test-san bench install clean screenshot

all: deps
	@$(MAKE) --no-print-directory $(BIN)/flamedb $(AGENT_BIN) $(NODE_STAMP)

$(BIN)/flamedb-agent: $(BUILD)/agent/main.o $(AGENT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS)

# Agent unit tests (cmocka), linked with the agent's objects.
$(BUILD)/tests/test_agent_%: tests/agent/test_agent_%.c $(AGENT_OBJ) tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(AGENT_OBJ) $(LDFLAGS) $(AGENT_LIBS) -lcmocka

# The agent's demangling cost (issue 13) is measured on its own objects.
$(BUILD)/bench/bench_demangle: bench/bench_demangle.c $(AGENT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(AGENT_OBJ) $(LDFLAGS) $(AGENT_LIBS)

# playwright-core (the browser tests' driver; the browser is Debian's
# chromium) comes from npm, installed by make, never a downloaded browser.
NODE_STAMP := $(if $(wildcard package.json),node_modules/.installed)
node_modules/.installed: package.json $(wildcard package-lock.json)
	@if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; \
	 else npm install --no-audit --no-fund --loglevel=error; fi
	@touch $@

deps:
	@bash scripts/deps.sh

$(BIN)/flamedb: $(SRV_OBJ) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/%.o: %.c $(wildcard */*.h) $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.cc $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(shell pkg-config --cflags re2 2>/dev/null) -c -o $@ $<

# Kept, not treated as intermediate files: every object depends on the header.
.SECONDARY: $(PROTO_C) $(PROTO_H)

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

# every header first: querier.proto imports types.proto
$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c $(PROTO_H)
	$(CC) $(filter-out -Wextra,$(CFLAGS)) $(PKG_CFLAGS) -c -o $@ $<

# The viewer's files are compiled into the binary: no files to ship beside it.
$(BUILD)/gen/embed: scripts/embed.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<

$(BUILD)/gen/web_assets.c: $(BUILD)/gen/embed $(WEB)
	$(BUILD)/gen/embed $(WEB) > $@

$(BUILD)/gen/web_assets.o: $(BUILD)/gen/web_assets.c
	$(CC) $(CFLAGS) -c -o $@ $<

# The token table of --auth (server/auth.c) is tested on its own.
$(BUILD)/tests/test_auth: tests/unit/test_auth.c $(BUILD)/server/auth.o tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(BUILD)/server/auth.o $(LDFLAGS) $(PKG_LIBS) -lcmocka

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJ) tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(PKG_LIBS) -lcmocka

$(BUILD)/bench/%: bench/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(PKG_LIBS)

# The server, and a local agent pushing this machine's profiles to it (when
# the agent is built and perf_event is permitted; if not, the agent says
# why and the server keeps running).  Ctrl-C stops both.
run: all
	@mkdir -p data
	@bash scripts/run.sh $(BIN)/flamedb $(AGENT_BIN)

# Cluster mode (issue 10): cluster/ speaks to ClickHouse over its HTTP
# interface (chclient.c, RowBinary in chrow.c), creates flamedb's tables
# there (chschema.c) and is the store of `flamedb serve --store
# clickhouse=URL` (chfront.c: rows, spool, flusher).  Its unit tests
# (tests/unit/test_chrow.c, test_chspool.c) run in `make unit`; `make cluster-test` starts
# real ClickHouse 18.16 servers and a ZooKeeper on 127.0.0.1
# (tests/cluster/run.sh, driven by the small tests/cluster/chtool.c).
$(BUILD)/tests/chtool: tests/cluster/chtool.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDFLAGS) $(PKG_LIBS)

.PHONY: cluster-test
cluster-test: deps
	@$(MAKE) --no-print-directory $(BUILD)/tests/chtool $(BIN)/flamedb
	@FLAMEDB=$(abspath $(BIN)/flamedb) bash tests/cluster/run.sh $(abspath $(BUILD)/tests/chtool)

# Unit tests, then integration tests against the real binary.
unit: $(TESTS)
	@bash tests/run_unit.sh $(TESTS)

integration: $(BIN)/flamedb
	@bash tests/integration/run.sh $(abspath $(BIN)/flamedb)

# Docs that run (issue 15): every ```sh block of README.md and docs/*.md
# against a fresh server, the answers they show checked (tests/docs/run.sh
# says how); first the harness's own check that it catches a broken doc.
doctest: $(BIN)/flamedb
	@bash tests/docs/selftest.sh $(abspath $(BIN)/flamedb)
	@bash tests/docs/run.sh $(abspath $(BIN)/flamedb)

# Browser tests: the viewer in Debian's chromium, driven by playwright-core;
# then Grafana's flame graph panel drawing flamedb's answer. That panel
# (@grafana/flamegraph, its UI kit, esbuild: ~450 MB) is its own npm package,
# tests/browser/grafana, installed here only, not by `make`.
GRAFANA_STAMP := tests/browser/grafana/node_modules/.installed
$(GRAFANA_STAMP): tests/browser/grafana/package.json tests/browser/grafana/package-lock.json
	@cd tests/browser/grafana && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

browser: $(BIN)/flamedb $(NODE_STAMP) $(GRAFANA_STAMP)
	@if [ -f tests/browser/run.mjs ]; then node tests/browser/run.mjs $(abspath $(BIN)/flamedb); \
	 else echo "browser: no browser tests yet"; fi
	@node tests/browser/auth.mjs $(abspath $(BIN)/flamedb)
	@node tests/browser/grafana_panel.mjs $(abspath $(BIN)/flamedb)

# Agent tests: its unit tests, then tests/agent/run.sh (the agent against
# the real server: sampling accuracy, unwinding, symbols, spool, signals,
# process churn (AGENT_CHURN_SECONDS, default 60), and scripts/run.sh).
agent-unit: $(AGENT_TESTS)
	@if [ -n "$(AGENT_TESTS)" ]; then bash tests/run_unit.sh $(AGENT_TESTS); fi

# docs/screenshot.png, shown in README.md: the viewer on the real profile of
# ../shared/data/system-mix.folded, split by process (tests/browser/screenshot.mjs).
screenshot: $(BIN)/flamedb $(NODE_STAMP)
	node tests/browser/screenshot.mjs $(abspath $(BIN)/flamedb) docs/screenshot.png

agent-test: $(BIN)/flamedb $(AGENT_BIN) agent-unit
	@if [ -n "$(AGENT_BIN)" ]; then \
	   bash tests/agent/run.sh $(abspath $(BIN)/flamedb) $(abspath $(AGENT_BIN)); \
	 else echo "agent-test: no agent yet"; fi

test: deps
	@$(MAKE) --no-print-directory unit integration doctest browser agent-test cluster-test
	@$(MAKE) --no-print-directory test-san
	@$(MAKE) --no-print-directory fuzz-replay

# The whole suite again with AddressSanitizer and UndefinedBehaviorSanitizer,
# and the cluster read path's tests (test_read.sh: the front end's remote
# reader under every endpoint) with an instrumented front end.
test-san:
	@$(MAKE) --no-print-directory BUILD=build-san BIN=build-san/bin \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  unit agent-unit integration
	@CT_FILTER='^test_read:' $(MAKE) --no-print-directory BUILD=build-san BIN=build-san/bin \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  cluster-test

# Fuzzing (issue 12): one libFuzzer harness per parser and decoder in
# tests/fuzz/fuzz_<name>.c, its seed corpus in tests/fuzz/corpus/<name>/,
# the inputs that once crashed it in tests/fuzz/crashes/<name>/
# (tests/fuzz/README.md).  `make fuzz` builds the harnesses with clang's
# libFuzzer (the library compiled with coverage, in build-fuzz/) and runs
# each for FUZZ_SECONDS, one after the other (FUZZ_TARGETS picks some);
# what it finds lands in build-fuzz/.  `make fuzz-replay`, part of `make
# test`, runs every seed and crash input once through the same harnesses
# linked with tests/fuzz/replay.c instead of libFuzzer, with gcc under
# ASan/UBSan (the objects of build-san/), so a fixed crash stays fixed.
FUZZ_SECONDS ?= 60
FUZZ_ALL     := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

.PHONY: fuzz fuzz-bins fuzz-replay fuzz-replay-bins fuzz-clean

fuzz: deps
	@$(MAKE) --no-print-directory BUILD=build-fuzz BIN=build-fuzz/bin CC=clang CXX=clang++ \
	  SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" fuzz-bins
	@bash tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-bins: $(FUZZ_ALL:%=$(BUILD)/fuzz/%)

# The harnesses link the library, and server/auth.c for the --auth inputs
# (the Authorization header, the token file).
FUZZ_OBJ := $(LIB_OBJ) $(BUILD)/server/auth.o

$(BUILD)/fuzz/%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $< $(FUZZ_OBJ) $(LDFLAGS) $(PKG_LIBS)

fuzz-replay:
	@$(MAKE) --no-print-directory BUILD=build-san BIN=build-san/bin SAN="$(FUZZ_SAN)" fuzz-replay-bins
	@bash tests/fuzz/replay.sh build-san/fuzz-replay $(FUZZ_ALL)

fuzz-replay-bins: $(FUZZ_ALL:%=$(BUILD)/fuzz-replay/%)

$(BUILD)/fuzz-replay/%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< tests/fuzz/replay.c $(FUZZ_OBJ) $(LDFLAGS) $(PKG_LIBS)

clean: fuzz-clean
fuzz-clean:
	rm -rf build-fuzz

bench: all $(BENCHES)
	@bash bench/run.sh $(BUILD)/bench $(abspath $(BIN)/flamedb)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN)/flamedb $(AGENT_BIN) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf build build-san bin
