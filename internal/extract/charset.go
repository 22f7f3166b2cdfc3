package extract

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// DecodeCharset converts body to UTF-8: a byte-order mark or a charset declared in contentType
// wins, then valid UTF-8 is kept as is, then what an HTML <meta> says, then windows-1252 (the
// web's default for unlabelled text). Invalid sequences become U+FFFD.
func DecodeCharset(body []byte, contentType string) []byte {
	enc, _, certain := charset.DetermineEncoding(body, contentType)
	if !certain && utf8.Valid(body) {
		return body
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return []byte(strings.ToValidUTF8(string(body), "\uFFFD"))
	}
	return out
}
