// Package secretbox seals small secrets (OAuth tokens of MCP servers) for storage at rest with
// AES-256-GCM from the standard library. The key is 32 random bytes, given base64-encoded in
// ECHOGATE_SECRET_KEY; every replica of a gateway needs the same key to read what another sealed.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// EnvVar names the variable that holds the key.
const EnvVar = "ECHOGATE_SECRET_KEY"

// HowToMake is the command that makes a key, for error messages and doctor.
const HowToMake = "head -c 32 /dev/urandom | base64"

// version is the first byte of every sealed blob: a later format (another cipher, key
// rotation) can be told from this one.
const version = 1

// ErrNoKey is wrapped when the key variable is not set.
var ErrNoKey = errors.New(EnvVar + " is not set")

// ErrOpen is wrapped when a blob cannot be opened: another key sealed it, or it was altered
// or moved to another record.
var ErrOpen = errors.New("secretbox: cannot open: sealed with another key, or altered")

// Box seals and opens blobs with one key. It is safe for concurrent use.
type Box struct{ aead cipher.AEAD }

// New builds a Box from a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secretbox: the key is %d bytes, want 32; make one with `%s`", len(key), HowToMake)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// FromEnv builds a Box from the base64 key in ECHOGATE_SECRET_KEY, read with getenv (os.Getenv).
// Its errors name the variable and say how to make a key.
func FromEnv(getenv func(string) string) (*Box, error) {
	v := strings.TrimSpace(getenv(EnvVar))
	if v == "" {
		return nil, fmt.Errorf("%w: set it to 32 random bytes in base64, made with `%s`, the same on every replica", ErrNoKey, HowToMake)
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid base64 (%v); make a key with `%s`", EnvVar, err, HowToMake)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("%s decodes to %d bytes, want 32; make a key with `%s`", EnvVar, len(key), HowToMake)
	}
	return New(key)
}

// Seal encrypts plain bound to ad (associated data: what the blob is for, e.g. its record's
// key, so that a blob copied to another record does not open there).
func (b *Box) Seal(plain, ad []byte) []byte {
	out := make([]byte, 1+b.aead.NonceSize(), 1+b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		panic("secretbox: crypto/rand failed: " + err.Error()) // crypto/rand does not fail on supported platforms
	}
	return b.aead.Seal(out, out[1:], plain, ad)
}

// Open decrypts what Seal returned for the same ad; it fails wrapping ErrOpen otherwise.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns+b.aead.Overhead() {
		return nil, fmt.Errorf("%w (%d bytes, too short)", ErrOpen, len(sealed))
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("%w (format %d, want %d)", ErrOpen, sealed[0], version)
	}
	plain, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
