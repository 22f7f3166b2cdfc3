package main

// Where a configuration mistake is: the file and line of the key, or the environment variable
// that set it, so that every error has the one shape `config: FILE, line N: KEY: what and fix`.

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// keyOrigins says where each key's value came from.
type keyOrigins struct {
	file  string
	lines map[string]int    // key path ("agent.on_busy", "models.routes[0].model", "agents.helper") → line
	env   map[string]string // key path → the environment variable that set it
}

// indexLines records the line of every key under n. An item of a list that has a name is also
// recorded by it ("agents.helper" beside "agents[0]"), as the checks name agents so.
func indexLines(n *yaml.Node, path string, lines map[string]int) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			indexLines(c, path, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			lines[p] = k.Line
			indexLines(v, p, lines)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[p] = item.Line
			indexLines(item, p, lines)
			if name := mappingValue(item, "name"); name != "" {
				alias := path + "." + name
				if _, dup := lines[alias]; !dup {
					lines[alias] = item.Line
					indexLines(item, alias, lines)
				}
			}
		}
	}
}

// mappingValue is the scalar value of key in a mapping node, "" when there is none.
func mappingValue(n *yaml.Node, key string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// parentKey drops the last segment of a key path: "a.b[0].c" → "a.b[0]" → "a.b" → "a" → "".
func parentKey(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i > 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i > 0 {
		return k[:i]
	}
	return ""
}

// locate fills in where a *ConfigError's key was set: the environment variable that set it, or
// the line of the key (or of its nearest enclosing key) in the file. Other errors pass through.
func (o keyOrigins) locate(err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Where != "" {
		return err
	}
	if name, ok := o.env[ce.Key]; ok {
		ce.Where = name
		return err
	}
	if o.file == "" {
		return err
	}
	for k := ce.Key; k != ""; k = parentKey(k) {
		if line, ok := o.lines[k]; ok {
			ce.Where = fmt.Sprintf("%s, line %d", o.file, line)
			return err
		}
	}
	return err
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntaxError turns the YAML parser's error into `FILE, line N: what and fix`. A tab in a
// line's indentation, which YAML does not allow, is named as such.
func yamlSyntaxError(file string, raw []byte, err error) error {
	for i, line := range bytes.Split(raw, []byte("\n")) {
		indent := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 && len(bytes.TrimSpace(line)) > 0 {
			return &ConfigError{Where: fmt.Sprintf("%s, line %d", file, i+1), Key: "tabs are not allowed for indentation in YAML",
				Msg: "indent with spaces (two per level, as in echogate.example.yaml)"}
		}
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ConfigError{Where: fmt.Sprintf("%s, line %d", file, n), Key: "YAML syntax", Msg: m[2] + " (see echogate.example.yaml for the expected shape)"}
	}
	return fmt.Errorf("config: %s: %s", file, yamlErrorHint(err))
}
