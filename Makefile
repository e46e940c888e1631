# nabla — top-level entry points. See README.md.
#   make demo   install deps, build, run the end-to-end demo (as root; DEMO_FLAGS=--quick)
#   make test   install deps, build (warnings as errors under CI), run every test
#   make bench  build and run the benchmarks (ratios against peers, same run)
#   make package        the Debian package, $(BUILD)/nabla_<version>_amd64.deb
#   make package-smoke  install it, run nabla demo --quick from /usr/bin, remove it (root)
BUILD      ?= build
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
WERROR     ?= $(if $(CI),ON,OFF)
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=

.PHONY: all deps build test unit fuzz bench demo package package-smoke format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DNABLA_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The fuzzers for a bounded time (when clang is present), then the unit and
# integration tests (root-labelled tests need root; with NABLA_REQUIRE_ROOT=1
# they fail instead of skipping) with the Debian package installed: the
# demo's acceptance test runs the installed programs, so `nabla demo --quick`
# runs from /usr/bin (scripts/package-smoke.sh; it removes the package
# after). The CTest summary is the output's last block.
test: build
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory package
	bash scripts/package-smoke.sh $(BUILD)/nabla_*_amd64.deb -- \
	  sh -c 'cd $(BUILD) && ctest --output-on-failure -j $(JOBS)'

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

fuzz:
	@if command -v clang++ >/dev/null 2>&1; then \
	  cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
	    -DNABLA_FUZZ=ON -DNABLA_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null && \
	  cmake --build $(FUZZ_BUILD) -j $(JOBS) --target nabla_fuzz_targets && \
	  bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS); \
	else echo "fuzz: clang++ not found, fuzzers not run"; fi

# CPack DEB from the same build, installed under /usr (cmake/NablaPackage.cmake).
package: build
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
	rm -f $(BUILD)/nabla_*.deb
	cd $(BUILD) && cpack -G DEB >/dev/null
	@ls $(BUILD)/nabla_*.deb

package-smoke: package
	bash scripts/package-smoke.sh $(BUILD)/nabla_*_amd64.deb

bench: build
	bash bench/run.sh $(BUILD)

# The end-to-end demo (docs/cli.md, "nabla demo"): needs root for namespaces,
# iptables and NFQUEUE. DEMO_FLAGS passes flags through, e.g. DEMO_FLAGS=--quick.
# It writes the campaign run's HTML report (nabla report) into $(BUILD).
DEMO_FLAGS ?=
demo:
	@if [ "$$(id -u)" -ne 0 ]; then \
	  echo "make demo: nabla demo needs root (network namespaces, iptables, NFQUEUE): run 'sudo make demo'" >&2; \
	  exit 1; fi
	@echo "make demo: installing dependencies and building nabla, nabla-tier and both daemons (the first build takes minutes; log in $(BUILD)/make-demo-build.log)..."
	@mkdir -p $(BUILD)
	@{ bash scripts/install-deps.sh && \
	   cmake -S . -B $(BUILD) -G Ninja -DNABLA_WERROR=$(WERROR) $(CMAKE_FLAGS) && \
	   cmake --build $(BUILD) -j $(JOBS) --target nabla nabla-tier nabla-injectd nabla-sniffd; \
	 } >$(BUILD)/make-demo-build.log 2>&1 || \
	  { tail -n 40 $(BUILD)/make-demo-build.log >&2; echo "make demo: the build failed (log above)" >&2; exit 1; }
	@rm -f $(BUILD)/nabla-demo-report.html
	$(BUILD)/coordinator/nabla demo --report $(abspath $(BUILD))/nabla-demo-report.html $(DEMO_FLAGS)
	@if [ -f $(BUILD)/nabla-demo-report.html ]; then \
	  echo "make demo: report at $(abspath $(BUILD))/nabla-demo-report.html (open it in a browser; it needs no network)"; fi

format:
	find common analysis db injector sniffer loadgen loadd load report tier testbed coordinator tests bench \
	  \( -name '*.cc' -o -name '*.hh' \) -print0 | xargs -0 -r clang-format -i

format-check:
	find common analysis db injector sniffer loadgen loadd load report tier testbed coordinator tests bench \
	  \( -name '*.cc' -o -name '*.hh' \) -print0 | xargs -0 -r clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
