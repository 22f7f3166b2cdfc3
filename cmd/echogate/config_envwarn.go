package main

// Warnings about the environment outside ECHOGATE_: a variable one or two letters off a name the
// gateway reads (SLACK_BOT_TOKN), and a ${VAR} in a secret field that expanded to nothing. Both
// would otherwise give a web-only or demo gateway in silence. They are warnings, not errors:
// other programs read variables of the same families, and an example file's ${SLACK_BOT_TOKEN}
// left unset is how Slack stays off.

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// envLikelier names the setting an ECHOGATE_ name that no setting reads most likely meant, where
// the nearest spelling would mislead (ECHOGATE_SLACK_TOKEN is as near the app token).
var envLikelier = map[string]string{
	"ECHOGATE_SLACK_TOKEN":     "SLACK_BOT_TOKEN (the bot token, xoxb-…; SLACK_APP_TOKEN is the app-level xapp-… one)",
	"ECHOGATE_OPENAI_API_KEY":  envOpenAIKey,
	"ECHOGATE_OPENAI_BASE_URL": envOpenAIBase,
	"ECHOGATE_API_KEY":         envOpenAIKey,
}

// outsideNames are the variables without the ECHOGATE_ prefix that the configuration reads.
func outsideNames() []string {
	known := map[string]bool{}
	envNames(reflect.TypeOf(Config{}), "ECHOGATE", known)
	known[envOpenAIKey], known[envOpenAIBase] = true, true
	var out []string
	for n := range known {
		if !strings.HasPrefix(n, "ECHOGATE_") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// nearName is the name of known within two edits of name, "" when there is none.
func nearName(name string, known []string) string {
	for _, k := range known {
		if d := editDistance(name, k); d > 0 && d <= 2 && name[0] == k[0] {
			return k
		}
	}
	return ""
}

// envTypoWarnings lists the set variables that look like misspellings of a name the gateway
// reads; referenced are the variables the configuration file names, which are not typos.
func envTypoWarnings(environ []string, referenced map[string]bool, getenv func(string) string) []string {
	known := outsideNames()
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name == "" || strings.HasPrefix(name, "ECHOGATE_") || referenced[name] || getenv(name) == "" || containsString(known, name) {
			continue
		}
		if k := nearName(name, known); k != "" {
			out = append(out, fmt.Sprintf("%s is set but nothing reads it: did you mean %s?", name, k))
		}
	}
	sort.Strings(out)
	return out
}

func containsString(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}

// envReference is a ${VAR} without a default in the configuration file.
type envReference struct {
	name string
	line int
}

// envReferences lists the ${VAR} references of raw (${VAR:-default} has its default).
func envReferences(raw []byte) []envReference {
	var out []envReference
	for i, line := range bytes.Split(raw, []byte("\n")) {
		if t := bytes.TrimSpace(line); bytes.HasPrefix(t, []byte("#")) {
			continue
		}
		for _, m := range envRef.FindAllSubmatch(line, -1) {
			if len(m[2]) == 0 {
				out = append(out, envReference{name: string(m[1]), line: i + 1})
			}
		}
	}
	return out
}

// isSecretKey reports whether a key path names a token, key or secret.
func isSecretKey(path string) bool {
	last := path[strings.LastIndexAny(path, ".]")+1:]
	for _, w := range []string{"token", "api_key", "secret", "password"} {
		if strings.Contains(last, w) {
			return true
		}
	}
	return false
}

// emptySecretWarnings names the ${VAR} references in secret fields that expanded to nothing,
// when that looks unintended: the variable is the file's own (not one the gateway documents,
// as the example file's ${SLACK_BOT_TOKEN}), or a variable of a near name is set.
func emptySecretWarnings(o keyOrigins, refs []envReference, environ []string, getenv func(string) string) []string {
	byLine := map[int][]string{}
	for k, l := range o.lines {
		byLine[l] = append(byLine[l], k)
	}
	known := outsideNames()
	var set []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); getenv(name) != "" {
			set = append(set, name)
		}
	}
	sort.Strings(set)
	var out []string
	for _, r := range refs {
		if getenv(r.name) != "" {
			continue
		}
		keys := byLine[r.line]
		sort.Slice(keys, func(i, j int) bool { // agents[0]… before its alias agents.helper…
			if a, b := strings.Contains(keys[i], "["), strings.Contains(keys[j], "["); a != b {
				return a
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			if !isSecretKey(k) {
				continue
			}
			msg := fmt.Sprintf("%s, line %d: %s: ${%s} is empty (%s is not set)", o.file, r.line, k, r.name, r.name)
			if near := nearName(r.name, set); near != "" {
				out = append(out, msg+fmt.Sprintf("; %s is set: did you mean %s?", near, r.name))
			} else if !containsString(known, r.name) {
				out = append(out, msg+": set it, or remove the key")
			}
			break
		}
	}
	return out
}
