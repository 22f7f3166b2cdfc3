package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign returns Slack's v0 request signature ("v0=…") of body at timestamp stamp (Unix seconds
// as text) with the signing secret.
func Sign(secret, stamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + stamp + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
