package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is a child process of the benchmark: the model server or the gateway.
type process struct {
	cmd  *exec.Cmd
	done chan error
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits (bounded) for the exit; a process that does not exit is killed.
func (p *process) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not exit within 30 s of SIGTERM: killed", p.cmd.Path)
	}
}

func start(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// startModelServer re-executes this program as the model server and reads its base URL. With
// certFile it serves HTTPS (HTTP/2) and writes its certificate there before it answers.
func startModelServer(latency time.Duration, certFile string) (*process, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	args := []string{"-model-server", "-model-latency", latency.String()}
	if certFile != "" {
		args = append(args, "-model-tls", "-model-cert", certFile)
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	p, err := start(cmd)
	if err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = p.stop()
		return nil, "", fmt.Errorf("model server: read its URL: %w", err)
	}
	return p, strings.TrimSpace(line), nil
}

// buildGateway builds the echogate binary as `make build` does (stripped, CGO off) and returns
// its path and size.
func buildGateway(dir string) (string, int64, error) {
	bin := filepath.Join(dir, "echogate")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/echogate")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("go build ./cmd/echogate (run the benchmark from the repository root): %w", err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return "", 0, err
	}
	return bin, fi.Size(), nil
}

// gatewayOpts is how one gateway process is started.
type gatewayOpts struct {
	bin, dataDir, modelURL, logFile string
	extraEnv                        []string
	args                            []string // after "serve"
}

// startGateway runs `echogate serve` on a free loopback port and waits until /readyz answers 200.
// It returns the process, the base URL and exec → ready.
func startGateway(ctx context.Context, o gatewayOpts) (*process, string, time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(o.logFile)
	if err != nil {
		return nil, "", 0, err
	}
	cmd := exec.Command(o.bin, append([]string{"serve"}, o.args...)...)
	cmd.Dir = o.dataDir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"OPENAI_BASE_URL=" + o.modelURL, "OPENAI_API_KEY=sk-bench",
		"ECHOGATE_DATA_DIR=" + o.dataDir, "ECHOGATE_HTTP_ADDR=" + addr,
		// Every session is the one user "bench": no per-user cap or rate on the load.
		"ECHOGATE_AGENT_MAX_CONCURRENT_TURNS_PER_USER=-1", "ECHOGATE_AGENT_USER_RATE_PER_MINUTE=-1",
	}, o.extraEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	began := time.Now()
	p, err := start(cmd)
	if err != nil {
		logf.Close()
		return nil, "", 0, err
	}
	base := "http://" + addr
	c := &http.Client{Timeout: time.Second}
	for {
		resp, err := c.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, base, time.Since(began), nil
			}
		}
		select {
		case err := <-p.done:
			return nil, "", 0, fmt.Errorf("echogate serve exited before ready (%v); see %s", err, o.logFile)
		case <-ctx.Done():
			_ = p.stop()
			return nil, "", 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
