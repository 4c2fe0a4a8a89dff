# resumectl — see README.md and docs/. `make demo` and `make test` work on a fresh machine.
SWIFT    ?= swift
PREFIX   ?= /usr/local
BENCH_PKGS := aria2 wget hyperfine rclone wrk
# The tus peer of the end-to-end tests (scripts/tus_server.py), versions that were tested together;
# moto's S3 server (scripts/moto_server.py; boto3 comes with it, scripts/s3_tool.py uses it).
# boto3 is pinned too so that the AWS CLI of `make bench` (which pins its botocore) fits beside it.
# moto's s3crc32c extra (the crc32c package): without it moto computes CRC32 where S3 computes CRC32C.
MOTO_PKGS := 'moto[server,s3crc32c]==5.2.1' boto3==1.43.11
PIP_PKGS := tuspyserver==4.4.3 fastapi==0.165.0 uvicorn==0.54.0 $(MOTO_PKGS)
# tus-py-client, the library `make bench` compares tus uploads with and the tus client `serve`'s tests
# upload with; selenium drives headless chromium for the folder page's test; prometheus_client's parser
# reads serve's metrics in their test. The AWS CLI, S3 uploads.
TUSPY_VERSION := 1.1.0
SELENIUM_VERSION := 4.51.0
PROMETHEUS_CLIENT_VERSION := 0.26.0
TEST_PIP_PKGS := tuspy==$(TUSPY_VERSION) selenium==$(SELENIUM_VERSION) prometheus_client==$(PROMETHEUS_CLIENT_VERSION)
AWSCLI_VERSION := 1.45.11

.PHONY: all deps deps-build deps-test deps-deb build release test test-unit test-e2e lint generated install install-files uninstall deb docs demo bench soak soak-serve clean fuzz fuzz-build

all: build

# Installs what is missing (Debian), in three parts, each installing only what its targets need:
# - deps-build (build, release, demo, install, deb, fuzz): libcurl, libxml2 (S3's XML and HTML listings), libcrypt
#   (serve's logins), ISA-L (S3's hardware CRC32C) and libssl headers, pkg-config, curl. Nothing else: `make demo`
#   on a machine with Swift installs these and builds.
# - deps-test (test, test-unit, test-e2e, soak, soak-serve, bench): the peers of the end-to-end tests: nginx (TLS, HTTP/2),
#   openssl (test certificates), tinyproxy (a real forward proxy), iproute2, htpasswd (apache2-utils), chromium and
#   chromium-driver (the folder page's test), systemd-analyze (systemd: serve's unit is verified), and from PyPI
#   tuspyserver, moto, tuspy, selenium and prometheus_client (serve's metrics are parsed with it).
# - deps-deb (scripts/check-deb.sh): man-db and hardening-check (devscripts) to check the package.
# `make deps` installs all three.
deps: deps-build deps-test deps-deb

deps-build:
	@missing=""; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	pkg-config --exists libcurl 2>/dev/null || missing="$$missing libcurl4-openssl-dev"; \
	pkg-config --exists libxml-2.0 2>/dev/null || missing="$$missing libxml2-dev"; \
	pkg-config --exists libcrypto 2>/dev/null || missing="$$missing libssl-dev"; \
	[ -f /usr/include/crypt.h ] || missing="$$missing libcrypt-dev"; \
	[ -f /usr/include/isa-l/crc.h ] || missing="$$missing libisal-dev"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

deps-test:
	@missing=""; \
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$$missing nginx-light"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	[ -x /usr/bin/tinyproxy ] || [ -x /usr/sbin/tinyproxy ] || missing="$$missing tinyproxy"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v htpasswd >/dev/null 2>&1 || missing="$$missing apache2-utils"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v python3 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip; }
	@python3 -c 'import importlib.metadata as m, sys; want = dict(p.split("==") for p in sys.argv[1:]); \
		sys.exit(any(m.version(n.split("[")[0]) != v for n, v in want.items()))' $(PIP_PKGS) 2>/dev/null || \
		{ echo "installing: $(PIP_PKGS)"; python3 -m pip install -q $(PIP_PKGS) || \
		  python3 -m pip install -q --break-system-packages $(PIP_PKGS); }
	@python3 -c 'import importlib.metadata as m, sys; want = dict(p.split("==") for p in sys.argv[1:]); \
		sys.exit(any(m.version(n) != v for n, v in want.items()))' $(TEST_PIP_PKGS) 2>/dev/null || \
		{ echo "installing: $(TEST_PIP_PKGS)"; python3 -m pip install -q $(TEST_PIP_PKGS) || \
		  python3 -m pip install -q --break-system-packages $(TEST_PIP_PKGS); }
	@# moto without its [server] extra passes the version check but cannot serve (nor check CRC32C without s3crc32c).
	@python3 -c 'import flask, flask_cors, boto3, crc32c' 2>/dev/null || \
		{ python3 -m pip install -q $(MOTO_PKGS) || python3 -m pip install -q --break-system-packages $(MOTO_PKGS); }


deps-deb:
	@missing=""; \
	command -v man >/dev/null 2>&1 || missing="$$missing man-db"; \
	command -v hardening-check >/dev/null 2>&1 || missing="$$missing devscripts"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps-build
	$(SWIFT) build

# Release binaries carry the Swift runtime inside (--static-swift-stdlib): a transfer touches fewer
# pages and runs where no Swift is installed.
# Hardened by default, as Debian builds its packages: position-independent (ASLR for the binary's own code
# too: resumectl-serve parses what anyone on the network sends), full RELRO (-z relro -z now: every symbol is
# bound at start-up and the GOT is read-only after it) and a stack that is not executable. C that is compiled
# (the C targets of the packages resumectl-serve uses; the shims in Sources/C* are headers whose inline
# wrappers clang compiles with the Swift code) gets -D_FORTIFY_SOURCE=2 -fstack-protector-strong.
# `make release PIE=0` links at a fixed address as before (a PIE's start-up relocations touch more pages);
# it is an opt-in for measurements, never what `install` or `deb` ship by default.
# libstdc++, which only the Swift runtime uses, is linked in too (the linker finds the .a first in
# STATIC_CXX), and the binary exports no symbols of its own (Swift's link line asks for -export-dynamic,
# whose 0.4 MB symbol table every library loaded after it searches): 23.0 → 21.5 MiB for a download.
# Every function gets a section of its own, and the linker places the ones common transfers run first
# (scripts/link-order.txt, written by scripts/link-order.py): the kernel maps code 64 KiB around each
# page touched, so packed hot code keeps less of the binary resident (21.1 → 18.7 MiB).
# The linker is lld (the Swift toolchain's own), for -z pack-relative-relocs: a PIE's 43,000 start-up
# relocations, 1.0 MB of .rela.dyn that the loader reads and keeps resident, become 8 KB of DT_RELR (glibc
# 2.36 and later read it; the package says so). A 1 GiB download peaks at 19.0-19.1 MiB as a hardened PIE
# this way, 21.4-21.5 with gold's RELA (3 alternating runs each); its --symbol-ordering-file takes the list.
# Generic types are instantiated by direct metadata accessors, not by demangling their names at run time
# (-disable-concrete-type-metadata-mangled-name-accessors): 2.2% fewer instructions for a 4 KiB download
# (callgrind: 21.43 M -> 20.95 M), for 75 KB more code.
STATIC_CXX := $(CURDIR)/.build/static-libstdc++
PIE ?= 1
HARDEN_FLAGS := -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now -Xlinker -z -Xlinker noexecstack \
	-Xcc -D_FORTIFY_SOURCE=2 -Xcc -fstack-protector-strong
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors -Xlinker --no-export-dynamic -Xlinker -L$(STATIC_CXX) \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xlinker --symbol-ordering-file=$(CURDIR)/scripts/link-order.txt -Xlinker --no-warn-symbol-ordering \
	$(HARDEN_FLAGS)
ifeq ($(PIE),0)
RELEASE_FLAGS += -Xswiftc -Xclang-linker -Xswiftc -no-pie
else
RELEASE_FLAGS += -Xswiftc -Xclang-linker -Xswiftc -pie
endif

release: deps-build
	@mkdir -p $(STATIC_CXX); a=$$(gcc -print-file-name=libstdc++.a 2>/dev/null); \
		if [ -f "$$a" ]; then ln -sf "$$a" $(STATIC_CXX)/libstdc++.a; else echo "no libstdc++.a: linking libstdc++ dynamically"; fi
	@# SwiftPM does not relink for a changed order file.
	@for p in resumectl resumectl-serve; do [ scripts/link-order.txt -nt .build/release/$$p ] && rm -f .build/release/$$p; done; true
	$(SWIFT) build $(RELEASE_FLAGS)

# One build of everything, then both test targets in parallel.
# The suites that time transfers against signals, kills and rate limits run six tests at a time: run
# alongside 370 others on 2 cores, a "slow" transfer ends before the test's kill or pause arrives; six at
# once wait on transfers more than on the CPU (1.6 of 2 cores, 195-205 s for 154 tests in two idle runs
# on 2026-11-26; three at once passed every test while three builds ran beside them). The rest runs
# fully in parallel. One build serves both runs.
TIMED_SUITES := EndToEndTests\.(FolderDownloadTests|MirrorDownloadTests|SyncTests|SecretsAtRestTests|ServeHookTests|ServeStopTests|ServeTusSpecTests|CrashSafetyTests|FolderUploadTests|FolderUploadControlTests|DownloadTests|ManyConnectionsTests|AnnouncedIDTests|UploadTests|SupportSelfTests|BackgroundTests|S3CrashTests|StreamUploadTests|StreamUploadStrictTests|TusStreamUploadTests|TusConcatUploadTests|S3StreamUploadTests|StdoutDownloadTests|ServeDurabilityTests|ServeS3StoreTests|ServeS3FolderTests|ServeS3AccessTests|ServeS3CompletionTests|ServeS3HookTests|ServeS3MemoryTests|ServeSoakTests|ServeTusConcatTests)
TIMED_WIDTH ?= 6
test: deps-build deps-test
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip '$(TIMED_SUITES)'
	$(SWIFT) test --skip-build --parallel --experimental-maximum-parallelization-width $(TIMED_WIDTH) --filter '$(TIMED_SUITES)'

# The toolchain's `swift format` with .swift-format (layout only, 120 columns), every line within 120 characters,
# no comment citing a file outside the repository (scripts/lint.sh). `swift format format -i -r -p Sources Tests`
# makes the layout; strings and comments over 120 are wrapped by hand.
lint:
	scripts/lint.sh

test-unit: deps-build deps-test
	$(SWIFT) test --filter ResumeKitTests

test-e2e: deps-build deps-test
	$(SWIFT) test --filter EndToEndTests

# Where `make install` puts things; bash-completion, zsh and fish all look in these below /usr/local and /usr.
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SYSTEMDUSERDIR ?= $(PREFIX)/lib/systemd/user
SYSTEMDSYSTEMDIR ?= $(PREFIX)/lib/systemd/system
GEN := .build/generated

# The man page comes from swift-argument-parser's manual plugin and the completions from the binary itself:
# generated here, never written by hand, never committed. The plugin reads the help of a debug build, which
# says the same as the release one and is cheaper to keep up to date.
generated: release
	$(SWIFT) package generate-manual --configuration debug
	mkdir -p $(GEN)
	cp .build/plugins/GenerateManual/outputs/resumectl/resumectl.1 $(GEN)/resumectl.1
	cp '.build/plugins/GenerateManual/outputs/resumectl-serve/resumectl serve.1' $(GEN)/resumectl-serve.1
	for shell in bash zsh fish; do .build/release/resumectl --generate-completion-script $$shell > $(GEN)/resumectl.$$shell || exit 1; done

install: release generated
	$(MAKE) --no-print-directory install-files

# Copies what `release` and `generated` made; `deb` uses it for its staging root.
install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 755 .build/release/resumectl $(DESTDIR)$(BINDIR)/resumectl
	install -m 755 .build/release/resumectl-serve $(DESTDIR)$(BINDIR)/resumectl-serve
	install -m 644 $(GEN)/resumectl.1 $(DESTDIR)$(MANDIR)/man1/resumectl.1
	install -m 644 $(GEN)/resumectl-serve.1 $(DESTDIR)$(MANDIR)/man1/resumectl-serve.1
	install -m 644 $(GEN)/resumectl.bash $(DESTDIR)$(BASHCOMPDIR)/resumectl
	install -m 644 $(GEN)/resumectl.zsh $(DESTDIR)$(ZSHCOMPDIR)/_resumectl
	install -m 644 $(GEN)/resumectl.fish $(DESTDIR)$(FISHCOMPDIR)/resumectl.fish
	install -d $(DESTDIR)$(SYSTEMDUSERDIR)
	sed 's|^ExecStart=resumectl |ExecStart=$(BINDIR)/resumectl |' contrib/systemd/resumectl-resume.service > $(DESTDIR)$(SYSTEMDUSERDIR)/resumectl-resume.service
	install -m 644 contrib/systemd/resumectl-resume.timer $(DESTDIR)$(SYSTEMDUSERDIR)/resumectl-resume.timer
	install -d $(DESTDIR)$(SYSTEMDSYSTEMDIR)
	sed 's|^ExecStart=resumectl |ExecStart=$(BINDIR)/resumectl |' contrib/systemd/resumectl-serve.service > $(DESTDIR)$(SYSTEMDSYSTEMDIR)/resumectl-serve.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/resumectl $(DESTDIR)$(BINDIR)/resumectl-serve $(DESTDIR)$(BINDIR)/resumectl-s3 $(DESTDIR)$(MANDIR)/man1/resumectl.1 $(DESTDIR)$(MANDIR)/man1/resumectl-serve.1 \
	      $(DESTDIR)$(BASHCOMPDIR)/resumectl $(DESTDIR)$(ZSHCOMPDIR)/_resumectl $(DESTDIR)$(FISHCOMPDIR)/resumectl.fish \
	      $(DESTDIR)$(SYSTEMDUSERDIR)/resumectl-resume.service $(DESTDIR)$(SYSTEMDUSERDIR)/resumectl-resume.timer \
	      $(DESTDIR)$(SYSTEMDSYSTEMDIR)/resumectl-serve.service

# A Debian package of the static release build (the Swift runtime is inside; libcurl is needed, and libxml2
# for S3's XML and HTML folder listings, loaded when first read).
DEB_ROOT := .build/deb/root
deb: release generated
	rm -rf .build/deb
	$(MAKE) --no-print-directory install-files DESTDIR=$(DEB_ROOT) PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/vendor-completions
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/resumectl.1 $(DEB_ROOT)/usr/share/man/man1/resumectl-serve.1
	strip --strip-unneeded $(DEB_ROOT)/usr/bin/resumectl $(DEB_ROOT)/usr/bin/resumectl-serve
	install -d $(DEB_ROOT)/DEBIAN
	version=$$(.build/release/resumectl --version); arch=$$(dpkg --print-architecture); \
	size=$$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1); \
	printf '%s\n' "Package: resumectl" "Version: $$version" "Architecture: $$arch" \
		"Maintainer: resumectl developers <resumectl@localhost>" "Installed-Size: $$size" \
		"Depends: libc6 (>= 2.36), libcrypt1, libcurl4, libisal2, libssl3, libxml2" "Section: web" "Priority: optional" \
		"Homepage: https://github.com/resumectl/resumectl" \
		"Description: HTTP transfers that survive dropped connections and reboots" \
		" resumectl downloads with Range and If-Range and uploads with the IETF resumable-upload" \
		" draft, and keeps each transfer's state in a token so that it resumes after Ctrl-C," \
		" kill -9 or a reboot." > $(DEB_ROOT)/DEBIAN/control; \
	dpkg-deb --root-owner-group --build $(DEB_ROOT) .build/resumectl_$${version}_$${arch}.deb

# ResumeKit's DocC documentation (with the overview article in Sources/ResumeKit/ResumeKit.docc), as a static site.
docs:
	$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target ResumeKit \
		--output-path .build/docs --transform-for-static-hosting --hosting-base-path ResumeKit
	@echo "documentation in .build/docs (open .build/docs/documentation/resumekit/index.html through a web server)"

demo: build
	scripts/demo.sh .build/debug/resumectl

# `make bench` runs every case; CASE picks some by name or number (CASE=s3, CASE="download stdin",
# CASE=1,7; the names: scripts/bench/__init__.py), BENCH_ARGS passes more options (BENCH_ARGS=--quick).
CASE ?= all
BENCH_ARGS ?=
bench: deps-test release
	@missing=""; for p in aria2c wget hyperfine rclone wrk; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BENCH_PKGS); fi
	@python3 -c 'import importlib.metadata as m; m.version("tuspy") == "$(TUSPY_VERSION)" or exit(1)' 2>/dev/null || \
		python3 -m pip install -q tuspy==$(TUSPY_VERSION) || python3 -m pip install -q --break-system-packages tuspy==$(TUSPY_VERSION)
	@python3 -c 'import importlib.metadata as m; m.version("awscli") == "$(AWSCLI_VERSION)" or exit(1)' 2>/dev/null || \
		python3 -m pip install -q awscli==$(AWSCLI_VERSION) || python3 -m pip install -q --break-system-packages awscli==$(AWSCLI_VERSION)
	python3 scripts/bench --bin .build/release/resumectl --cases '$(CASE)' $(BENCH_ARGS)

clean:
	rm -rf .build .bench .build-fuzz

# libFuzzer targets for every parser of untrusted bytes (Fuzz/; docs/hostile-input.md). `make fuzz` runs
# each for FUZZ_SECONDS from its seed corpus and fails on any crash or violated property; the input is
# then in .build-fuzz/findings/<target>/. Fuzz/'s package builds with the sanitizers; serve's three pure
# parsers are compiled straight from their sources, so the fuzzers need no NIO.
FUZZ_SECONDS ?= 60
FUZZ_BUILD := $(SWIFT) build --package-path Fuzz --scratch-path .build-fuzz -c release \
	-Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xswiftc -use-ld=lld
FUZZ_SWIFTC := swiftc -O -sanitize=fuzzer,address -use-ld=lld -parse-as-library -I Fuzz/Sources/CLibFuzzer/include Fuzz/Sources/FuzzCheck/FuzzCheck.swift
fuzz-build: deps-build
	@# SwiftPM keeps the build plan of Fuzz/'s package when only a file of its dependency (..) was added:
	@# without the plan, the new file is planned in (a new ResumeKit file was missed otherwise).
	rm -f .build-fuzz/release.yaml
	$(FUZZ_BUILD)
	mkdir -p .build-fuzz/bin
	bin=$$($(FUZZ_BUILD) --show-bin-path) && for t in $$(ls Fuzz/Sources | grep '^Fuzz' | grep -v FuzzCheck); do \
		ln -sf "$$bin/$$t" .build-fuzz/bin/$$t; done
	$(FUZZ_SWIFTC) Sources/ResumeServer/SafePath.swift Fuzz/Serve/FuzzServePath.swift -o .build-fuzz/bin/FuzzServePath
	$(FUZZ_SWIFTC) Sources/ResumeServer/RangeRequest.swift Fuzz/Serve/FuzzServeRange.swift -o .build-fuzz/bin/FuzzServeRange
	$(FUZZ_SWIFTC) Sources/ResumeServer/MethodOverride.swift Fuzz/Serve/FuzzServeMethod.swift -o .build-fuzz/bin/FuzzServeMethod

fuzz: fuzz-build
	scripts/fuzz.sh $(FUZZ_SECONDS)

# The crash-safety suite at scale: 200 cuts and 50 kills on a 1 GiB download (a quarter for uploads).
# Also tus concatenation: RESUMECTL_SOAK_TUS_SIZE (256 MiB) over 4 connections of 8 MB/s against one, then 3 kills.
soak: deps-build deps-test
	$(SWIFT) build --build-tests
	RESUMECTL_SOAK=1 $(SWIFT) test --skip-build --filter SoakTests 2>&1 | tee .soak.log | grep -E '^soak \||Test run'

# `serve` under load while it is killed (scripts/soak_serve.py; docs/serve.md, "Under load and kills"): for
# SOAK_DURATION seconds (600) SOAK_UPLOADS resumable uploads at all times (100; draft, tus, PUT, a fifth cut at
# a proxy) and SOAK_GETS connections of ranged GETs (200), serve killed with SIGKILL and restarted every
# SOAK_KILL_INTERVAL seconds (60); then the same with --store s3:// (moto), three instances behind nginx, at a
# quarter of the load. SOAK_STORES picks the stores. The tables go to .soak-serve.log, the JSON to
# .soak-serve-STORE.json; exit status 1 if a must-hold row failed. The release build is what is measured.
SOAK_STORES ?= folder s3
soak-serve: deps-build deps-test release
	@rm -f .soak-serve.failed; for store in $(SOAK_STORES); do \
		python3 scripts/soak_serve.py --bin .build/release/resumectl --store $$store --json .soak-serve-$$store.json \
			--progress || touch .soak-serve.failed; \
	done 2>&1 | tee .soak-serve.log; test ! -f .soak-serve.failed
