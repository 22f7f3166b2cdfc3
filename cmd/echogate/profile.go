package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/echogate/echogate/internal/memtrim"
	"github.com/echogate/echogate/internal/textpages"
)

// profiles are serve's profiling flags: a CPU profile of the whole run (-cpuprofile), a heap
// profile written at exit (-memprofile), and snapshots taken on SIGUSR1 while serve runs
// (-snapshot-dir), for `go tool pprof`.
type profiles struct {
	cpu  *os.File
	mem  string
	snap *snapshots
}

// serveFlags defines serve's flags on fs.
func serveFlags(fs *flag.FlagSet) (cpu, mem, snap *string) {
	cpu = fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	mem = fs.String("memprofile", "", "write a heap profile to `FILE` at exit (the heap is sampled only with this flag or --snapshot-dir)")
	snap = fs.String("snapshot-dir", "", "on each SIGUSR1, write the heap and goroutine profiles and the runtime's metrics of that moment to `DIR` (heap-N.pprof, goroutine-N.pprof, metrics-N.txt)")
	return cpu, mem, snap
}

// parseServeFlags parses serve's flags and starts the CPU profile and the snapshot handler if
// asked. stop ends them; call it once, at exit.
func parseServeFlags(args []string, stderr io.Writer) (*profiles, error) {
	fs := flag.NewFlagSet("echogate serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpu, mem, snap := serveFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (serve takes only --cpuprofile, --memprofile and --snapshot-dir; configure it with --config or the environment)", fs.Args())
	}
	p := &profiles{mem: *mem}
	setHeapSampling(*mem != "" || *snap != "")
	if *snap != "" {
		if err := os.MkdirAll(*snap, 0o755); err != nil {
			return nil, fmt.Errorf("-snapshot-dir: %w", err)
		}
		p.snap = startSnapshots(*snap, stderr)
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			p.snap.stop()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			p.snap.stop()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		p.cpu = f
	}
	return p, nil
}

// defaultMemProfileRate is the runtime's own MemProfileRate: one sample per 512 KiB allocated.
const defaultMemProfileRate = 512 * 1024

var heapSamplingMu sync.Mutex

// setHeapSampling turns the runtime's heap-profile sampling on (at its default rate) or off.
// Serve turns it off unless a heap profile was asked for (-memprofile, -snapshot-dir): each
// distinct allocation stack it samples keeps a bucket for the life of the process, ~1.5 MiB
// after a load of 1000 sessions, and sampling costs the allocator time on every turn, for a
// profile nobody can read (serve has no pprof endpoint). Other commands keep the default.
// The mutex orders the writes of in-process serves (tests); only the runtime reads the rate.
func setHeapSampling(on bool) {
	heapSamplingMu.Lock()
	defer heapSamplingMu.Unlock()
	if on {
		runtime.MemProfileRate = defaultMemProfileRate
	} else {
		runtime.MemProfileRate = 0
	}
}

func (p *profiles) stop() error {
	p.snap.stop()
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	if p.mem == "" {
		return nil
	}
	runtime.GC() // the live heap, not garbage waiting for collection
	if err := writeProfile("heap", p.mem); err != nil {
		return fmt.Errorf("-memprofile: %w", err)
	}
	return nil
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// snapshots writes the heap and goroutine profiles on each SIGUSR1 until stop. The heap profile
// is as of the latest garbage collection (no collection is forced, so a snapshot under load
// shows what the load holds, not what a collection at that moment would keep).
type snapshots struct {
	sig  chan os.Signal
	done chan struct{}
	wg   sync.WaitGroup
	// wrote, when set (tests), receives the outcome of each snapshot.
	wrote chan error
}

func startSnapshots(dir string, stderr io.Writer) *snapshots {
	return startSnapshotsNotify(dir, stderr, nil)
}

func startSnapshotsNotify(dir string, stderr io.Writer, wrote chan error) *snapshots {
	s := &snapshots{sig: make(chan os.Signal, 1), done: make(chan struct{}), wrote: wrote}
	signal.Notify(s.sig, syscall.SIGUSR1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for n := 1; ; n++ {
			select {
			case <-s.done:
				return
			case <-s.sig:
			}
			err := writeSnapshot(dir, n)
			if err != nil {
				fmt.Fprintln(stderr, "echogate serve: -snapshot-dir:", err)
			}
			if s.wrote != nil {
				s.wrote <- err
			}
		}
	}()
	return s
}

// writeSnapshot writes snapshot n's heap-N.pprof, goroutine-N.pprof and metrics-N.txt into dir.
func writeSnapshot(dir string, n int) error {
	for _, name := range []string{"heap", "goroutine"} {
		if err := writeProfile(name, filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, n))); err != nil {
			return err
		}
	}
	return writeRuntimeMetrics(filepath.Join(dir, fmt.Sprintf("metrics-%d.txt", n)))
}

// writeRuntimeMetrics writes every scalar runtime/metrics value to path, one "name value" a
// line: what the profiles do not say about memory, such as the heap's unused bytes in spans
// in use (fragmentation), the stack bytes in use against those allocated (/gc/scan/stack),
// the goroutines' starting stack size and the runtime's metadata by class.
func writeRuntimeMetrics(path string) error {
	descs := metrics.All()
	samples := make([]metrics.Sample, len(descs))
	for i := range descs {
		samples[i].Name = descs[i].Name
	}
	metrics.Read(samples)
	var b strings.Builder
	for _, sm := range samples {
		switch sm.Value.Kind() {
		case metrics.KindUint64:
			fmt.Fprintf(&b, "%s %d\n", sm.Name, sm.Value.Uint64())
		case metrics.KindFloat64:
			fmt.Fprintf(&b, "%s %g\n", sm.Name, sm.Value.Float64())
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// stop ends the handler (nil-safe) and waits for it.
func (s *snapshots) stop() {
	if s == nil {
		return
	}
	signal.Stop(s.sig)
	close(s.done)
	s.wg.Wait()
}

// addMemTrim registers serve's memory trimmer: once start-up is over and when load ends, the
// freed heap goes back to the OS within seconds instead of minutes (internal/memtrim), and so
// does what a store holds in memory outside the Go heap (SQLite's page caches and idle
// connections) and the executable's pages the process stopped using (internal/textpages).
func (c *core) addMemTrim() {
	if c.workers == nil {
		c.workers = map[string]func(context.Context) error{}
	}
	c.workers["memtrim"] = func(ctx context.Context) error {
		return memtrim.Run(ctx, memtrim.Config{Release: c.releaseMemory(ctx), AtStart: true})
	}
}

// memoryReleaser is a store that can give back memory it holds while the process is quiet
// (sqlite.Store.ReleaseMemory).
type memoryReleaser interface {
	ReleaseMemory(ctx context.Context) error
}

// releaseTimeout bounds the store's part of one release: it waits behind queued writes.
const releaseTimeout = 5 * time.Second

// releaseMemory returns memtrim's Release: the store's memory first, so that what it frees is
// returned with the rest of the free heap, the executable's mapped pages last, after the
// collection that FreeOSMemory runs has read what it needs of them.
func (c *core) releaseMemory(ctx context.Context) func() {
	r, ok := c.store.(memoryReleaser)
	return func() {
		if ok {
			rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
			if err := r.ReleaseMemory(rctx); err != nil && ctx.Err() == nil {
				c.log.Debug("store: release memory", "err", err)
			}
			cancel()
		}
		debug.FreeOSMemory()
		st, err := textpages.Release()
		if err != nil {
			c.log.Debug("release the executable's pages", "err", err)
			return
		}
		c.log.Debug("released memory", "text_mappings", st.Mappings, "text_resident_bytes", st.Bytes)
	}
}
