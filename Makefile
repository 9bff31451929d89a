# The two commands: `make run` and `make test`. Both set the machine up first.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup configure build run test bench clean

setup:
	@scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target skein
	$(BUILD_DIR)/tools/skein serve --demo

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The kernl baseline's packages; without node and npm, skein-bench skips that baseline.
KERNL_DIR := bench/baselines/kernl
.PHONY: bench-deps
bench-deps:
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  echo "bench-deps: no node/npm: skein-bench will skip the kernl baseline"; \
	elif [ ! $(KERNL_DIR)/node_modules/.package-lock.json -nt $(KERNL_DIR)/package-lock.json ]; then \
	  npm ci --prefix $(KERNL_DIR) --no-audit --no-fund || \
	    echo "bench-deps: npm ci failed: skein-bench will skip the kernl baseline"; \
	fi

bench: configure bench-deps
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target skein-bench
	@mkdir -p bench/results
	$(BUILD_DIR)/bench/skein-bench --json bench/results/report.json --plot bench/results

clean:
	rm -rf $(BUILD_DIR)
