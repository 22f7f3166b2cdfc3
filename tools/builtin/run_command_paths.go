package builtin

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Path confinement of run_command's arguments. No shell runs, but the commands themselves open
// what their arguments name: an absolute path, a `..` or a `~` reaches past the working
// directory (`cat /proc/<pid>/environ` read the gateway's tokens). Every word of an argument that
// looks like such a path must resolve inside the working directory or a directory the operator
// listed in tools.run_command.allow_paths.

// wordSeparators split an argument into the words a command or a script might take as paths
// ("--file=/etc/x", "host:/x", "@/x", "cat /x" given to `sh -c`).
const wordSeparators = " \t\r\n\v\f=:,;@'\"()<>|&`$"

// shellExpansion matches the start of a variable or command substitution.
var shellExpansion = regexp.MustCompile(`\$[A-Za-z_{(]`)

// urlPrefix matches a network URL's scheme and host, which are no local path.
var urlPrefix = regexp.MustCompile(`(?i)\b(?:https?|ssh|git|ftp)://[^/\s]*`)

// checkPathArg returns why arg is refused, or "" when every path in it stays inside dir or one of
// allow. dir and allow are clean absolute paths.
func checkPathArg(arg, dir string, allow []string) string {
	arg = urlPrefix.ReplaceAllString(arg, "url")
	if shellExpansion.MatchString(arg) && strings.ContainsAny(arg, "/~") {
		// "cat$IFS/etc/passwd" handed to a shell (git -c alias, sh -c) is a path no check can
		// resolve before the shell does.
		return "combines shell expansion ($…) with a path, which cannot be checked before a shell expands it"
	}
	for _, w := range strings.FieldsFunc(arg, func(r rune) bool { return strings.ContainsRune(wordSeparators, r) }) {
		for _, c := range pathCandidates(w) {
			if why := checkPath(c, dir, allow); why != "" {
				return why
			}
		}
	}
	return ""
}

// pathCandidates returns w and, for an option with its value glued on ("-f/etc/x", "-o../x"),
// the value.
func pathCandidates(w string) []string {
	out := []string{w}
	if strings.HasPrefix(w, "-") {
		rest := strings.TrimLeft(w, "-")
		rest = strings.TrimLeftFunc(rest, func(r rune) bool {
			return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		})
		if rest != "" && strings.ContainsRune("/~.", rune(rest[0])) {
			out = append(out, rest)
		}
	}
	return out
}

func checkPath(p, dir string, allow []string) string {
	switch {
	case strings.HasPrefix(p, "~"):
		return fmt.Sprintf("names a home directory (%s)", p)
	case filepath.IsAbs(p):
		if abs := filepath.Clean(p); !within(abs, dir, allow) {
			return fmt.Sprintf("is the absolute path %s, outside the working directory", abs)
		}
	case hasDotDot(p):
		if abs := filepath.Join(dir, p); !within(abs, dir, allow) {
			return fmt.Sprintf("uses .. to reach %s, outside the working directory", abs)
		}
	}
	return ""
}

func hasDotDot(p string) bool {
	for _, e := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if e == ".." {
			return true
		}
	}
	return false
}

func within(p, dir string, allow []string) bool {
	for _, base := range append([]string{dir}, allow...) {
		if p == base || base == "/" || strings.HasPrefix(p, base+"/") {
			return true
		}
	}
	return false
}

// cleanAllowPaths checks tools.run_command.allow_paths: absolute directories.
func cleanAllowPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			return nil, fmt.Errorf("run_command: allow_paths entry %q must be an absolute directory such as /srv/reports", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// envName matches a variable name tools.run_command.env may pass.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
