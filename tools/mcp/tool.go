package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate/tools"
)

// maxDescription caps a tool description taken from a server.
const maxDescription = 2048

// remoteTool is one MCP tool as the registry sees it: Spec from the server's listing, Call
// through the server's current session. It is wrapped in a breaker before it is registered.
type remoteTool struct {
	srv    *server
	remote string // the server's tool name
	spec   tools.Spec
}

func (t *remoteTool) Spec() tools.Spec { return t.spec }

// Call runs the tool on the server. It blocks until the server answered or ctx ended (then it
// returns ctx's error). The model sees an IsError result for bad arguments, for a server that is
// not connected (at once, without waiting for a reconnect) and for the server's own tool errors.
// A transport or protocol failure is returned as tools.Failure: the breaker counts it and the
// model sees the message.
func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	obj, err := objectArgs(args)
	if err != nil {
		return tools.Errorf("invalid arguments for %s: %v; send a JSON object matching the tool's parameters", t.spec.Name, err), nil
	}
	if t.srv.cfg.Auth == AuthOAuthPerUser {
		return t.callAsUser(ctx, obj)
	}
	cs := t.srv.current()
	if cs == nil {
		return tools.Errorf("tool %s is unavailable: MCP server %s is not connected (%s); try again later or use another tool",
			t.spec.Name, t.srv.cfg.Name, t.srv.downReason()), nil
	}
	done := t.srv.track(t.spec.Name, ctx)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: obj})
	done()
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, fmt.Errorf("mcp: %s: call %s: %w", t.srv.cfg.Name, t.remote, ctx.Err())
		}
		return t.callFailed(cs, err)
	}
	if res == nil {
		return tools.Result{}, tools.Failure(tools.Errorf("tool %s failed: MCP server %s sent an empty result", t.spec.Name, t.srv.cfg.Name))
	}
	return tools.Result{Content: renderResult(t.srv.cfg.Name, res, t.srv.maxOutput), IsError: res.IsError}, nil
}

// callFailed classifies an error of tools/call.
func (t *remoteTool) callFailed(cs *sdk.ClientSession, err error) (tools.Result, error) {
	msg := t.srv.scrub(err.Error())
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		switch rpc.Code {
		case jsonrpc.CodeInvalidParams:
			if strings.Contains(rpc.Message, "unknown tool") {
				t.srv.requestRelist() // a list change we missed
				return tools.Errorf("tool %s is no longer offered by MCP server %s", t.spec.Name, t.srv.cfg.Name), nil
			}
			// The model's arguments were rejected: its fault, not the server's.
			return tools.Errorf("tool %s rejected the arguments: %s", t.spec.Name, capText(t.srv.scrub(rpc.Message), 1024)), nil
		case jsonrpc.CodeMethodNotFound:
			// The tool is gone (a list change we missed): refresh the listing.
			t.srv.requestRelist()
			return tools.Errorf("tool %s is no longer offered by MCP server %s", t.spec.Name, t.srv.cfg.Name), nil
		}
		return tools.Result{}, tools.Failure(tools.Errorf("tool %s failed: MCP server %s answered with an error: %s", t.spec.Name, t.srv.cfg.Name, capText(msg, 1024)))
	}
	if errors.Is(err, sdk.ErrConnectionClosed) {
		t.srv.sessionBroken(cs, err)
		return tools.Result{}, tools.Failure(tools.Errorf("tool %s failed: the connection to MCP server %s was lost during the call; it is reconnecting", t.spec.Name, t.srv.cfg.Name))
	}
	return tools.Result{}, tools.Failure(tools.Errorf("tool %s failed: MCP server %s: %s", t.spec.Name, t.srv.cfg.Name, capText(msg, 1024)))
}

// objectArgs checks that args is one JSON object (empty or null mean {}).
func objectArgs(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if trimmed[0] != '{' {
		return nil, errors.New("the arguments are not a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	return json.RawMessage(trimmed), nil
}

// buildSpec maps an MCP tool listing onto a tools.Spec named name.
func buildSpec(server, name string, t *sdk.Tool, safety tools.Safety) tools.Spec {
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = strings.TrimSpace(t.Title)
	}
	if desc == "" && t.Annotations != nil {
		desc = strings.TrimSpace(t.Annotations.Title)
	}
	if desc == "" {
		desc = t.Name
	}
	return tools.Spec{
		Name:        name,
		Description: "[" + server + "] " + capText(desc, maxDescription),
		Parameters:  objectSchema(t.InputSchema),
		Safety:      safety,
	}
}

// objectSchema returns the tool's input schema as JSON when it is an object schema (a missing
// "type" is set to "object"), else {"type":"object"}.
func objectSchema(schema any) json.RawMessage {
	fallback := json.RawMessage(`{"type":"object"}`)
	if schema == nil {
		return fallback
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return fallback
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return fallback
	}
	switch typ := m["type"].(type) {
	case nil:
		m["type"] = "object"
	case string:
		if typ != "object" {
			return fallback
		}
	default:
		return fallback // e.g. ["object","null"]: the model must send an object
	}
	if p, ok := m["properties"]; ok {
		if _, isObj := p.(map[string]any); !isObj {
			delete(m, "properties")
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return fallback
	}
	return out
}

// registryName is "<server>__<tool>" with characters tool names may not hold replaced by '_'.
// When the result would be longer than 64 characters or was changed, taken collides with
// another name, a short hash of the original name keeps it unique.
func registryName(server, remote string, taken func(string) bool) string {
	var b strings.Builder
	for _, c := range remote {
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	clean := b.String()
	name := server + "__" + clean
	if len(name) <= 64 && !taken(name) {
		return name
	}
	sum := sha256.Sum256([]byte(remote))
	suffix := "_" + hex.EncodeToString(sum[:4])
	room := 64 - len(server) - 2 - len(suffix)
	if len(clean) > room {
		clean = clean[:room]
	}
	return server + "__" + clean + suffix
}

// renderResult turns a CallToolResult into the text the model sees: text content joined,
// structured content as JSON, other content described briefly; capped at max bytes and fenced
// as untrusted output of server.
func renderResult(server string, res *sdk.CallToolResult, max int) string {
	var parts []string
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *sdk.ResourceLink:
			s := fmt.Sprintf("[resource link: %s <%s>", orUnknown(firstNonEmpty(c.Title, c.Name)), c.URI)
			if c.MIMEType != "" {
				s += ", " + c.MIMEType
			}
			if c.Description != "" {
				s += ": " + capText(c.Description, 512)
			}
			parts = append(parts, s+"]")
		case *sdk.EmbeddedResource:
			parts = append(parts, renderResource(c.Resource))
		case nil:
		default:
			parts = append(parts, fmt.Sprintf("[unsupported content: %T]", c))
		}
	}
	if res.StructuredContent != nil {
		if js, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil && !sameJSON(strings.Join(texts, "\n"), res.StructuredContent) {
			if len(parts) > 0 {
				parts = append(parts, "structured content:\n"+string(js))
			} else {
				parts = append(parts, string(js))
			}
		}
	}
	body := strings.Join(parts, "\n")
	if strings.TrimSpace(body) == "" {
		if res.IsError {
			body = "(the tool reported an error without details)"
		} else {
			body = "(no output)"
		}
	}
	body = capOutput(body, max)
	// The fence must not be closable from inside.
	body = strings.ReplaceAll(body, "<<<", "<< <")
	return "<<<tool output from " + server + " (untrusted)>>>\n" + body + "\n<<<end>>>"
}

func renderResource(r *sdk.ResourceContents) string {
	if r == nil {
		return "[resource: empty]"
	}
	if r.Text != "" {
		return fmt.Sprintf("[resource %s%s]\n%s", r.URI, mimeSuffix(r.MIMEType), r.Text)
	}
	return fmt.Sprintf("[resource: %s%s, %s]", r.URI, mimeSuffix(r.MIMEType), size(len(r.Blob)))
}

// sameJSON reports whether text is the JSON rendering of v (SDK servers with typed output put
// the same value in both fields; it is shown once).
func sameJSON(text string, v any) bool {
	text = strings.TrimSpace(text)
	if text == "" {
		return false
	}
	var a any
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var b any
	if err := json.Unmarshal(raw, &b); err != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// capOutput cuts s to max bytes at a rune boundary and says how much was cut.
func capOutput(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n…[output truncated: %d of %d bytes shown]", cut, len(s))
}

// capText cuts s to n bytes at a rune boundary, marking the cut with "…".
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+512)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

func mimeSuffix(m string) string {
	if m == "" {
		return ""
	}
	return ", " + m
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
