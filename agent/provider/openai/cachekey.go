package openai

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Prompt caching: OpenAI routes requests with the same prompt_cache_key to the same cache, so
// the turns of one session reuse their common prompt prefix (cached input tokens are billed at
// a lower rate). go-openai's request type has no such field; the provider adds it to the JSON
// body on its way out (captureDoer), from the request's context.

// Values of Config.PromptCacheKey.
const (
	CacheKeyAuto = ""    // on for api.openai.com, off elsewhere
	CacheKeyOn   = "on"  // always sent (servers that accept or ignore unknown fields)
	CacheKeyOff  = "off" // never sent
)

type cacheKeyCtx struct{}

// validCacheKeyMode checks Config.PromptCacheKey.
func validCacheKeyMode(mode string) error {
	switch mode {
	case CacheKeyAuto, CacheKeyOn, CacheKeyOff:
		return nil
	}
	return fmt.Errorf("openai: prompt_cache_key %q: use on, off, or leave it empty (on for api.openai.com only)", mode)
}

// sendsCacheKey reports whether requests to base carry prompt_cache_key under mode.
func sendsCacheKey(mode, base string) bool {
	switch mode {
	case CacheKeyOn:
		return true
	case CacheKeyOff:
		return false
	}
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// promptCacheKey is the wire value for a request's CacheKey: a digest, so session keys (which
// name workspaces, channels and users) never leave the gateway.
func promptCacheKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "eg-" + hex.EncodeToString(sum[:12])
}

// addCacheKey puts "prompt_cache_key" first in req's JSON object body.
func addCacheKey(req *http.Request, key string) error {
	if req.Body == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("openai: read request body: %w", err)
	}
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("openai: request body is not a JSON object")
	}
	head := `{"prompt_cache_key":"` + key + `"`
	if rest := bytes.TrimLeft(body[1:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
		head += ","
	}
	out := make([]byte, 0, len(head)+len(body)-1)
	out = append(append(out, head...), body[1:]...)
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.ContentLength = int64(len(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	return nil
}
