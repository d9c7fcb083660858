# Arbor — the two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := FuzzFileOpen FuzzDecode FuzzOperations FuzzContext FuzzPredicate FuzzGTFS FuzzInspect
# The fuzz package builds in the debug configuration; its copies of Arbor's modules ask for -O,
# ASan and libFuzzer's coverage themselves (fuzz/Package.swift), so swift-syntax and the @Entity
# macro plugin build plainly.
FUZZ_FLAGS := --scratch-path ../.build-fuzz

.PHONY: deps build test tsan fuzz docs demo bench clean

# Installs the system packages the build needs when they are missing (Debian/Ubuntu, as root or via sudo).
deps:
	@if ! pkg-config --exists liblz4 2>/dev/null; then \
		echo "Installing liblz4-dev and pkg-config..."; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liblz4-dev pkg-config; \
	fi

build: deps
	swift build

# Runs every test; fails when a test fails or when no test ran.
test: deps
	swift build --build-tests
	set -o pipefail; swift test 2>&1 | tee .build/test-output.txt
	@grep -Eq 'Test run with [1-9][0-9]* tests? .*passed' .build/test-output.txt || { echo "error: no Swift Testing tests ran"; exit 1; }

# Builds the DocC documentation of Arbor and ArborEngine; any documentation warning fails.
docs: deps
	swift package --disable-sandbox generate-documentation --target Arbor --target ArborEngine --warnings-as-errors \
		--output-path .build/docs

# Runs the concurrency tests under ThreadSanitizer; any reported race fails (exit code 1).
tsan: deps
	swift build --build-tests --scratch-path .build-tsan --sanitize=thread
	set -o pipefail; swift test --scratch-path .build-tsan --sanitize=thread --filter 'ConcurrencyTests|LeafDirectoryTests|CompactionTests|ContextMergeTests|ReadersDuringCommitTests|WritersAndReaderStressTests|ParentChildContextTests|FetchedResultsCacheTests|GroupCommitTests|GroupCommitVisibilityTests|TextIndexUpkeepTests|NormalDurabilityTests|SpareReaderTests' 2>&1 | tee .build-tsan/tsan-output.txt
	@! grep -q "ThreadSanitizer" .build-tsan/tsan-output.txt || { echo "error: ThreadSanitizer reported a race"; exit 1; }

# Builds each libFuzzer target with ASan and runs it for FUZZ_SECONDS; fails on any crash.
fuzz: deps
	@mkdir -p fuzz/corpus-work fuzz/crashes
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		swift build $(FUZZ_FLAGS) --product $$target || exit 1; \
	done
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus-work/$$target fuzz/corpus/$$target; \
		echo "== fuzzing $$target for $(FUZZ_SECONDS)s"; \
		SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 .build-fuzz/debug/$$target \
			fuzz/corpus-work/$$target fuzz/corpus/$$target \
			-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -artifact_prefix=fuzz/crashes/ || exit 1; \
	done

# The main job: builds the arbor tool in release and runs the demo (a Berlin-sized feed:
# 12,800 stops and 3,000,000 stop times; DEMO_FLAGS=--small for a quick look).
demo: deps
	swift build -c release --product arbor
	.build/release/arbor demo $(DEMO_FLAGS)

bench: deps
	cd Benchmarks && swift run -c release arbor-bench engine

clean:
	rm -rf .build .build-fuzz .build-tsan fuzz/corpus-work fuzz/crashes
