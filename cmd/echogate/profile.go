package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/echogate/echogate/internal/memtrim"
)

// profiles are serve's -cpuprofile and -memprofile: a CPU profile of the whole run and a heap
// profile written at exit, for `go tool pprof`.
type profiles struct {
	cpu *os.File
	mem string
}

// serveFlags defines serve's flags on fs.
func serveFlags(fs *flag.FlagSet) (cpu, mem *string) {
	cpu = fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	mem = fs.String("memprofile", "", "write a heap profile to `FILE` at exit")
	return cpu, mem
}

// parseServeFlags parses serve's flags and starts the CPU profile if asked. stop ends the
// profiles; call it once, at exit.
func parseServeFlags(args []string, stderr io.Writer) (*profiles, error) {
	fs := flag.NewFlagSet("echogate serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpu, mem := serveFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (serve takes only -cpuprofile and -memprofile; configure it with --config or the environment)", fs.Args())
	}
	p := &profiles{mem: *mem}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		p.cpu = f
	}
	return p, nil
}

func (p *profiles) stop() error {
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	if p.mem == "" {
		return nil
	}
	f, err := os.Create(p.mem)
	if err != nil {
		return fmt.Errorf("-memprofile: %w", err)
	}
	runtime.GC() // the live heap, not garbage waiting for collection
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("-memprofile: %w", err)
	}
	return f.Close()
}

// addMemTrim registers serve's memory trimmer: when load ends, the freed heap goes back to the
// OS within seconds instead of minutes (internal/memtrim).
func (c *core) addMemTrim() {
	if c.workers == nil {
		c.workers = map[string]func(context.Context) error{}
	}
	c.workers["memtrim"] = func(ctx context.Context) error { return memtrim.Run(ctx, memtrim.Config{}) }
}
