package builtin

import (
	"fmt"
	"path"
	"strings"
)

// hostPattern is one entry of tools.http_fetch.allow_hosts or deny_hosts. Without a `*` it is a
// host with its subdomains ("example.com" matches example.com and docs.example.com). With one it
// is a glob over labels: a leading "*." matches one or more labels ("*.example.com" matches
// a.example.com and a.b.example.com, not example.com); any other `*` matches within one label
// ("api-*.example.com"); "*" alone matches every host.
type hostPattern struct {
	raw  string
	glob bool
}

// parseHostPattern checks one entry of the list key ("allow_hosts", "deny_hosts").
func parseHostPattern(key, raw string) (hostPattern, error) {
	n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(raw)), ".")
	bad := func(why string) (hostPattern, error) {
		return hostPattern{}, fmt.Errorf("http_fetch: tools.http_fetch.%s entry %q %s: write a bare host name such as example.com (subdomains included) or a glob such as *.example.com (no scheme, port, path or user)", key, raw, why)
	}
	switch {
	case n == "":
		return bad("is empty")
	case strings.ContainsAny(n, "/:@ \t\\?"):
		return bad("is not a host name")
	}
	p := hostPattern{raw: n, glob: strings.Contains(n, "*")}
	if strings.ContainsAny(n, "[]") {
		return bad("has brackets")
	}
	if _, err := path.Match(strings.ReplaceAll(n, ".", "/"), ""); err != nil {
		return bad("is not a valid glob")
	}
	return p, nil
}

func (p hostPattern) match(host string) bool {
	if !p.glob {
		return host == p.raw || strings.HasSuffix(host, "."+p.raw)
	}
	if p.raw == "*" {
		return true
	}
	if rest, ok := strings.CutPrefix(p.raw, "*."); ok {
		// One or more labels, then the rest of the pattern.
		labels := strings.Split(host, ".")
		for i := 1; i < len(labels); i++ {
			if globLabels(rest, strings.Join(labels[i:], ".")) {
				return true
			}
		}
		return false
	}
	return globLabels(p.raw, host)
}

// globLabels matches a dotted glob whose `*` stays within one label.
func globLabels(pattern, host string) bool {
	ok, _ := path.Match(strings.ReplaceAll(pattern, ".", "/"), strings.ReplaceAll(host, ".", "/"))
	return ok
}

func parseHostPatterns(key string, raw []string) ([]hostPattern, error) {
	var out []hostPattern
	for _, r := range raw {
		p, err := parseHostPattern(key, r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// matchHost returns the first pattern of ps that matches host.
func matchHost(ps []hostPattern, host string) (hostPattern, bool) {
	for _, p := range ps {
		if p.match(host) {
			return p, true
		}
	}
	return hostPattern{}, false
}

func patternList(ps []hostPattern) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.raw
	}
	return strings.Join(s, ", ")
}
