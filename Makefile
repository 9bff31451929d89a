# The two commands: `make run` and `make test`. Both set the machine up first.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup configure build run test bench clean san-configure test-asan test-tsan fuzz fuzz-build fuzz-ci fuzz-regressions

setup:
	@scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target skein
	$(BUILD_DIR)/tools/skein serve --demo

# bench-deps: the benchmark's smoke test runs the kernl baseline too. After ctest,
# the count of tests it skipped (exit 77: a prerequisite missing, each saying
# which), read from its own "did not run" list; make exits with ctest's status.
test: build ui-test-deps mcp-test-deps bench-deps
	@scripts/check-registered.sh $(BUILD_DIR)
	@cd $(BUILD_DIR) && mkdir -p Testing && \
	  { ctest --output-on-failure -j $(JOBS); echo $$? >Testing/make-test.rc; } | tee Testing/make-test.log; \
	  awk '/^The following tests did not run:/ { list = 1; next } list && /^$$/ { list = 0 } \
	    list && / \(Skipped\)$$/ { n++ } END { print "skipped: " n + 0 " test(s)" }' Testing/make-test.log; \
	  exit $$(cat Testing/make-test.rc || echo 1)

# npm packages pinned by a lock file: `npm ci` in $(1) when the lock is newer than
# what is installed. The pins run on Debian 12's node 18 and npm 9 (packages.txt);
# tests/mcp and the kernl baseline override the MCP SDK's @hono/node-server to 1.x
# (2.x wants node 20; the SDK takes either).
# Never fails the build: without node and npm, or when npm ci fails, $(2) is
# skipped (each test says so with a hint).
define npm_ci
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  echo "$@: no node/npm: $(2) will be skipped"; \
	elif [ ! $(1)/node_modules/.package-lock.json -nt $(1)/package-lock.json ]; then \
	  npm ci --prefix $(1) --no-audit --no-fund || echo "$@: npm ci failed: $(2) will be skipped"; \
	fi
endef

# The kernl baseline's packages (skein-bench).
.PHONY: bench-deps
bench-deps:
	$(call npm_ci,bench/baselines/kernl,the kernl baseline of skein-bench)

# The /ui viewer's browser test (tests/ui): playwright-core driving the system's
# chromium (packages.txt).
.PHONY: ui-test-deps
ui-test-deps:
	$(call npm_ci,tests/ui,the /ui browser test)

# The MCP conformance test (tests/mcp): the official TypeScript SDK's client.
.PHONY: mcp-test-deps
mcp-test-deps:
	$(call npm_ci,tests/mcp,the MCP SDK conformance test)

# The report: figures and charts in bench/results (not committed), and the page
# docs/performance.md (committed), whose hand-written notes the run keeps.
bench: configure bench-deps
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target skein-bench
	@mkdir -p bench/results
	$(BUILD_DIR)/bench/skein-bench --json bench/results/report.json --plot bench/results \
	  --markdown docs/performance.md

# Sanitizers. ASan + UBSan and the libFuzzer targets share one clang 14 build in
# build-san: the whole suite runs there (except the benchmark's smoke test, so
# skein-bench is not built: its scale workload reads RSS and expects to touch 5000
# thread actors within idle_passivate_ms, which ASan's shadow memory and slowdown
# make false; tests that SIGKILL a child stretch their windows under
# SKEIN_UNDER_SANITIZER), and `make fuzz` runs its fuzz targets. One build, not a
# g++ one for the suite and a clang one for the fuzzers: clang compiles the
# sanitized code in ~0.42x g++'s time, and CI pays for the library once. The
# coverage instrumentation libFuzzer needs (fuzzer-no-link) is on for every
# object; the suite's executables carry it unused. UBSan's `function` check is
# left out: clang 14 cannot emit its prologue data for some Asio code ("Cannot
# represent a difference across sections"). assert() stays on (no NDEBUG): the
# invariants the code asserts are checked on every test. The actor and runtime
# tests also run under TSan (below).
# -g1 (line tables, no locals): full stack traces at a fraction of -g's compile
# and link time and binary size (each of the ~300 processes the CLI test starts
# maps the binary). TSan keeps -g: it builds two test executables, not the
# suite, and full debug information gives its reports their richest stacks.
# -no-pie for the sanitized executables: a PIE binary of that size (~190 MB of
# data, mostly sanitizer metadata) spent most of each start in the dynamic loader
# applying relative relocations, page by page — about 2.5x the start of the same
# binary linked at a fixed address, paid by each of the suite's ~500 test
# processes and the CLI test's ~300 children.
SAN_DIR := build-san
SAN_FLAGS := -fno-omit-frame-pointer -g1
UBSAN_ENV := UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(CURDIR)/tests/ubsan.supp
SAN_ENV := $(UBSAN_ENV) \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=7:suppressions=$(CURDIR)/tests/tsan.supp"
TSAN_TESTS ?= actors_test|runtime_test

san-configure: setup
	@cmake -S . -B $(SAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKEIN_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function $(SAN_FLAGS)" \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_EXE_LINKER_FLAGS="-no-pie" \
	  -DSKEIN_BUILD_BENCH=OFF >/dev/null

test-asan: san-configure
	@$(SAN_ENV) cmake --build $(SAN_DIR) -j $(JOBS)
	@scripts/check-registered.sh $(SAN_DIR)
	@cd $(SAN_DIR) && $(SAN_ENV) SKEIN_UNDER_SANITIZER=asan ctest --output-on-failure -j $(JOBS) -E '^bench: '

# TSan: the actor and runtime tests, built with g++ (TSAN_CXX) in build-tsan and
# linked against CAF built with TSan too (scripts/caf-tsan.sh: Debian's
# libcaf_core.so is not instrumented, and TSan would take every message handoff
# for a race). tests/tsan.supp says what it silences (RocksDB, CAF's teardown)
# and why. That CAF build takes ~10 minutes on 2 cores, so it is cached outside
# the clone (CI starts from a fresh one on the same machine, as root):
# CAF_TSAN_CACHE, under which the script keys each build by CAF's version and
# the compiler's, so that a build made by another compiler is never linked. Not
# writable (not root)? Give another, e.g. make test-tsan
# CAF_TSAN_CACHE=$HOME/.cache/skein/caf-tsan. `make clean` leaves the cache.
TSAN_CXX ?= g++
CAF_TSAN_CACHE ?= /var/cache/skein/caf-tsan-0.17.6
test-tsan: setup
	@caf=$$(JOBS=$(JOBS) CXX=$(TSAN_CXX) scripts/caf-tsan.sh $(CAF_TSAN_CACHE)) && \
	  $(TSAN_ENV) cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=$(TSAN_CXX) \
	  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer -g" -DCAF_INCLUDE_DIR=$$caf/include \
	  -DCAF_CORE_LIBRARY=$$caf/lib/libcaf_core.so -DCAF_IO_LIBRARY=$$caf/lib/libcaf_io.so \
	  -DCAF_OPENSSL_LIBRARY=$$caf/lib/libcaf_openssl.so >/dev/null
	@$(TSAN_ENV) cmake --build build-tsan -j $(JOBS) --target actors_test runtime_test
	@scripts/check-registered.sh build-tsan $(subst |, ,$(TSAN_TESTS))
	@cd build-tsan && $(TSAN_ENV) SKEIN_UNDER_SANITIZER=tsan ctest --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS)):'

# libFuzzer targets (tests/fuzz), built in the sanitizer build above. `make fuzz`
# runs each target for FUZZ_RUNS executions; `make fuzz-ci` runs each for
# FUZZ_SECONDS, two targets at a time (one per core: libFuzzer runs one thread).
FUZZ_RUNS ?= 1000000
FUZZ_SECONDS ?= 60
FUZZ_DIR := $(SAN_DIR)

fuzz-build: san-configure
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target skein_fuzz

fuzz: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_DIR) runs $(FUZZ_RUNS)

fuzz-ci: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_DIR) seconds $(FUZZ_SECONDS)

fuzz-regressions: fuzz-build
	@cd $(FUZZ_DIR) && ctest --output-on-failure -R '^fuzz:'

clean:
	rm -rf $(BUILD_DIR) $(SAN_DIR) build-tsan
