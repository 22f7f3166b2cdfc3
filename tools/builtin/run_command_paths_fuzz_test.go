package builtin

import (
	"strings"
	"testing"
)

// FuzzCheckPathArg: no panic on any argument, and an outside path glued after any separator (or
// an option's letters) is always refused.
func FuzzCheckPathArg(f *testing.F) {
	for _, s := range []string{"", "--file=", "-f", "x:", "@", "a b ", "cd ;", "--a=b,", "'", "https://h/"} {
		f.Add(s, uint8(0))
	}
	outside := []string{"/etc/passwd", "../secret", "~/.ssh/id", "../../x", "/proc/1/environ"}
	f.Fuzz(func(t *testing.T, prefix string, which uint8) {
		const dir = "/srv/echogate/workspace"
		_ = checkPathArg(prefix, dir, nil)
		if strings.Contains(prefix, "://") || strings.ContainsAny(prefix, "$") {
			return // a URL's path is no local path; expansions have their own rule
		}
		last := prefix[strings.LastIndexAny(prefix, wordSeparators)+1:]
		if last != "" && !optionGlue(last) {
			return // glued onto a word: "abc/etc/passwd" is a relative path
		}
		arg := prefix + outside[int(which)%len(outside)]
		if checkPathArg(arg, dir, nil) == "" {
			t.Fatalf("checkPathArg(%q) = \"\", want it refused", arg)
		}
	})
}

// optionGlue reports a word an outside path may be glued to as an option's value ("-f", "--o").
func optionGlue(w string) bool {
	if !strings.HasPrefix(w, "-") {
		return false
	}
	for _, r := range strings.TrimLeft(w, "-") {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
