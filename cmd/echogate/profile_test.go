package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestSnapshotOnSignal: each SIGUSR1 writes the numbered heap and goroutine profiles (gzipped
// pprof protos) and the runtime's metrics into -snapshot-dir.
func TestSnapshotOnSignal(t *testing.T) {
	dir := t.TempDir()
	wrote := make(chan error)
	var stderr bytes.Buffer
	s := startSnapshotsNotify(dir, &stderr, wrote)
	defer s.stop()
	for n := 1; n <= 2; n++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("snapshot %d: %v", n, err)
		}
		for _, name := range []string{"heap", "goroutine"} {
			checkPprof(t, filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, n)))
		}
		checkRuntimeMetrics(t, filepath.Join(dir, fmt.Sprintf("metrics-%d.txt", n)))
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
}

func TestParseServeFlagsSnapshotDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snaps")
	p, err := parseServeFlags([]string{"-snapshot-dir", dir}, io.Discard)
	if err != nil {
		t.Fatalf("parseServeFlags: %v", err)
	}
	if p.snap == nil {
		t.Fatal("parseServeFlags(-snapshot-dir) started no snapshot handler")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("-snapshot-dir %s was not created: %v", dir, err)
	}
	if err := p.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}

func checkPprof(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("snapshot file: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not a gzipped profile: %v", path, err)
	}
	if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
		t.Fatalf("%s: %d bytes, %v", path, len(b), err)
	}
}

// checkRuntimeMetrics checks that path holds the memory figures the profiles lack, as numbers.
func checkRuntimeMetrics(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("metrics file: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: line %q is not \"name value\"", path, line)
		}
		got[name] = val
	}
	for _, name := range []string{"/memory/classes/heap/unused:bytes", "/gc/scan/stack:bytes", "/gc/stack/starting-size:bytes", "/memory/classes/metadata/other:bytes"} {
		if _, err := strconv.ParseFloat(got[name], 64); err != nil {
			t.Errorf("%s: %s = %q, want a number", path, name, got[name])
		}
	}
}

// heapSamplingRate reads the runtime's heap-profile rate under the mutex its writers hold.
func heapSamplingRate() int {
	heapSamplingMu.Lock()
	defer heapSamplingMu.Unlock()
	return runtime.MemProfileRate
}

// TestServeSamplesTheHeapOnlyForAProfile: serve turns the runtime's heap sampling off unless a
// heap profile was asked for, and on (at the runtime's default rate) when one was, so that
// -memprofile and -snapshot-dir still write profiles with samples in them.
func TestServeSamplesTheHeapOnlyForAProfile(t *testing.T) {
	was := heapSamplingRate()
	t.Cleanup(func() {
		heapSamplingMu.Lock()
		runtime.MemProfileRate = was
		heapSamplingMu.Unlock()
	})
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"-memprofile", filepath.Join(dir, "heap.pprof")}, defaultMemProfileRate},
		{[]string{}, 0},
		{[]string{"-snapshot-dir", filepath.Join(dir, "snaps")}, defaultMemProfileRate},
		{[]string{"-cpuprofile", filepath.Join(dir, "cpu.pprof")}, 0},
	} {
		p, err := parseServeFlags(c.args, io.Discard)
		if err != nil {
			t.Fatalf("parseServeFlags(%q): %v", c.args, err)
		}
		if got := heapSamplingRate(); got != c.want {
			t.Errorf("serve %q: MemProfileRate = %d, want %d", c.args, got, c.want)
		}
		if err := p.stop(); err != nil {
			t.Errorf("serve %q: stop: %v", c.args, err)
		}
	}
	// With -memprofile the heap is sampled: 16 MiB allocated in 64 KiB pieces is ~32 samples
	// expected at one per 512 KiB, none at all with a chance of e^-32.
	p, err := parseServeFlags([]string{"-memprofile", filepath.Join(dir, "sampled.pprof")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	allocForHeapProfile(256, 64<<10)
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&text, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "allocForHeapProfile") {
		t.Errorf("with -memprofile, 16 MiB allocated left no sample in the heap profile")
	}
}

var heapProfileSink []byte

//go:noinline
func allocForHeapProfile(n, size int) {
	for i := 0; i < n; i++ {
		heapProfileSink = make([]byte, size)
	}
	heapProfileSink = nil
}
