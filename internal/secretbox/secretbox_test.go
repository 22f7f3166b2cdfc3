package secretbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func env(v string) func(string) string {
	return func(k string) string {
		if k == EnvVar {
			return v
		}
		return ""
	}
}

func TestSealOpenRoundTripsAndBindsAssociatedData(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	b, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("access-token"), []byte("mcp_token\x00tracker\x00"))
	if bytes.Contains(sealed, []byte("access-token")) {
		t.Fatalf("Seal left the plain text visible: %q", sealed)
	}
	got, err := b.Open(sealed, []byte("mcp_token\x00tracker\x00"))
	if err != nil || string(got) != "access-token" {
		t.Fatalf("Open = %q, %v, want access-token, nil", got, err)
	}
	if _, err := b.Open(sealed, []byte("mcp_token\x00other\x00")); !errors.Is(err, ErrOpen) {
		t.Errorf("Open with another record's ad = %v, want ErrOpen", err)
	}
	other, _ := New(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(sealed, []byte("mcp_token\x00tracker\x00")); !errors.Is(err, ErrOpen) {
		t.Errorf("Open with another key = %v, want ErrOpen", err)
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	if _, err := b.Open(flipped, []byte("mcp_token\x00tracker\x00")); !errors.Is(err, ErrOpen) {
		t.Errorf("Open of an altered blob = %v, want ErrOpen", err)
	}
	if _, err := b.Open(sealed[:5], nil); !errors.Is(err, ErrOpen) {
		t.Errorf("Open of a short blob = %v, want ErrOpen", err)
	}
	if bytes.Equal(b.Seal([]byte("x"), nil), b.Seal([]byte("x"), nil)) {
		t.Error("two Seals of the same text are equal: the nonce is not random")
	}
}

func TestFromEnvNamesTheVariableAndHowToMakeAKey(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 16))
	for _, tc := range []struct {
		name, value string
		want        []string // substrings of the error; nil means success
	}{
		{"unset", "", []string{EnvVar, HowToMake}},
		{"not base64", "%%%", []string{EnvVar, "base64", HowToMake}},
		{"16 bytes", short, []string{EnvVar, "16 bytes", HowToMake}},
		{"good", good, nil},
		{"good with newline", good + "\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := FromEnv(env(tc.value))
			if tc.want == nil {
				if err != nil || b == nil {
					t.Fatalf("FromEnv(%q) = %v, %v, want a box", tc.value, b, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("FromEnv(%q) = nil error, want one naming %v", tc.value, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("FromEnv(%q) = %q, want it to mention %q", tc.value, err, w)
				}
			}
		})
	}
	if _, err := FromEnv(env("")); !errors.Is(err, ErrNoKey) {
		t.Errorf("FromEnv(unset) = %v, want ErrNoKey", err)
	}
}
