// Package agenttest holds test doubles for the agent layer:
//
//   - ScriptedModel, an agent.Model that plays a script of steps (text, tool calls, errors, usage,
//     gates) and records every request, for loop and pipeline tests that need no network;
//   - FakeOpenAI, an httptest server that speaks the OpenAI chat-completions and embeddings wire
//     protocol (SSE chunks, parallel tool-call fragments, usage chunk, status errors, dropped
//     connections), for wire tests of the real go-openai client and end-to-end pipeline tests.
//
// Both are deterministic and safe for concurrent use.
package agenttest
