# The two commands of the README. Everything else is CMake/CTest underneath.
.PHONY: run test build clean

run:
	scripts/run.sh

test:
	scripts/test.sh

build:
	scripts/deps.sh
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j$$(nproc)

clean:
	rm -rf build build-release build-asan build-tsan
