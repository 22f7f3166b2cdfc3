package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// The model server is this program again, started with -model-server: agenttest's OpenAI-wire
// fake in its own process, so its CPU is not the gateway's. What it answers depends on the
// benchmark's message text, which the gateway forwards verbatim:
//
//	"tool …"   first call: one current_time tool call; after the tool result: the answer
//	"slow …"   the answer after -model-latency (the throughput scenarios)
//	otherwise  the answer at once
//
// Anything else the gateway asks (summaries, embeddings) gets the same short answer at once.
const (
	answerText = "Hello! This is the benchmark model's short answer."
	toolPrefix = "tool "
	slowPrefix = "slow "
)

// With useTLS it serves HTTPS with HTTP/2 and writes its certificate to certFile first.
func runModelServer(latency time.Duration, useTLS bool, certFile string) int {
	f := agenttest.NewFakeOpenAI(agenttest.FakeOpenAIOptions{Lenient: true, Forget: true,
		Default: &agenttest.Answer{Text: answerText}, TLS: useTLS})
	defer f.Close()
	if useTLS {
		if err := os.WriteFile(certFile, f.CertificatePEM(), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "model server:", err)
			return 1
		}
	}
	f.Respond(func(req agenttest.ChatRequest) (agenttest.Answer, bool) {
		user := req.LastUser()
		switch {
		case strings.HasPrefix(user, toolPrefix) && req.Last().Role == "user":
			return agenttest.Answer{ToolCalls: []echogate.ToolCall{{Name: "current_time", Arguments: `{}`}},
				PromptTokens: 300, CompletionTokens: 8}, true
		case strings.HasPrefix(user, slowPrefix):
			return agenttest.Answer{Text: answerText, Latency: latency, PromptTokens: 300, CompletionTokens: 12}, true
		}
		return agenttest.Answer{Text: answerText, PromptTokens: 300, CompletionTokens: 12}, true
	})
	fmt.Println(f.URL()) // the parent reads the base URL from the first line
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return 0
}
