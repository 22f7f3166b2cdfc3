package agenttest

import (
	"encoding/json"
	"strings"
)

// OpenAI's prompt caching, as the fake applies it with FakeOpenAIOptions.PrefixCache: a request's
// prompt (tools, then the messages in order) is compared with the earlier prompts of the same
// prompt_cache_key (all requests without one share a cache); the longest common prefix is
// cached when it is at least 1,024 tokens, counted in whole 128-token increments past the
// first 1,024. Tokens are estimated at 4 bytes each, as the fake's usage is.
const (
	cacheMinTokens  = 1024
	cacheStepTokens = 128
	// cachePrompts is how many earlier prompts per key are compared with.
	cachePrompts = 32
)

// renderPrompt is the byte string whose prefix is cached: the tool schemas and the messages,
// each with its role, in request order.
func renderPrompt(req ChatRequest) string {
	var b strings.Builder
	for _, t := range req.Tools {
		j, _ := json.Marshal(t)
		b.Write(j)
		b.WriteByte('\n')
	}
	for _, m := range req.Messages {
		b.WriteString("<|" + m.Role + "|>")
		b.WriteString(m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString("<|call|>" + tc.Function.Name + tc.Function.Arguments)
		}
		if m.ToolCallID != "" {
			b.WriteString("<|id|>" + m.ToolCallID)
		}
		b.WriteString("<|end|>")
	}
	return b.String()
}

// CachedTokens returns how many of the prompt's tokens OpenAI's rule counts as cached, given
// the earlier prompts of the same cache key, and the prompt's tokens.
func CachedTokens(prompt string, earlier []string) (cached, total int64) {
	total = tokensForLen(len(prompt))
	best := 0
	for _, e := range earlier {
		n := min(len(e), len(prompt))
		i := 0
		for i < n && e[i] == prompt[i] {
			i++
		}
		best = max(best, i)
	}
	tokens := int64(best / 4)
	if tokens < cacheMinTokens {
		return 0, total
	}
	return cacheMinTokens + (tokens-cacheMinTokens)/cacheStepTokens*cacheStepTokens, total
}

// prefixCache computes the request's prompt and cached tokens and remembers its prompt.
func (f *FakeOpenAI) prefixCache(req ChatRequest) (cached, total int64) {
	p := renderPrompt(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.prompts == nil {
		f.prompts = map[string][]string{}
	}
	earlier := f.prompts[req.PromptCacheKey]
	cached, total = CachedTokens(p, earlier)
	if len(earlier) >= cachePrompts {
		earlier = earlier[1:]
	}
	f.prompts[req.PromptCacheKey] = append(earlier, p)
	return cached, total
}
