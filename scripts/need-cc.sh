#!/bin/sh
# need-cc.sh — make test runs `go test -race`, and the race detector needs cgo, hence a C
# compiler. Without one every package would fail with `cgo: C compiler "gcc" not found … [build
# failed]` after minutes of compiling; this says so at once and names what to install.
# make run and make build need no C compiler (CGO_ENABLED=0).
GO=${GO:-go}
cc=$("$GO" env CC 2>/dev/null)
cc=${cc%% *}
[ -n "$cc" ] || cc=gcc
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "make test: the race detector (go test -race) needs cgo and so a C compiler, but \"$cc\" is not on PATH." >&2
	echo "  Install one: apt-get install gcc (Debian, Ubuntu), dnf install gcc (Fedora), apk add build-base (Alpine)," >&2
	echo "  xcode-select --install (macOS); or set CC to the compiler's name. make run needs none." >&2
	exit 1
fi
if [ "$("$GO" env CGO_ENABLED 2>/dev/null)" = "0" ]; then
	echo "make test: the race detector (go test -race) needs cgo, but CGO_ENABLED=0: unset it (or set CGO_ENABLED=1) for make test." >&2
	exit 1
fi
