# fitscope: `make demo` trains the seed CNN and prints the step-time report; `make test` runs every
# test. Both install the missing Debian packages first (as root, or through sudo).

PACKAGES := cmake g++ make ninja-build ccache libtorch-dev libgloo-dev libopenblas0-pthread \
            libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev zlib1g-dev
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test bench clean

all: build

deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/tools/fitscope/fitscope train

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	$(BUILD_DIR)/bench/bench_fit_vs_handwritten
	$(BUILD_DIR)/bench/bench_step_accounting
	$(BUILD_DIR)/bench/bench_metrics_cost

clean:
	rm -rf $(BUILD_DIR)
