package extract

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// PDFs are read in a child process of the running binary, so a file that makes the PDF reader
// allocate without bound or loop fails that one request instead of the gateway (a Go
// "fatal error: out of memory" is no panic, and recover does not catch it). Any binary that links
// this package can be that child: init below serves one extraction on stdin/stdout and exits
// when the environment marks the process as one.
const (
	childEnv = "ECHOGATE_EXTRACT_CHILD"
	// ChildMemory bounds the address space a child may add beyond what it started with.
	ChildMemory = 768 << 20
	// ChildTimeout bounds one extraction's wall time.
	ChildTimeout = 60 * time.Second
	// maxChildren bounds the children running at once; more extractions wait for a slot.
	maxChildren = 2
	// maxChildOutput bounds the answer read back from a child.
	maxChildOutput = 64 << 20
)

var childSlots = make(chan struct{}, maxChildren)

func init() {
	if os.Getenv(childEnv) == "1" {
		os.Exit(serveChild(os.Stdin, os.Stdout))
	}
}

type childRequest struct {
	Data     []byte
	Label    string
	Opt      Options
	Deadline time.Duration
	// Unchecked skips checkPDF in the child: tests use it to show that what the check would
	// have refused is contained anyway.
	Unchecked bool
	// ReportEnv makes the child answer its environment (one variable a line) as the document's
	// text instead of reading a PDF: tests use it to show the child gets no secrets.
	ReportEnv bool
}

type childResponse struct {
	Doc  Document
	Kind int // index into sentinels + 1; 0 = no error
	Err  string
}

var sentinels = []error{ErrUnsupported, ErrImage, ErrNoText, ErrMalformed, ErrPageRange}

// childError is an error read back from a child: its message, wrapping the sentinel it wrapped.
type childError struct {
	kind error
	msg  string
}

func (e *childError) Error() string { return e.msg }
func (e *childError) Unwrap() error { return e.kind }

// serveChild reads one childRequest, limits this process and answers a childResponse. It returns
// the exit code.
func serveChild(in io.Reader, out io.Writer) int {
	var req childRequest
	if err := gob.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "extract child: read request: %v\n", err)
		return 3
	}
	limitSelf(ChildMemory, req.Deadline)
	read := pdfInProcess
	switch {
	case req.ReportEnv:
		read = func(context.Context, []byte, string, Options) (Document, error) {
			return Document{Text: strings.Join(os.Environ(), "\n")}, nil
		}
	case req.Unchecked:
		read = pdfUnchecked
	}
	doc, err := read(context.Background(), req.Data, req.Label, req.Opt)
	resp := childResponse{Doc: doc}
	if err != nil {
		resp.Err = err.Error()
		for i, s := range sentinels {
			if errors.Is(err, s) {
				resp.Kind = i + 1
				break
			}
		}
	}
	if err := gob.NewEncoder(out).Encode(resp); err != nil {
		fmt.Fprintf(os.Stderr, "extract child: write answer: %v\n", err)
		return 3
	}
	return 0
}

// pdfIsolated runs pdfInProcess in a child process. It blocks until the child answers, dies, runs
// past ChildTimeout or ctx ends (the child is killed then, and ctx's error returned). A child
// that dies or runs out of time is ErrMalformed with the reason.
func pdfIsolated(ctx context.Context, data []byte, label string, opt Options) (Document, error) {
	return runChild(ctx, childRequest{Data: data, Label: label, Opt: opt, Deadline: ChildTimeout})
}

func runChild(ctx context.Context, req childRequest) (Document, error) {
	label := req.Label
	exe, err := selfExe()
	if err != nil {
		return Document{}, fmt.Errorf("extract: %s: cannot start the PDF reader process: %w", label, err)
	}
	select {
	case childSlots <- struct{}{}:
		defer func() { <-childSlots }()
	case <-ctx.Done():
		return Document{}, ctx.Err()
	}
	var in bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(req); err != nil {
		return Document{}, fmt.Errorf("extract: %s: encode request: %w", label, err)
	}
	cctx, cancel := context.WithTimeout(ctx, ChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = append(childEnviron(), childEnv+"=1")
	cmd.Stdin = &in
	var out bytes.Buffer
	var stderr tailBuffer
	cmd.Stdout = &limitedWriter{w: &out, n: maxChildOutput}
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if err := ctx.Err(); err != nil {
		return Document{}, err
	}
	if runErr != nil {
		switch {
		case cctx.Err() != nil:
			return Document{}, fmt.Errorf("%w: %s took longer than %s to read; it is damaged or built to never finish: export it again or send the text",
				ErrMalformed, label, ChildTimeout)
		case outOfMemory(stderr.String()):
			return Document{}, fmt.Errorf("%w: %s needs more than %d MiB to read; it is damaged or built to exhaust memory: export it again or send the text",
				ErrMalformed, label, ChildMemory>>20)
		}
		return Document{}, fmt.Errorf("%w: %s made the PDF reader fail (%v: %s); export it again or send the text",
			ErrMalformed, label, runErr, lastLine(stderr.String()))
	}
	var resp childResponse
	if err := gob.NewDecoder(&out).Decode(&resp); err != nil {
		return Document{}, fmt.Errorf("%w: %s: the PDF reader's answer is unreadable (%v); send the text instead", ErrMalformed, label, err)
	}
	if resp.Kind > 0 && resp.Kind <= len(sentinels) {
		return Document{}, &childError{kind: sentinels[resp.Kind-1], msg: resp.Err}
	}
	if resp.Err != "" {
		return Document{}, errors.New(resp.Err)
	}
	return resp.Doc, nil
}

// childEnviron is the child's whole environment besides its flag: PATH only. The gateway's
// environment holds its tokens and keys, and the child reads untrusted files; nothing else is
// needed (GOMEMLIMIT, GODEBUG and the like would only make it do more than extract).
func childEnviron() []string {
	return []string{"PATH=" + os.Getenv("PATH")}
}

// outOfMemory reports a Go runtime's death by its memory limit (the race detector's runtime says
// it in its own words).
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space collisions"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "fatal error") || strings.HasPrefix(l, "panic") || strings.HasPrefix(l, "runtime:") {
			return l
		}
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// tailBuffer keeps the first 8 KiB written to it: enough for a runtime's fatal error line.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	if room := 8<<10 - t.b.Len(); room > 0 {
		t.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.b.String() }

// limitedWriter fails a write past n bytes, so a child cannot fill the parent's memory.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, fmt.Errorf("extract: the PDF reader's answer is over %d MiB", maxChildOutput>>20)
	}
	l.n -= len(p)
	return l.w.Write(p)
}
