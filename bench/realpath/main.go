// Command realpath measures the gateway the way its users run it: the stripped `echogate serve`
// binary on embedded SQLite, a model server in another process speaking OpenAI's streaming HTTP
// API, and turns posted to POST /api/chat and read from its SSE stream. It reports figures; it
// never fails on them. Run it from the repository root:
//
//	go run ./bench/realpath                       # every scenario
//	go run ./bench/realpath -sessions 16,200      # fewer throughput scenarios
//	go run ./bench/realpath -profile /tmp/prof    # CPU and heap profiles of the gateway
//	go run ./bench/realpath -model-tls            # the model over HTTPS and HTTP/2, as OpenAI's API
//	go run ./bench/realpath -pg "$DATABASE_URL"   # SQLite against PostgreSQL: a turn's database cost (pgcost.go)
//
// Overhead: one session, the model answers at once; a turn's latency minus a direct streaming
// call to the same model server is the gateway's overhead; the gateway's CPU (from /proc) divided
// by the turns is its CPU per turn. The one-tool scenario makes each turn two model calls and a
// current_time call. Throughput: S sessions, each posting its next message when the previous
// one is answered, with a model answering in -model-latency; ideal is S / latency. Memory is the
// gateway's VmRSS / RssAnon idle, at its peak under load, and -after the load ends; the database
// is the data dir's bytes per turn. Repeated load (-repeat) runs the largest throughput scenario
// again with new sessions each round and reads memory after each: whether it grows.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	modelServer  = flag.Bool("model-server", false, "run as the benchmark's model server (internal)")
	modelLatency = flag.Duration("model-latency", 200*time.Millisecond, "model latency in the throughput scenarios")
	modelTLS     = flag.Bool("model-tls", false, "the model server speaks HTTPS with HTTP/2, as OpenAI's API does, and the gateway trusts its certificate through SSL_CERT_FILE (default: plain HTTP/1.1, as local model servers speak)")
	modelCert    = flag.String("model-cert", "", "where the model server writes its certificate (internal, with -model-server -model-tls)")
	overheadFlag = flag.String("overhead", "plain,tool", "overhead scenarios to run: plain, tool, or both (to profile one alone)")
	turnsFlag    = flag.Int("turns", 1000, "turns in each overhead scenario")
	sessionsFlag = flag.String("sessions", "16,200,1000", "concurrent sessions of the throughput scenarios")
	duration     = flag.Duration("duration", 8*time.Second, "measurement window of each throughput scenario (after the sessions joined)")
	afterFlag    = flag.String("after", "15s", "comma list of waits after the load whose VmRSS is reported, e.g. 15s,5m")
	profileDir   = flag.String("profile", "", "directory for the gateway's CPU profile (serve -cpuprofile; the Slack gateway's in slack-cpu.pprof), heap profile at exit, and heap and goroutine snapshots (serve -snapshot-dir) halfway through each throughput window and at each -after")
	binFlag      = flag.String("bin", "", "an echogate binary to measure instead of building ./cmd/echogate")
	keep         = flag.Bool("keep", false, "keep the data directory and the gateway's log")
)

func main() {
	flag.Parse()
	if *modelServer {
		os.Exit(runModelServer(*modelLatency, *modelTLS, *modelCert))
	}
	if *floorProxy != "" {
		os.Exit(runFloorProxy(*floorProxy))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "realpath:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "echogate-realpath-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Println("data and log kept in", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	bin, size, err := gatewayBinary(tmp)
	if err != nil {
		return err
	}
	certFile := ""
	if *modelTLS {
		certFile = filepath.Join(tmp, "model-cert.pem")
	}
	model, modelURL, err := startModelServer(*modelLatency, certFile)
	if err != nil {
		return err
	}
	defer model.stop()
	env := extraGatewayEnv()
	if certFile != "" {
		if err := trustModel(certFile); err != nil {
			return err
		}
		env = append(env, "SSL_CERT_FILE="+certFile)
	}

	fmt.Printf("echogate real-path benchmark — %s, %d CPUs; gateway, model server and load generator share them\n", runtime.Version(), runtime.NumCPU())
	fmt.Printf("stripped binary: %.1f MB\n", float64(size)/1e6)
	if *pgFlag != "" {
		return runDBCost(ctx, bin, model, modelURL, tmp)
	}

	dataDir := filepath.Join(tmp, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	opts := gatewayOpts{bin: bin, dataDir: dataDir, modelURL: modelURL, logFile: filepath.Join(tmp, "gateway.log"), extraEnv: env}
	gw, base, err := startTwice(ctx, &opts)
	if err != nil {
		return err
	}
	defer gw.stop()
	time.Sleep(idleSettle)
	idle, err := reportIdle(ctx, gw, base, opts)
	if err != nil {
		return err
	}
	if *idleOnly {
		return nil
	}

	b := &bench{ctx: ctx, base: base, modelURL: modelURL, gw: gw, model: model, dataDir: dataDir}
	if err := b.scenarios(opts, tmp, idle); err != nil {
		return err
	}
	if err := gw.stop(); err != nil {
		return fmt.Errorf("gateway exit: %w", err)
	}
	if *profileDir != "" {
		fmt.Printf("\nprofiles: go tool pprof -top %s/cpu.pprof (and heap.pprof; heap-N.pprof and goroutine-N.pprof are the snapshots)\n", *profileDir)
	}
	return nil
}

// gatewayBinary is the gateway under test and its size: -bin, or a stripped build into tmp.
func gatewayBinary(tmp string) (string, int64, error) {
	if *binFlag == "" {
		return buildGateway(tmp)
	}
	var size int64
	if fi, err := os.Stat(*binFlag); err == nil {
		size = fi.Size()
	}
	return *binFlag, size, nil
}

// startTwice measures exec → ready on a fresh data dir, then again on the existing one
// (migrations done), and leaves the second gateway running: with -profile it records profiles
// and snapshots, and opts keeps those arguments for the scenarios' restarts.
func startTwice(ctx context.Context, opts *gatewayOpts) (gw *process, base string, err error) {
	gw, _, fresh, err := startGateway(ctx, *opts)
	if err != nil {
		return nil, "", err
	}
	if err := gw.stop(); err != nil {
		return nil, "", fmt.Errorf("first gateway: %w", err)
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return nil, "", err
		}
		opts.args = []string{"-cpuprofile", filepath.Join(*profileDir, "cpu.pprof"), "-memprofile", filepath.Join(*profileDir, "heap.pprof"),
			"-snapshot-dir", *profileDir}
	}
	gw, base, existing, err := startGateway(ctx, *opts)
	if err != nil {
		return nil, "", err
	}
	fmt.Printf("exec → ready: fresh data dir %s, existing %s\n", ms(fresh), ms(existing))
	return gw, base, nil
}

// reportIdle prints the idle gateway's memory (web only, and its parts), then that of one with
// Slack and Discord connected to the fakes; it returns the first, the scenarios' baseline.
func reportIdle(ctx context.Context, gw *process, base string, opts gatewayOpts) (memInfo, error) {
	idle, err := readMem(gw.pid())
	if err != nil {
		return memInfo{}, err
	}
	fmt.Printf("idle VmRSS / RssAnon (web only): %s\n", idle)
	if p, err := readMemParts(base, gw.pid()); err == nil {
		fmt.Printf("  %s\n", p)
	}
	if m, err := binaryMappings(gw.pid()); err == nil && *idleOnly {
		fmt.Printf("  %s\n", m)
	}
	p, err := idleWithPlatforms(ctx, opts, idleSettle)
	if err != nil {
		return memInfo{}, err
	}
	fmt.Printf("idle VmRSS / RssAnon (web + Slack + Discord connected to the fakes): %s\n  %s\n\n", p.mem, p)
	return idle, nil
}

// scenarios runs the load scenarios the flags ask for on the serving gateway, idle being its
// idle memory: overheads (web, then Slack), paced sessions, throughputs, repeated rounds, memory
// after load; then the same load on the bare net/http proxy (floor).
func (b *bench) scenarios(opts gatewayOpts, tmp string, idle memInfo) error {
	if err := b.overheads(); err != nil {
		return err
	}
	if *slackFlag {
		if err := b.slackOverheads(opts, tmp); err != nil {
			return err
		}
	}
	if err := b.paced(*pacedFlag, *paceFlag); err != nil {
		return err
	}
	counts := splitInts(*sessionsFlag)
	if err := b.throughputs(counts); err != nil {
		return err
	}
	if len(counts) > 0 {
		if err := b.repeats(slices.Max(counts), *repeatFlag, *repeatWait); err != nil {
			return err
		}
	}
	if err := b.afterLoad(idle, splitDurations(*afterFlag)); err != nil {
		return err
	}
	if len(counts) == 0 {
		return nil
	}
	return b.floor(slices.Max(counts), opts.extraEnv)
}

func splitInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func splitDurations(s string) []time.Duration {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		if d, err := time.ParseDuration(strings.TrimSpace(f)); err == nil && d > 0 {
			out = append(out, d)
		}
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
