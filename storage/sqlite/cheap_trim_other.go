//go:build !(linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind)

package sqlite

// trimCHeap does nothing where SQLite's allocator is another of libc's (cheap_trim.go).
func trimCHeap() error { return nil }
