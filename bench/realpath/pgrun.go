package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runTarget starts a gateway on t, runs the overhead scenarios with their database figures
// (through the round-trip proxy), then restarts it on a direct connection for the throughput
// scenarios, and returns turns/s per session count. The proxy costs CPU on every round trip, so
// the throughput windows go without it: their round trips are not counted.
func runTarget(ctx context.Context, t *dbTarget, bin string, model *process, modelURL, tmp string) (map[int]float64, error) {
	dataDir := filepath.Join(tmp, "data-"+t.name)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	gw, base, ready, err := startTargetGateway(ctx, t, "overhead", t.env, bin, dataDir, modelURL, tmp)
	if err != nil {
		return nil, err
	}
	defer func() { _ = gw.stop() }()
	b := &bench{ctx: ctx, base: base, modelURL: modelURL, gw: gw, model: model, dataDir: dataDir, noSnapshots: true}
	fmt.Printf("\n== %s (exec → ready %s)\n", t.name, ms(ready))
	if err := b.dbOverheads(t); err != nil {
		return nil, err
	}
	if t.pg != nil {
		if err := gw.stop(); err != nil {
			return nil, fmt.Errorf("overhead gateway exit: %w", err)
		}
		gw2, base2, _, err := startTargetGateway(ctx, t, "throughput", t.direct, bin, dataDir, modelURL, tmp)
		if err != nil {
			return nil, err
		}
		gw, b.gw, b.base = gw2, gw2, base2
		fmt.Printf("throughput on a direct connection (no round-trip proxy: trips/turn not counted)\n")
	}
	return b.dbThroughputs(t)
}

// startTargetGateway starts the gateway of t's phase ("overhead" or "throughput") with env.
func startTargetGateway(ctx context.Context, t *dbTarget, phase string, env []string, bin, dataDir, modelURL, tmp string) (*process, string, time.Duration, error) {
	opts := gatewayOpts{bin: bin, dataDir: dataDir, modelURL: modelURL, logFile: filepath.Join(tmp, "gateway-"+t.name+"-"+phase+".log"),
		extraEnv: append(extraGatewayEnv(), env...)}
	if *profileDir != "" {
		dir := filepath.Join(*profileDir, t.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", 0, err
		}
		opts.args = []string{"-cpuprofile", filepath.Join(dir, "cpu-"+phase+".pprof")}
	}
	return startGateway(ctx, opts)
}

// dbThroughputs runs the throughput scenarios with the database's CPU beside the gateway's.
func (b *bench) dbThroughputs(t *dbTarget) (map[int]float64, error) {
	ctx := b.ctx
	fmt.Printf("%10s %10s %10s %10s %12s %12s %12s %12s %14s\n", "sessions", "turns", "turns/s", "ideal", "% of ideal", "p99 latency", "gw CPU/turn", "db CPU/turn", "trips/turn")
	rates := map[int]float64{}
	for _, s := range splitInts(*sessionsFlag) {
		if err := t.resetStatements(ctx); err != nil {
			return nil, err
		}
		db0 := t.dbCPU()
		r, err := b.run(s, *freshSessions)
		if err != nil {
			return nil, err
		}
		db1 := t.dbCPU()
		_, top, err := t.statements(ctx)
		if err != nil {
			return nil, err
		}
		rate := float64(r.turns) / r.elapsed.Seconds()
		ideal := float64(s) / modelLatency.Seconds()
		rates[s] = rate
		n := max(r.turns, 1)
		// The window's database CPU includes the turns begun or ended around it: close enough at
		// these counts, and the same for every backend. Round trips are not counted here (no
		// proxy); the overhead scenarios count them.
		fmt.Printf("%10d %10d %10.0f %10.0f %11.1f%% %12s %12s %12s %14s\n", s, r.turns, rate, ideal, 100*rate/ideal,
			ms(pct(r.lat, 99)), ms(r.cpu/time.Duration(n)), t.perTurn(db1-db0, n), "-")
		// The statements are counted from the reset before the sessions joined to their stop:
		// per turn of that whole span they are an estimate; the order is what matters.
		for _, st := range top {
			fmt.Printf("    %8d calls %9.1f ms  %s\n", st.calls, st.ms, st.query)
		}
	}
	return rates, nil
}
