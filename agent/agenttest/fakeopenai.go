package agenttest

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/echogate/echogate/internal/hashvec"

	"github.com/echogate/echogate"
)

// Answer scripts one response of FakeOpenAI. The zero value answers an empty text; Status makes it
// an HTTP error instead.
type Answer struct {
	// Text is the assistant content, streamed in fragments of FragmentSize runes (default 4).
	Text string
	// Reasoning is streamed before Text as delta.reasoning_content (DeepSeek / vLLM style).
	Reasoning    string
	FragmentSize int
	// ToolCalls are streamed as tool_calls fragments: the first fragment of each call carries index,
	// id, type and name; the arguments follow in pieces of ArgFragmentSize bytes (default 6), the
	// calls interleaved round-robin. An empty ID becomes "call_<request>_<i>".
	ToolCalls       []echogate.ToolCall
	ArgFragmentSize int
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// Model is the model named in the chunks (default: the request's).
	Model string
	// PromptTokens and CompletionTokens are reported in the usage chunk; zero means an estimate of
	// about 4 bytes per token. CachedTokens goes to prompt_tokens_details.cached_tokens.
	PromptTokens, CompletionTokens, CachedTokens int64
	// OmitUsage leaves out the usage chunk even when the request asked for it.
	OmitUsage bool

	// Status, when not 0 or 200, answers with that HTTP status and an OpenAI error body. ErrorType,
	// ErrorCode and ErrorMessage default to what OpenAI sends for the status.
	Status       int
	ErrorMessage string
	ErrorType    string
	ErrorCode    string
	// RetryAfter sets the Retry-After (whole seconds, rounded up) and retry-after-ms headers.
	RetryAfter time.Duration

	// Latency delays the response headers; ChunkDelay spaces the chunks. Both end early when the
	// client goes away.
	Latency    time.Duration
	ChunkDelay time.Duration
	// Drop closes the connection abruptly after DropAfter chunks (0: right after the headers),
	// without the terminating [DONE] or the chunked-encoding trailer.
	Drop      bool
	DropAfter int
	// Hold, when non-nil, stops the stream after HoldAfter chunks until Hold is closed or the client
	// goes away.
	Hold      <-chan struct{}
	HoldAfter int
}

// TextAnswer answers text.
func TextAnswer(text string) Answer { return Answer{Text: text} }

// ToolAnswer answers with tool calls.
func ToolAnswer(calls ...echogate.ToolCall) Answer { return Answer{ToolCalls: calls} }

// StatusAnswer answers with an HTTP error status.
func StatusAnswer(status int) Answer { return Answer{Status: status} }

// RateLimited answers 429 with a Retry-After header.
func RateLimited(after time.Duration) Answer {
	return Answer{Status: http.StatusTooManyRequests, RetryAfter: after}
}

// Responder picks the answer for a chat request; ok false passes to the next responder.
type Responder func(req ChatRequest) (a Answer, ok bool)

// FakeOpenAIOptions configures a FakeOpenAI. The zero value accepts any key and model.
type FakeOpenAIOptions struct {
	// APIKey, when set, must be sent as "Authorization: Bearer <APIKey>"; otherwise 401.
	APIKey string
	// Models, when set, lists the models that exist; others get 404 model_not_found. GET
	// /v1/models lists them (or a small default list).
	Models []string
	// Default answers chat requests that neither the queue nor a responder answered. Without it such
	// a request gets a 400 naming the missing script.
	Default *Answer
	// EmbeddingDims is the vector size when the request names no dimensions; 0 means 1536.
	EmbeddingDims int
	// Lenient skips the transcript checks the real API makes (tool messages answering tool calls,
	// tool names, non-empty messages).
	Lenient bool
	// Forget keeps no record of requests (ChatRequests and EmbeddingRequests stay empty), so a
	// long-running fake, such as a benchmark's model server, holds no memory per request.
	Forget bool
	// PrefixCache applies OpenAI's prompt-caching rule (see prefixcache.go): each chat answer
	// reports the prompt's estimated tokens and how many of them were cached, unless the Answer
	// sets PromptTokens or CachedTokens itself.
	PrefixCache bool
	// TLS serves HTTPS with HTTP/2, as OpenAI's API does (one connection carries many concurrent
	// streams); clients must trust CertificatePEM. Otherwise plain HTTP/1.1, as most local
	// model servers speak.
	TLS bool
}

// FakeOpenAI is an httptest server speaking the OpenAI wire protocol on 127.0.0.1:
// POST /v1/chat/completions (streaming SSE and plain JSON), POST /v1/embeddings, GET /v1/models.
//
// Chat answers come, in order of precedence, from the queue (Enqueue), the responders (Respond)
// and the default answer. Every decoded request is recorded. It is safe for concurrent use.
type FakeOpenAI struct {
	srv  *httptest.Server
	opts FakeOpenAIOptions

	mu         sync.Mutex
	queue      []Answer
	embedQueue []Answer
	responders []Responder
	chats      []ChatRequest
	embeds     []EmbeddingRequest
	created    int64
	seq        int                 // chat requests received
	embedSeq   int                 // embedding requests received
	prompts    map[string][]string // PrefixCache: earlier prompts per prompt_cache_key
}

// NewFakeOpenAI starts a fake server. Close it when done.
func NewFakeOpenAI(opts FakeOpenAIOptions) *FakeOpenAI {
	f := &FakeOpenAI{opts: opts, created: 1700000000}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", f.handleChat)
	mux.HandleFunc("/v1/embeddings", f.handleEmbeddings)
	mux.HandleFunc("/v1/models", f.handleModels)
	mux.HandleFunc("/v1/models/{id}", f.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", "")
	})
	if opts.TLS {
		f.srv = httptest.NewUnstartedServer(mux)
		f.srv.EnableHTTP2 = true
		f.srv.StartTLS()
	} else {
		f.srv = httptest.NewServer(mux)
	}
	return f
}

// CertificatePEM is the certificate a client must trust to reach a TLS server (Options.TLS),
// PEM-encoded; nil for plain HTTP.
func (f *FakeOpenAI) CertificatePEM() []byte {
	c := f.srv.Certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// URL is the base URL to configure clients with, including /v1.
func (f *FakeOpenAI) URL() string { return f.srv.URL + "/v1" }

// Close shuts the server down, closing open streams.
func (f *FakeOpenAI) Close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// Enqueue adds one-shot chat answers, used first, in order.
func (f *FakeOpenAI) Enqueue(a ...Answer) {
	f.mu.Lock()
	f.queue = append(f.queue, a...)
	f.mu.Unlock()
}

// EnqueueEmbedding adds one-shot embedding answers. Only Status, the Error* fields, RetryAfter,
// Latency and Drop apply; a zero Answer computes the embeddings normally.
func (f *FakeOpenAI) EnqueueEmbedding(a ...Answer) {
	f.mu.Lock()
	f.embedQueue = append(f.embedQueue, a...)
	f.mu.Unlock()
}

// Respond adds a responder consulted (in order of addition) when the queue is empty. It runs
// outside the server's lock, on the request's goroutine, and may be called concurrently.
func (f *FakeOpenAI) Respond(r Responder) {
	f.mu.Lock()
	f.responders = append(f.responders, r)
	f.mu.Unlock()
}

// Pending returns how many queued chat answers are unused.
func (f *FakeOpenAI) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// ChatRequests returns the chat requests received so far, in arrival order.
func (f *FakeOpenAI) ChatRequests() []ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.chats)
}

// EmbeddingRequests returns the embedding requests received so far, in arrival order.
func (f *FakeOpenAI) EmbeddingRequests() []EmbeddingRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.embeds)
}

const maxBody = 32 << 20

func (f *FakeOpenAI) authorize(w http.ResponseWriter, r *http.Request) bool {
	if f.opts.APIKey == "" {
		return true
	}
	if r.Header.Get("Authorization") == "Bearer "+f.opts.APIKey {
		return true
	}
	writeError(w, http.StatusUnauthorized, "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key")
	return false
}

func (f *FakeOpenAI) modelExists(model string) bool {
	return len(f.opts.Models) == 0 || slices.Contains(f.opts.Models, model)
}

func (f *FakeOpenAI) handleChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed; use POST", "invalid_request_error", "")
		return
	}
	if !f.authorize(w, r) {
		return
	}
	var req ChatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", "")
		return
	}
	req.Header = r.Header.Clone()
	f.mu.Lock()
	f.seq++
	req.Seq = f.seq
	if !f.opts.Forget {
		f.chats = append(f.chats, req)
	}
	f.mu.Unlock()

	if !f.opts.Lenient {
		if msg, param := validateChat(req); msg != "" {
			writeJSON(w, http.StatusBadRequest, wireError{Error: wireErrorBody{Message: msg, Type: "invalid_request_error", Param: &param}})
			return
		}
	}
	if !f.modelExists(req.Model) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", "model_not_found")
		return
	}
	a, ok := f.pickChat(req)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("agenttest.FakeOpenAI: no answer scripted for chat request %d (last message role %q): Enqueue an answer, add a Responder or set Options.Default", req.Seq, req.Last().Role), "invalid_request_error", "")
		return
	}
	if !waitCtx(r.Context(), a.Latency) {
		return
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		writeAnswerError(w, a)
		return
	}
	if a.Drop && a.DropAfter == 0 && !req.Stream {
		hijackClose(w)
		return
	}
	s := newScript(a, req)
	if f.opts.PrefixCache && a.PromptTokens == 0 && a.CachedTokens == 0 {
		cached, total := f.prefixCache(req)
		s.usage.PromptTokens, s.usage.TotalTokens = total, total+s.usage.CompletionTokens
		s.usage.PromptTokensDetails["cached_tokens"] = int(cached)
	}
	if req.Stream {
		f.stream(w, r, a, req, s)
		return
	}
	f.complete(w, a, req, s)
}

func (f *FakeOpenAI) pickChat(req ChatRequest) (Answer, bool) {
	f.mu.Lock()
	if len(f.queue) > 0 {
		a := f.queue[0]
		f.queue = f.queue[1:]
		f.mu.Unlock()
		return a, true
	}
	rs := slices.Clone(f.responders)
	f.mu.Unlock()
	for _, resp := range rs {
		if a, ok := resp(req); ok {
			return a, true
		}
	}
	if f.opts.Default != nil {
		return *f.opts.Default, true
	}
	return Answer{}, false
}

// handleModels serves GET /v1/models and /v1/models/{id}, listing Options.Models (or a default set).
func (f *FakeOpenAI) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed; use GET", "invalid_request_error", "")
		return
	}
	if !f.authorize(w, r) {
		return
	}
	models := f.opts.Models
	if len(models) == 0 {
		models = []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small"}
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	if id := r.PathValue("id"); id != "" {
		if !f.modelExists(id) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("The model '%s' does not exist", id), "invalid_request_error", "model_not_found")
			return
		}
		writeJSON(w, http.StatusOK, model{ID: id, Object: "model", Created: f.created, OwnedBy: "echogate-fake"})
		return
	}
	list := make([]model, len(models))
	for i, m := range models {
		list[i] = model{ID: m, Object: "model", Created: f.created, OwnedBy: "echogate-fake"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

// waitCtx waits d (no wait when d <= 0); false when ctx ended first.
func waitCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func splitBytes(s string, size int) []string {
	var out []string
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// HashEmbedding is the fake's deterministic embedding (internal/hashvec): texts sharing words are
// close in cosine similarity. dims <= 0 means 1536.
func HashEmbedding(text string, dims int) []float32 { return hashvec.Embed(text, dims) }
