//go:build linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind

package sqlite

import (
	"sync"
	_ "unsafe" // go:linkname

	_ "modernc.org/libc" // the variables below are its
	"modernc.org/memory"
)

// SQLite's C heap is modernc.org/libc's malloc: one process-wide modernc.org/memory.Allocator,
// guarded by one mutex. An empty region (a 64 KiB page of slots, or a large block) is not
// unmapped when its last allocation is freed: the allocator keeps up to 4 MiB of each region
// size committed for reuse, and more mapped but decommitted, until Allocator.Trim. So after a
// burst, the pages SQLite gave back (PRAGMA shrink_memory, a closed connection's cache: 8 KiB
// slots of 64 KiB regions) stayed resident, about 4.6 MiB of a quiet gateway's 31 MiB of
// anonymous memory a minute after 1000 sessions (bench/realpath). libc does not export a trim,
// so trimCHeap reaches its allocator and its mutex by name: this file's build constraint is
// that of libc's own file declaring them (libc_musl.go with mem_musl.go's malloc), and
// TestTrimCHeapIsLibcs checks, on the pinned libc, that the names resolve to the variables its
// malloc uses rather than to new ones of this package.

//go:linkname libcAllocator modernc.org/libc.allocator
var libcAllocator memory.Allocator

//go:linkname libcAllocatorMu modernc.org/libc.allocatorMu
var libcAllocatorMu sync.Mutex

// trimCHeap returns to the OS the empty regions SQLite's allocator keeps for reuse; regions
// with live allocations are untouched. It blocks SQLite's mallocs in every goroutine while it
// runs: an munmap per retained region, about 1 ms after the writer's full cache was freed. So it
// runs only from ReleaseMemory, when the process is quiet.
func trimCHeap() error {
	libcAllocatorMu.Lock()
	defer libcAllocatorMu.Unlock()
	return libcAllocator.Trim()
}
