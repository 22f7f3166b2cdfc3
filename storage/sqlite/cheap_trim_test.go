//go:build linux && (amd64 || arm64 || loong64 || ppc64le || s390x || riscv64 || 386 || arm) && !libc.membrk && !libc.memgrind

package sqlite

import (
	"bufio"
	"context"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTrimCHeapIsLibcs: the linknamed allocator and mutex are libc's own. A name libc no
// longer declares would give this package a zero allocator of its own and a mutex nobody else
// takes: Trim would free nothing, and worse, run beside SQLite's mallocs.
func TestTrimCHeapIsLibcs(t *testing.T) {
	s := openTemp(t, Config{})
	d, err := s.conns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fillBallast(t, d, 10)
	if reflect.ValueOf(&libcAllocator).Elem().IsZero() {
		t.Fatal("libcAllocator is zero after SQLite allocated: the name does not resolve to libc's allocator")
	}

	// While the mutex is held, a statement SQLite has to prepare (and so malloc) cannot run.
	libcAllocatorMu.Lock()
	done := make(chan error, 1)
	go func() {
		_, err := d.r.ExecContext(context.Background(), "SELECT count(*) FROM ballast WHERE length(x) > 17")
		done <- err
	}()
	select {
	case err := <-done:
		libcAllocatorMu.Unlock()
		t.Fatalf("a query ran while libcAllocatorMu was held (err %v): the name does not resolve to the mutex libc's malloc takes", err)
	case <-time.After(100 * time.Millisecond):
	}
	libcAllocatorMu.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("query after the mutex was released: %v", err)
	}
}

// TestReleaseMemoryTrimsTheCHeap: the pages SQLite frees on ReleaseMemory leave the process.
// Before, they went to the allocator's pool of empty regions, up to 4 MiB of each size
// committed, and the process's anonymous memory did not go down.
func TestReleaseMemoryTrimsTheCHeap(t *testing.T) {
	s := openTemp(t, Config{})
	ctx := context.Background()
	d, err := s.conns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// More pages than the writer's cache holds, and no read after: the writer's cache is full
	// (see TestReleaseMemoryEmptiesCaches).
	fillBallast(t, d, 1000)
	cached := writerCacheUsed(t, d)
	if cached < writerCacheKiB<<10/2 {
		t.Fatalf("writer cache = %d bytes, want at least half its bound %d KiB (the test writes too little)", cached, writerCacheKiB)
	}
	debug.FreeOSMemory() // the Go heap's free pages out of both readings
	before := rssAnon(t)
	if err := s.ReleaseMemory(ctx); err != nil {
		t.Fatal(err)
	}
	debug.FreeOSMemory()
	after := rssAnon(t)
	// Each 4 KiB page of the cache takes an 8 KiB slot: its resident size is about twice
	// cached. Ask for half of cached, well above what the Go side may fault in meanwhile.
	if drop := before - after; drop < int64(cached)/2 {
		t.Errorf("RssAnon went from %d to %d KiB on ReleaseMemory (−%d KiB), want at least −%d KiB: the writer's %d KiB of cached pages stayed resident",
			before>>10, after>>10, drop>>10, cached>>11, cached>>10)
	}
	fillBallast(t, d, 10) // and the store works on after it
}

// rssAnon is the process's resident anonymous memory in bytes (/proc/self/status).
func rssAnon(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}
