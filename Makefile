# The two commands of the README. Everything else is CMake/CTest underneath.
.PHONY: run test build install deb clean

# `make install`: the binary, its man page and a sample of the service's
# settings under PREFIX (staged beneath DESTDIR when set).
PREFIX ?= /usr/local
DESTDIR ?=

run:
	scripts/run.sh

test:
	scripts/test.sh

build:
	scripts/deps.sh
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j$$(nproc)

install: build
	DESTDIR="$(DESTDIR)" cmake --install build --prefix "$(PREFIX)"

# `make deb`: dist/awooop_<version>_<arch>.deb, built with Debian's hardening
# flags in build-deb/ (packaging/debian/).
deb:
	scripts/deps.sh
	packaging/debian/build-deb.sh --configure build-deb dist

clean:
	rm -rf build build-release build-asan build-tsan build-deb dist
