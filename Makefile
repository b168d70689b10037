# tarmac's front door. Every target installs what it needs first
# (scripts/install-deps: Debian packages only, idempotent).
#
#   make demo    run tarmac on a simulated 8-GPU lab (Ctrl-C to stop)
#   make test    build and run every test (unit, integration, e2e)
#   make bench   measure tarmac against its baselines (bench/README.md)
#   make fuzz    build the libFuzzer targets with clang and run each briefly
#   make install PREFIX=/usr/local
#   make package  a .deb (systemd unit, config example, docs) in build/
#   make screenshots  the console's pictures in docs/images, from a simulated
#                lab of five users (root: they run as those users)

BUILD_DIR ?= build
FUZZ_DIR ?= build-fuzz
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
# Tests mostly wait (on agents, browsers, stores): twice as many at once as
# there are cores keeps the cores busy. No test has a time limit of its own.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
FUZZ_SECONDS ?= 20
PREFIX ?= /usr/local

.PHONY: all deps configure build test demo bench fuzz install package clean screenshots

all: build

deps:
	@scripts/install-deps

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) -LE gpu

demo: build
	scripts/demo $(BUILD_DIR)

screenshots: build
	/usr/bin/python3 tests/e2e/web_lab.py $(BUILD_DIR) . docs/images

bench: build
	@scripts/install-deps --bench
	bench/run $(BUILD_DIR)

fuzz: deps
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DTARMAC_BUILD_FUZZ=ON -DTARMAC_BUILD_TESTS=OFF -DTARMAC_BUILD_BENCH=OFF -DTARMAC_UNITY_BUILD=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS)
	fuzz/run $(FUZZ_DIR) $(FUZZ_SECONDS)

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

package: build
	cd $(BUILD_DIR) && cpack -G DEB

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR)
