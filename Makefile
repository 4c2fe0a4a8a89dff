# resumectl — see README.md. `make demo` and `make test` work on a fresh machine.
SWIFT    ?= swift
PREFIX   ?= /usr/local
APT_PKGS := libcurl4-openssl-dev pkg-config nginx-light curl
BENCH_PKGS := aria2 wget hyperfine
# The tus peer of the end-to-end tests (scripts/tus_server.py), versions that were tested together.
PIP_PKGS := tuspyserver==4.4.3 fastapi==0.165.0 uvicorn==0.54.0
# tus-py-client, the library `make bench` compares tus uploads with.
TUSPY_VERSION := 1.1.0

.PHONY: all deps build release test test-unit test-e2e install demo bench soak clean

all: build

# Installs what is missing (Debian): libcurl headers, pkg-config, nginx for the tests; tuspyserver (PyPI).
deps:
	@missing=""; \
	pkg-config --exists libcurl 2>/dev/null || missing="$$missing libcurl4-openssl-dev pkg-config"; \
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$$missing nginx-light"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v python3 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip; }
	@python3 -c 'import importlib.metadata as m, sys; want = dict(p.split("==") for p in sys.argv[1:]); \
		sys.exit(any(m.version(n) != v for n, v in want.items()))' $(PIP_PKGS) 2>/dev/null || \
		{ echo "installing: $(PIP_PKGS)"; python3 -m pip install -q $(PIP_PKGS) || \
		  python3 -m pip install -q --break-system-packages $(PIP_PKGS); }

build: deps
	$(SWIFT) build

# Release binaries carry the Swift runtime inside (--static-swift-stdlib): a transfer touches fewer
# pages and runs where no Swift is installed. They are linked at a fixed address (no PIE): a PIE's
# 1.1 MB of start-up relocations touch about 2.4 MiB more. Peak RSS of a 1 GiB download: 27 MiB as a
# dynamic PIE, 25.8 static PIE, 23.3 static. `make release PIE=1` keeps ASLR for the binary's own code.
RELEASE_FLAGS := -c release --static-swift-stdlib
ifneq ($(PIE),1)
RELEASE_FLAGS += -Xswiftc -Xclang-linker -Xswiftc -no-pie
endif

release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

# One build of everything, then both test targets in parallel.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

test-unit: deps
	$(SWIFT) test --filter ResumeKitTests

test-e2e: deps
	$(SWIFT) test --filter EndToEndTests

install: release
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 .build/release/resumectl $(DESTDIR)$(PREFIX)/bin/resumectl
	install -m 755 .build/release/resumectl-serve $(DESTDIR)$(PREFIX)/bin/resumectl-serve
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/user
	sed 's|^ExecStart=resumectl |ExecStart=$(PREFIX)/bin/resumectl |' contrib/systemd/resumectl-resume.service > $(DESTDIR)$(PREFIX)/lib/systemd/user/resumectl-resume.service
	install -m 644 contrib/systemd/resumectl-resume.timer $(DESTDIR)$(PREFIX)/lib/systemd/user/

demo: build
	scripts/demo.sh .build/debug/resumectl

bench: release
	@missing=""; for p in aria2c wget hyperfine; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BENCH_PKGS); fi
	@python3 -c 'import importlib.metadata as m; m.version("tuspy") == "$(TUSPY_VERSION)" or exit(1)' 2>/dev/null || \
		python3 -m pip install -q tuspy==$(TUSPY_VERSION) || python3 -m pip install -q --break-system-packages tuspy==$(TUSPY_VERSION)
	python3 scripts/bench.py --bin .build/release/resumectl

clean:
	rm -rf .build .bench

# The crash-safety suite at scale: 200 cuts and 50 kills on a 1 GiB download (a quarter for uploads).
soak: deps
	$(SWIFT) build --build-tests
	RESUMECTL_SOAK=1 $(SWIFT) test --skip-build --filter SoakTests 2>&1 | tee .soak.log | grep -E '^soak \||Test run'
