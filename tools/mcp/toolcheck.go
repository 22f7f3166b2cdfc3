package mcp

import (
	"encoding/json"
	"fmt"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolName bounds a tool's name (the MCP specification's limit).
const maxToolName = 128

// checkTool says what is wrong with a listed tool definition, or nil. A tool it refuses is not
// offered to the model (the rest of the server's tools are): its name must be 1 to 128
// characters without spaces or control characters, and its input schema, when given, a JSON
// object schema (type "object" or none, properties an object). A missing input schema is taken
// as a tool without arguments.
func checkTool(t *sdk.Tool) error {
	if t.Name == "" {
		return fmt.Errorf("the tool has no name")
	}
	if len(t.Name) > maxToolName {
		return fmt.Errorf("the name is %d bytes long, over the limit of %d", len(t.Name), maxToolName)
	}
	for _, r := range t.Name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("the name holds %q: names take no spaces or control characters", r)
		}
	}
	if t.InputSchema == nil {
		return nil
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return fmt.Errorf("inputSchema cannot be read: %v", err)
	}
	if string(raw) == "null" {
		return nil
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("inputSchema is %.40s, not a JSON object schema", raw)
	}
	if typ, ok := s["type"]; ok && string(typ) != `"object"` {
		return fmt.Errorf(`inputSchema has type %s: a tool's arguments are an object (type "object")`, typ)
	}
	if props, ok := s["properties"]; ok {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(props, &p); err != nil {
			return fmt.Errorf("inputSchema.properties is %.40s, not an object", props)
		}
	}
	return nil
}
