package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/echogate/echogate"
)

type script struct {
	id, model, finish string
	calls             []echogate.ToolCall
	usage             wireUsage
}

func newScript(a Answer, req ChatRequest) script {
	s := script{id: fmt.Sprintf("chatcmpl-fake%d", req.Seq), model: a.Model, finish: a.FinishReason}
	if s.model == "" {
		s.model = req.Model
	}
	for i, c := range a.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", req.Seq, i)
		}
		s.calls = append(s.calls, c)
	}
	if s.finish == "" {
		s.finish = "stop"
		if len(s.calls) > 0 {
			s.finish = "tool_calls"
		}
	}
	prompt, completion := a.PromptTokens, a.CompletionTokens
	if prompt == 0 {
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content) + 4
			for _, tc := range m.ToolCalls {
				n += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
		}
		for _, t := range req.Tools {
			n += len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
		}
		prompt = tokensForLen(n)
	}
	if completion == 0 {
		n := len(a.Text) + len(a.Reasoning)
		for _, c := range s.calls {
			n += len(c.Name) + len(c.Arguments)
		}
		completion = tokensForLen(n)
	}
	s.usage = wireUsage{
		PromptTokens:            prompt,
		CompletionTokens:        completion,
		TotalTokens:             prompt + completion,
		PromptTokensDetails:     map[string]int{"cached_tokens": int(a.CachedTokens), "audio_tokens": 0},
		CompletionTokensDetails: map[string]int{"reasoning_tokens": int(tokensForLen(len(a.Reasoning))), "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
	return s
}

// sseSender writes one answer's events; send returns false to stop (client gone, or the
// answer drops or holds the stream on purpose).
type sseSender struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	ctx  context.Context
	a    Answer
	sent int
	buf  bytes.Buffer
}

func (s *sseSender) send(payload any) bool {
	a := s.a
	if a.Drop && s.sent == a.DropAfter {
		hijackClose(s.w)
		return false
	}
	if a.Hold != nil && s.sent == a.HoldAfter {
		select {
		case <-a.Hold:
		case <-s.ctx.Done():
			return false
		}
	}
	if s.sent > 0 && !waitCtx(s.ctx, a.ChunkDelay) {
		return false
	}
	s.buf.Reset()
	s.buf.WriteString("data: ")
	if raw, ok := payload.(string); ok {
		s.buf.WriteString(raw)
	} else {
		b, err := json.Marshal(payload)
		if err != nil {
			return false
		}
		s.buf.Write(b)
	}
	s.buf.WriteString("\n\n")
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return false
	}
	if err := s.rc.Flush(); err != nil {
		return false
	}
	s.sent++
	return true
}

func (f *FakeOpenAI) stream(w http.ResponseWriter, r *http.Request, a Answer, req ChatRequest, s script) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Request-Id", fmt.Sprintf("req_fake_%d", req.Seq))
	w.WriteHeader(http.StatusOK)
	out := &sseSender{w: w, rc: http.NewResponseController(w), ctx: r.Context(), a: a}
	if err := out.rc.Flush(); err != nil {
		return
	}
	chunk := func(d chunkDelta, finish *string) wireChunk {
		return wireChunk{
			ID: s.id, Object: "chat.completion.chunk", Created: f.created, Model: s.model,
			SystemFingerprint: "fp_fake",
			Choices:           []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}},
		}
	}
	empty := ""
	if !out.send(chunk(chunkDelta{Role: "assistant", Content: &empty}, nil)) {
		return
	}
	for _, frag := range Fragments(a.Reasoning, a.FragmentSize) {
		if !out.send(chunk(chunkDelta{ReasoningContent: frag}, nil)) {
			return
		}
	}
	for _, frag := range Fragments(a.Text, a.FragmentSize) {
		if !out.send(chunk(chunkDelta{Content: &frag}, nil)) {
			return
		}
	}
	for _, tc := range toolCallDeltas(s.calls, a.ArgFragmentSize) {
		if !out.send(chunk(chunkDelta{ToolCalls: []WireToolCall{tc}}, nil)) {
			return
		}
	}
	finish := s.finish
	if !out.send(chunk(chunkDelta{}, &finish)) {
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !a.OmitUsage {
		u := s.usage
		if !out.send(wireChunk{ID: s.id, Object: "chat.completion.chunk", Created: f.created, Model: s.model, SystemFingerprint: "fp_fake", Choices: []chunkChoice{}, Usage: &u}) {
			return
		}
	}
	out.send("[DONE]")
}

// toolCallDeltas is how OpenAI streams tool calls: each call's id and name first, then its
// arguments in fragments of argSize bytes (6 when 0), the calls interleaved round by round.
func toolCallDeltas(calls []echogate.ToolCall, argSize int) []WireToolCall {
	if argSize <= 0 {
		argSize = 6
	}
	frags := make([][]string, len(calls))
	rounds := 1
	for i, c := range calls {
		frags[i] = splitBytes(c.Arguments, argSize)
		rounds = max(rounds, len(frags[i])+1)
	}
	var out []WireToolCall
	for round := 0; len(calls) > 0 && round < rounds; round++ {
		for i, c := range calls {
			idx := i
			switch {
			case round == 0:
				out = append(out, WireToolCall{Index: &idx, ID: c.ID, Type: "function", Function: WireFunction{Name: c.Name, Arguments: ""}})
			case round-1 < len(frags[i]):
				out = append(out, WireToolCall{Index: &idx, Function: WireFunction{Arguments: frags[i][round-1]}})
			}
		}
	}
	return out
}

func (f *FakeOpenAI) complete(w http.ResponseWriter, a Answer, req ChatRequest, s script) {
	msg := completionMsg{Role: "assistant", ReasoningContent: a.Reasoning}
	if a.Text != "" || len(s.calls) == 0 {
		text := a.Text
		msg.Content = &text
	}
	for _, c := range s.calls {
		msg.ToolCalls = append(msg.ToolCalls, WireToolCall{ID: c.ID, Type: "function", Function: WireFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	u := s.usage
	body := wireCompletion{
		ID: s.id, Object: "chat.completion", Created: f.created, Model: s.model, SystemFingerprint: "fp_fake",
		Choices: []completionChoice{{Index: 0, Message: msg, FinishReason: s.finish}},
		Usage:   &u,
	}
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_fake_%d", req.Seq))
	writeJSON(w, http.StatusOK, body)
}
