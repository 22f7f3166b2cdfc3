package discord

import "testing"

// /echogate mcp is registered with a free-text action, so `/echogate mcp action:login tracker`
// reaches the pipeline as "/mcp login tracker" (answered privately, like every subcommand).
func TestMCPSubcommandRegistered(t *testing.T) {
	for _, o := range applicationCommands()[0].Options {
		if o.Name == "mcp" {
			if len(o.Options) != 1 || o.Options[0].Name != "action" {
				t.Errorf("mcp options = %+v, want one string option \"action\"", o.Options)
			}
			return
		}
	}
	t.Errorf("/echogate subcommands lack mcp")
}
