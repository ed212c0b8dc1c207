# fitscope: `make demo` trains the seed CNN and prints the step-time report; `make test` runs every
# test. Both install the missing Debian packages first (as root, or through sudo).

PACKAGES := cmake g++ make ninja-build ccache libtorch-dev libgloo-dev libopenblas0-pthread iproute2 \
            libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev zlib1g-dev \
            python3-torch python3-torchvision chromium pkg-config libturbojpeg0-dev libpng-dev \
            protobuf-compiler libprotobuf-dev libtomlplusplus-dev clang libclang-rt-dev libtcmalloc-minimal4
# clang compiles a unit that includes the torch headers ~4x faster than GCC: its precompiled header keeps
# the template instantiations (-fpch-instantiate-templates) that GCC redoes in every unit (docs/decisions.md,
# "Build speed"). The tree builds with either: CXX_COMPILER=g++ for GCC.
CXX_COMPILER ?= clang++
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

FUZZ_PACKAGES := clang libclang-rt-dev protobuf-compiler libprotobuf-dev
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := idx cifar10 csv image checkpoint tfrecord tar

ASAN_DIR ?= build-asan
ASAN_TEST_SHARDS ?= 4
ASAN_OPTIONS_TEST := detect_leaks=1:alloc_dealloc_mismatch=0

LIBTORCH2_PACKAGES := debootstrap

.PHONY: all deps fuzz-deps install-packages configure build demo test build-asan test-asan bench fuzz-build fuzz clean gpu-kit \
        test-libtorch2 libtorch2-prepare libtorch2-build cuda-check

all: build

deps:
	@$(MAKE) --no-print-directory install-packages WANTED="$(PACKAGES)"

fuzz-deps:
	@$(MAKE) --no-print-directory install-packages WANTED="$(FUZZ_PACKAGES)"

install-packages:
	@missing=""; \
	for p in $(WANTED); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_CXX_COMPILER=$(CXX_COMPILER)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/tools/fitscope/fitscope train

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The library, the CLI and their unit and CLI tests built with AddressSanitizer + UndefinedBehaviorSanitizer
# (-O1, line tables) in $(ASAN_DIR), run through ctest: each test binary as ASAN_TEST_SHARDS processes
# (GoogleTest's sharding), every test run, since each process that loads libtorch under ASan spends
# ~2.5 s starting and stopping. libtorch is not instrumented: its allocations are
# checked where our code frees or reads them; its leaks at exit and new/delete pairs are its own
# (tests/sanitizers/lsan.supp). NDEBUG as libtorch's own release build has it: its headers change a
# class's members and checks with it (RecordFunction's inputs_valid_, read by the layer probe).
build-asan: deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_CXX_COMPILER=$(CXX_COMPILER) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1 -DNDEBUG" \
	  -DFITSCOPE_SANITIZE=address,undefined -DFITSCOPE_BUILD_EXAMPLES=OFF -DFITSCOPE_BUILD_BENCH=OFF \
	  -DFITSCOPE_TEST_SHARDS=$(ASAN_TEST_SHARDS)
	cmake --build $(ASAN_DIR) -j $(JOBS)

test-asan: build-asan
	ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

bench: build
	$(BUILD_DIR)/bench/bench_thread_policy
	$(BUILD_DIR)/bench/bench_fit_vs_handwritten
	$(BUILD_DIR)/bench/bench_step_accounting
	$(BUILD_DIR)/bench/bench_metrics_cost
	$(BUILD_DIR)/bench/bench_data_pipeline
	$(BUILD_DIR)/bench/bench_checkpoint_cost
	$(BUILD_DIR)/bench/bench_async_callbacks
	$(BUILD_DIR)/bench/bench_precision
	/usr/bin/python3 bench/image_loading.py $(BUILD_DIR)/tools/fitscope/fitscope $(BUILD_DIR)/bench/bench_image_loading
	$(BUILD_DIR)/bench/bench_distributed
	/usr/bin/python3 bench/torchscript_vs_python.py $(BUILD_DIR)/tools/fitscope/fitscope

# The device kit: the build's dependencies besides libtorch, unpacked into .gpu-kit for a machine with
# no apt (the lent GPU machine: bench/device_check.sh builds from it).
gpu-kit:
	tools/gpu-kit.sh .gpu-kit

# The tree built and every test run against Debian 13's libtorch 2.6: a trixie chroot made with debootstrap
# (cached in /var/cache/fitscope/trixie-chroot, FITSCOPE_TRIXIE_CHROOT) holds the compiler, CMake, ninja,
# libtorch-dev and the tests' run-time needs; the other build dependencies come from the device kit alone
# (tools/test-libtorch2.sh; build-libtorch2/).
# `make libtorch2-build` makes the chroot and the kit and builds the tree in it, without testing (CI does
# it in the background, at the lowest priority, while its other stages run).
test-libtorch2: libtorch2-prepare
	tools/test-libtorch2.sh run

libtorch2-prepare:
	@$(MAKE) --no-print-directory install-packages WANTED="$(LIBTORCH2_PACKAGES)"
	@[ -d .gpu-kit/usr ] || $(MAKE) --no-print-directory gpu-kit
	tools/test-libtorch2.sh prepare

libtorch2-build: libtorch2-prepare
	nice -n 19 tools/test-libtorch2.sh build

# The files compiled only where libtorch has CUDA, compiled here without a GPU (syntax only) against
# Debian 13's libtorch 2.6 with CUDA and NVIDIA's headers, in the chroot of test-libtorch2
# (tools/cuda-syntax-check.sh; headers cached in /var/cache/fitscope/cuda-headers).
cuda-check:
	@[ -d .gpu-kit/usr ] || $(MAKE) --no-print-directory gpu-kit
	tools/cuda-syntax-check.sh

# libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) of the IDX, CIFAR-10 and CSV
# parsers, the TFRecord framing and tf.train.Example parser, and the image header checks and decoders
# (libtorch-free sources), and of checkpoint decoding (linked with libtorch; its unpickler leaks
# on some refused inputs, so leak detection is off), each run for FUZZ_SECONDS from the seed corpus in
# tests/fuzz/corpus; libFuzzer prints the executions it ran.
FUZZ_SOURCES_idx := src/data/formats/idx_format.cpp
FUZZ_SOURCES_cifar10 := src/data/formats/cifar10_format.cpp
FUZZ_SOURCES_csv := src/data/formats/csv_format.cpp
FUZZ_SOURCES_image := src/data/formats/image_codec.cpp -lturbojpeg -lpng
FUZZ_SOURCES_checkpoint := src/checkpoint/training_state.cpp src/checkpoint/pickle_archive.cpp src/checkpoint/checkpoint_file.cpp \
  src/io/buffered_append.cpp -ltorch -ltorch_cpu -lc10 -lz
# the TFRecord framing and the tf.train.Example parser, with the Example messages generated into
# $(FUZZ_DIR) by protoc first (FUZZ_PREPARE_<target> runs before a target's compile)
FUZZ_PREPARE_tfrecord := protoc --proto_path=proto --cpp_out=$(FUZZ_DIR) proto/tf_example.proto;
FUZZ_SOURCES_tfrecord := src/data/formats/tfrecord_format.cpp src/data/formats/tf_example.cpp $(FUZZ_DIR)/tf_example.pb.cc -I$(FUZZ_DIR) \
  -lprotobuf -lz
# the tar reader (ustar, GNU and pax headers) and the grouping of members into WebDataset samples
FUZZ_SOURCES_tar := src/data/formats/tar_format.cpp
# one rule per target, so that `make -j N fuzz` builds and runs N at a time (each fuzzer is one thread);
# a fuzzer is rebuilt when a source, header or proto file of the tree is newer
FUZZ_INPUTS := $(shell find include src proto tests/fuzz -name '*.[ch]pp' -o -name '*.proto')
fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/%_fuzz)
$(FUZZ_DIR)/%_fuzz: $(FUZZ_INPUTS) | fuzz-deps
	@mkdir -p $(FUZZ_DIR)
	@$(FUZZ_PREPARE_$*) clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Iinclude tests/fuzz/$*_fuzz.cpp $(FUZZ_SOURCES_$*) -o $(FUZZ_DIR)/$*_fuzz

fuzz: $(FUZZ_TARGETS:%=fuzz-run-%)
fuzz-run-%: $(FUZZ_DIR)/%_fuzz
	@rm -rf $(FUZZ_DIR)/corpus-$* && cp -r tests/fuzz/corpus/$* $(FUZZ_DIR)/corpus-$*
	@echo "== fuzzing $* for $(FUZZ_SECONDS) s"
	@ASAN_OPTIONS=detect_leaks=$(if $(filter checkpoint,$*),0,1) $(FUZZ_DIR)/$*_fuzz -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=16384 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/$*- \
	  $(FUZZ_DIR)/corpus-$* > $(FUZZ_DIR)/$*.log 2>&1 || { tail -40 $(FUZZ_DIR)/$*.log; exit 1; }
	@grep -E "^Done|number_of_executed_units" $(FUZZ_DIR)/$*.log | sed "s/^/$*: /"

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) $(ASAN_DIR)
