package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
)

// Prompt caching: OpenAI routes requests with the same prompt_cache_key to the same cache, so
// the turns of one session reuse their common prompt prefix (cached input tokens are billed at
// a lower rate). The provider sends a digest of the request's CacheKey (wire.go).

// Values of Config.PromptCacheKey.
const (
	CacheKeyAuto = ""    // on for api.openai.com, off elsewhere
	CacheKeyOn   = "on"  // always sent (servers that accept or ignore unknown fields)
	CacheKeyOff  = "off" // never sent
)

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
