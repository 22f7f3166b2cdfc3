package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

var _ agent.Model = (*Provider)(nil)

// Generate streams one chat completion; it implements agent.Model.
//
// It blocks until the answer is complete, the call failed or ctx ended. onDelta (may be nil) is
// called synchronously, in order, for every non-empty content or reasoning fragment; an error it
// returns closes the stream at once and is returned wrapped. Cancelling ctx closes the stream
// promptly and returns ctx's error wrapped.
//
// Attempts that fail before the first fragment was delivered are retried (see Config). Errors
// are *Error values wrapping a kind: agent.ErrUnavailable (429, 5xx, timeouts, unreachable: try
// another model; a 429 also carries a *echogate.RetryAfterError), ErrAuth, ErrModelNotFound,
// ErrBadRequest, ErrContextTooLong, or ErrStreamBroken after partial delivery. On error the
// Response holds the partial text and Usage with Failed set and Model named.
func (p *Provider) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	resp := agent.Response{
		Message: echogate.Message{Role: echogate.RoleAssistant},
		Usage:   echogate.Usage{Kind: echogate.UsageModel, Model: req.Model},
		Model:   req.Model,
	}
	body, err := p.chatBody(&req)
	if err != nil {
		resp.Usage.Failed = true
		return resp, err
	}
	var st *streamState
	err = p.retry(ctx, "chat", req.Model, func(actx context.Context) (int, error) {
		st = &streamState{}
		if body == nil { // the last attempt's answer had begun: encode the request again
			var err error
			if body, err = p.chatBody(&req); err != nil {
				return 0, err
			}
		}
		err := p.streamOnce(actx, &body, st, onDelta)
		return st.delivered, err
	})
	p.releaseBody(&body)
	st.fill(&resp)
	if err != nil {
		resp.Usage.Failed = true
		// A failed answer's tool calls may be incomplete: never hand them on.
		resp.Message.ToolCalls = nil
		return resp, err
	}
	if st.served != "" && st.served != req.Model {
		p.log.Debug("openai: answered by a model snapshot", "model", req.Model, "served", st.served)
	}
	return resp, nil
}

// releaseBody gives *body back, if any, and sets it to nil.
func (p *Provider) releaseBody(body **reqBody) {
	if *body == nil {
		return
	}
	(*body).release()
	*body = nil
	if p.bodyReleased != nil {
		p.bodyReleased()
	}
}

// chatBody builds and encodes the request of req. It is a call of its own (never inlined) so
// that its values (go-openai's request, the arguments and results of the calls building it) are
// not part of Generate's frame, which stays on the turn's stack while the answer streams.
//
//go:noinline
func (p *Provider) chatBody(req *agent.Request) (*reqBody, error) {
	creq, err := p.chatRequest(*req)
	if err != nil {
		return nil, err
	}
	key := ""
	if req.CacheKey != "" && p.cacheKey {
		key = promptCacheKey(req.CacheKey)
	}
	body := getReqBody()
	body.b, err = p.appendChatBody(body.b, &creq, key)
	putMessages(creq.Messages) // encoded: nothing refers to them any more
	if err != nil {
		body.release()
		return nil, fmt.Errorf("openai: chat with %s: encode the request: %w: %w", req.Model, err, ErrBadRequest)
	}
	return body, nil
}

// streamOnce makes one streaming attempt with *body, accumulating into st. Once the endpoint
// answered with a stream it gives the body back and sets *body to nil: the conversation,
// encoded, is not held for as long as the answer streams (seconds, for every turn in flight;
// a retry encodes it again).
func (p *Provider) streamOnce(ctx context.Context, body **reqBody, st *streamState, onDelta func(agent.Delta) error) error {
	// The idle clock runs from here until the response headers arrive, then during each wait
	// for the next chunk; it is paused while a chunk is handed to onDelta.
	actx, idle, stop := p.watchIdle(ctx)
	defer stop()
	stream, err := p.openStream(actx, *body)
	if err != nil {
		if idle.timedOut() {
			return &idleTimeout{p.cfg.Timeout}
		}
		return err
	}
	defer stream.Close()
	p.releaseBody(body)
	for {
		idle.wait()
		chunk, err := stream.Recv()
		idle.pause()
		if errors.Is(err, io.EOF) {
			if st.finish == "" {
				return errTruncated
			}
			return nil
		}
		if err != nil {
			if idle.timedOut() {
				return &idleTimeout{p.cfg.Timeout}
			}
			return err
		}
		if err := st.add(chunk, onDelta); err != nil {
			return err
		}
	}
}

// streamState assembles one attempt's answer.
type streamState struct {
	content   strings.Builder
	delivered int // characters of content and reasoning handed to onDelta
	calls     []*callAcc
	finish    string
	usage     *goopenai.Usage
	served    string // the model named by the chunks
	id        string // the completion id
}

type callAcc struct {
	index    int
	id, name string
	args     strings.Builder
}

func (st *streamState) add(c *goopenai.ChatCompletionStreamResponse, onDelta func(agent.Delta) error) error {
	if c.Usage != nil {
		st.usage = c.Usage
	}
	if c.Model != "" {
		st.served = c.Model
	}
	if st.id == "" {
		st.id = c.ID
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n is always 1; ignore any other choice
		}
		d := &ch.Delta
		text := d.Content
		if d.Refusal != "" {
			text += d.Refusal
		}
		if text != "" || d.ReasoningContent != "" {
			st.content.WriteString(text)
			st.delivered += len(text) + len(d.ReasoningContent)
			if onDelta != nil {
				if err := onDelta(agent.Delta{Text: text, Reasoning: d.ReasoningContent}); err != nil {
					return &callbackError{err}
				}
			}
		}
		for k := range d.ToolCalls {
			st.addCall(&d.ToolCalls[k])
		}
		if d.FunctionCall != nil { // legacy function_call streaming
			zero := 0
			st.addCall(&goopenai.ToolCall{Index: &zero, Function: *d.FunctionCall})
		}
		if ch.FinishReason != "" && ch.FinishReason != goopenai.FinishReasonNull {
			st.finish = string(ch.FinishReason)
		}
	}
	return nil
}

// addCall merges one tool-call fragment. Fragments are matched by index; servers that omit the
// index are matched by id, or continue the last call.
func (st *streamState) addCall(tc *goopenai.ToolCall) {
	var acc *callAcc
	switch {
	case tc.Index != nil:
		for _, a := range st.calls {
			if a.index == *tc.Index {
				acc = a
				break
			}
		}
		if acc == nil {
			acc = &callAcc{index: *tc.Index}
			st.calls = append(st.calls, acc)
		}
	case tc.ID != "":
		for _, a := range st.calls {
			if a.id == tc.ID {
				acc = a
				break
			}
		}
		if acc == nil {
			next := 0
			for _, a := range st.calls {
				next = max(next, a.index+1)
			}
			acc = &callAcc{index: next}
			st.calls = append(st.calls, acc)
		}
	case len(st.calls) > 0:
		acc = st.calls[len(st.calls)-1]
	default:
		acc = &callAcc{}
		st.calls = append(st.calls, acc)
	}
	if acc.id == "" {
		acc.id = tc.ID
	}
	if acc.name == "" {
		acc.name = tc.Function.Name
	}
	acc.args.WriteString(tc.Function.Arguments)
}

// fill writes the assembled answer into resp.
func (st *streamState) fill(resp *agent.Response) {
	if st == nil {
		return
	}
	resp.Message.Content = st.content.String()
	calls := slices.Clone(st.calls)
	slices.SortStableFunc(calls, func(a, b *callAcc) int { return a.index - b.index })
	for _, a := range calls {
		id := a.id
		if id == "" {
			id = "call_" + st.id + "_" + strconv.Itoa(a.index)
		}
		args := a.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, echogate.ToolCall{ID: id, Name: a.name, Arguments: args})
	}
	finish := st.finish
	switch {
	case finish == string(goopenai.FinishReasonFunctionCall):
		finish = string(goopenai.FinishReasonToolCalls)
	case len(resp.Message.ToolCalls) > 0 && finish == string(goopenai.FinishReasonStop):
		// Some servers (Ollama) report "stop" for an answer with tool calls.
		finish = string(goopenai.FinishReasonToolCalls)
	}
	resp.FinishReason = finish
	if u := st.usage; u != nil {
		resp.Usage.InputTokens = int64(u.PromptTokens)
		resp.Usage.OutputTokens = int64(u.CompletionTokens)
		if u.PromptTokensDetails != nil {
			resp.Usage.CachedInputTokens = int64(u.PromptTokensDetails.CachedTokens)
		}
	}
}
