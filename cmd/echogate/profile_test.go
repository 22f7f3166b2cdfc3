package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
