package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

var (
	floorFlag  = flag.Bool("floor", true, "last, put the largest throughput load on a bare net/http proxy in its own process (an SSE handler streaming the model's answer: no storage, sessions, history or tools), under GOGC=50: what any Go gateway on net/http holds for the same turns in flight")
	floorProxy = flag.String("floor-proxy", "", "run as the bare proxy in front of this model URL (internal)")
)

// floor measures the bare proxy under the same closed-loop load as the gateway's largest
// throughput scenario. The gateway's figures less the floor's are what storage, sessions,
// histories, tools and the binary's own code cost; the floor itself is net/http's: per turn
// in flight a client connection and a model connection, four goroutines and their buffers.
// GOGC=50 matches the headroom internal/gcpace gives the gateway's heap at that load. Its
// memory is read again -after the load, as the gateway's is.
func (b *bench) floor(sessions int, env []string) error {
	if !*floorFlag || sessions <= 0 {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-floor-proxy", b.modelURL)
	cmd.Env = append(append(os.Environ(), env...), "GOGC=50")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p, err := start(cmd)
	if err != nil {
		return err
	}
	defer p.stop()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("floor proxy: read its URL: %w", err)
	}
	time.Sleep(idleSettle)
	idle, err := readMem(p.pid())
	if err != nil {
		return err
	}
	fb := &bench{ctx: b.ctx, base: strings.TrimSpace(line), gw: p, model: b.model, noSnapshots: true}
	r, err := fb.run(sessions, true)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	perTurn := time.Duration(0)
	if r.turns > 0 {
		perTurn = r.cpu / time.Duration(r.turns)
	}
	fmt.Printf("\nfloor: a bare net/http proxy (SSE handler streaming the model; no storage, sessions, history or tools; GOGC=50), same load\n")
	fmt.Printf("%10s %10s %10s %12s %12s %22s %22s\n", "sessions", "turns", "turns/s", "p99 latency", "CPU/turn", "VmRSS/RssAnon idle", "VmRSS/RssAnon peak")
	fmt.Printf("%10d %10d %10.0f %12s %12s %22s %22s\n", sessions, r.turns, float64(r.turns)/r.elapsed.Seconds(), ms(pct(r.lat, 99)), ms(perTurn), idle, r.peak)
	began := time.Now()
	for _, w := range splitDurations(*afterFlag) {
		time.Sleep(time.Until(began.Add(w)))
		m, err := readMem(p.pid())
		if err != nil {
			return err
		}
		// What the runtime keeps by itself, then what it can give back when asked (the
		// gateway's memtrim asks after a busy period).
		_ = p.cmd.Process.Signal(syscall.SIGUSR2)
		time.Sleep(500 * time.Millisecond)
		freed, err := readMem(p.pid())
		if err != nil {
			return err
		}
		fmt.Printf("  %s after load: %s (%.2f× idle RSS); after debug.FreeOSMemory %s (%.2f×)\n", w, m, float64(m.rss)/float64(idle.rss),
			freed, float64(freed.rss)/float64(idle.rss))
	}
	return nil
}

// runFloorProxy serves POST /api/chat as the gateway's web channel answers it (an SSE stream
// of deltas ending in a done event) by streaming a chat completion from modelURL, and nothing
// else; SIGUSR2 returns its free memory to the OS. It prints its base URL and serves until
// SIGTERM.
func runFloorProxy(modelURL string) int {
	signal.Ignore(syscall.SIGUSR1)
	free := make(chan os.Signal, 1)
	signal.Notify(free, syscall.SIGUSR2)
	go func() {
		for range free {
			debug.FreeOSMemory()
		}
	}()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// As the gateway's model client: an idle connection per concurrent call, closed after 30 s.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.IdleConnTimeout = 1024, 1024, 30*time.Second
	client := &http.Client{Transport: tr}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Session, User, Text string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": true,
			"messages": []map[string]string{{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": in.Text}}})
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, modelURL+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		br := bufio.NewReaderSize(resp.Body, 2<<10)
		for {
			line, err := br.ReadSlice('\n')
			if bytes.HasPrefix(line, []byte("data: [DONE]")) {
				break
			}
			if bytes.HasPrefix(line, []byte("data: ")) {
				_, _ = io.WriteString(w, "event: delta\n")
				_, _ = w.Write(line)
				_, _ = io.WriteString(w, "\n")
				flusher.Flush()
			}
			if err != nil && err != bufio.ErrBufferFull {
				break
			}
		}
		_, _ = io.WriteString(w, "event: done\ndata: {\"status\":\"done\"}\n\n")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor proxy:", err)
		return 1
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		_ = srv.Close()
	}()
	fmt.Println("http://" + ln.Addr().String())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "floor proxy:", err)
		return 1
	}
	return 0
}
