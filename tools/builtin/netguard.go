package builtin

import "github.com/echogate/echogate/internal/netguard"

// Resolver resolves host names; *net.Resolver satisfies it. http_fetch checks every address a
// name resolves to (internal/netguard).
type Resolver = netguard.Resolver
