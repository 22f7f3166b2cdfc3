package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
)

// chunkSeeds are chunks as OpenAI and compatible servers send them, plus shapes the scanner
// leaves to json.Unmarshal and malformed ones.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1y2"}`,
	`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":12,"total_tokens":312,"prompt_tokens_details":{"cached_tokens":256,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"line one\nline \"two\" \u00e9 \ud83d\ude00"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"caf\u00e9 — ünïcödé"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"thinking","refusal":null}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"current_time","arguments":""}}]}}]}`,
	`{"id":"chatcmpl-fake2","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp_fake","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"q\":\"\u00e9\"}"}},{"index":1,"id":"b","function":null}]}}]}`,
	`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":null,"Index":2,"function":{"name":"f","name":"g","Arguments":"x"}}]}}]}`,
	`{"id":"c","choices":[{"delta":{"tool_calls":[null]}}]}`, `{"id":"c","choices":[{"delta":{"tool_calls":[]}}]}`,
	`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":1.5}]}}]}`, `{"id":"c","choices":[{"delta":{"tool_calls":{}}}]}`,
	`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0}],"tool_calls":null}}]}`,
	`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","extra":[1,{"a":null}]}]}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[]}}]}`,
	`{"ID":"upper","Model":"m"}`,
	`{"id":"c","extra":{"nested":[1,-2.5e3,true,false,null,"s\t",{"k":"v"}]}}`,
	`{"id":"c","choices":null,"usage":{"prompt_tokens":1,"prompt_tokens_details":null,"cost":0.0012}}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
	`{"id":"a","id":"b","choices":[{"delta":{"content":"a","content":null}}]}`,
	`{"id":"c","choices":[{"index":0}],"choices":[{"delta":{"content":"again"}}]}`,
	`{"created":1.5}`, `{"created":01}`, `{"created":-0}`, `{"created":123456789012345678901}`,
	`{"id":"c"} x`, `{"id":"c",}`, `{"id":"bad\q"}`, `{"id":"ctl` + "\x01" + `"}`, "{\"id\":\"\xff\xfe\"}",
	`null`, `{}`, `[]`, `{"id":1}`, `{"choices":[null]}`, `{"choices":{}}`, ` { "id" : "spaced" , "choices" : [ ] } `,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"native_finish_reason":"stop","Finish_Reason":"length"}]}`,
}

// TestDecodeChunkMatchesUnmarshal: decodeChunk(x) = json.Unmarshal(x) for every seed, with and
// without a previous chunk to reuse strings from.
func TestDecodeChunkMatchesUnmarshal(t *testing.T) {
	var prev goopenai.ChatCompletionStreamResponse
	_ = json.Unmarshal([]byte(chunkSeeds[0]), &prev)
	for _, seed := range chunkSeeds {
		for _, p := range []*goopenai.ChatCompletionStreamResponse{nil, &prev} {
			checkChunk(t, []byte(seed), p)
		}
	}
}

func checkChunk(t *testing.T, data []byte, prev *goopenai.ChatCompletionStreamResponse) {
	t.Helper()
	var want goopenai.ChatCompletionStreamResponse
	wantErr := json.Unmarshal(data, &want)
	// Into a zero chunk, and into one lending a used choices array, as Recv does.
	used := make([]goopenai.ChatCompletionStreamChoice, 2)
	used[0].Delta.Content, used[1].FinishReason = "stale", "stale"
	for _, got := range []goopenai.ChatCompletionStreamResponse{{}, {Choices: used[:0]}} {
		gotErr := decodeChunk(data, &got, prev)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("decodeChunk(%q) error = %v, want %v", data, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeChunk(%q) = %+v, want %+v", data, got, want)
		}
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, data, nil) })
}

// TestDecodeChunkFastPath guards that the common chunks (a text delta with OpenAI's extra keys,
// the finish, the usage, a tool call's first and later deltas) are read by the scanner, not json.Unmarshal (15 allocations for a
// text delta): the chunk itself, its choices slice, one string (the content or the finish
// reason; none for the id, object, model and fingerprint the previous chunk had), and the
// usage with its two details.
func TestDecodeChunkFastPath(t *testing.T) {
	var prev goopenai.ChatCompletionStreamResponse
	_ = json.Unmarshal([]byte(chunkSeeds[0]), &prev)
	for seed, want := range map[int]float64{1: 3, 2: 3, 3: 5, 7: 7, 8: 7} {
		data := []byte(chunkSeeds[seed])
		if !(&chunkScanner{b: data, prev: &prev}).chunk(&goopenai.ChatCompletionStreamResponse{}) {
			t.Errorf("seed %d: not read by the scanner", seed)
		}
		allocs := testing.AllocsPerRun(100, func() {
			var c goopenai.ChatCompletionStreamResponse
			_ = decodeChunk(data, &c, &prev)
		})
		if allocs > want {
			t.Errorf("seed %d: %v allocations per chunk, want ≤ %v", seed, allocs, want)
		}
	}
	// As Recv decodes: into the stream's own chunk, its choices array lent: the content only.
	data := []byte(chunkSeeds[1])
	var cur goopenai.ChatCompletionStreamResponse
	allocs := testing.AllocsPerRun(100, func() {
		cur = goopenai.ChatCompletionStreamResponse{Choices: cur.Choices[:0]}
		_ = decodeChunk(data, &cur, &prev)
	})
	if allocs > 1 {
		t.Errorf("text delta into the reused chunk: %v allocations, want ≤ 1 (its content)", allocs)
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(chunkSeeds[1])
	var prev goopenai.ChatCompletionStreamResponse
	_ = json.Unmarshal(data, &prev)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c goopenai.ChatCompletionStreamResponse
			_ = decodeChunk(data, &c, &prev)
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c goopenai.ChatCompletionStreamResponse
			_ = json.Unmarshal(data, &c)
		}
	})
}

// BenchmarkDecodeToolCallChunk is a tool call's arguments delta, as the scanner and as
// json.Unmarshal read it.
func BenchmarkDecodeToolCallChunk(b *testing.B) {
	data := []byte(chunkSeeds[8])
	var prev goopenai.ChatCompletionStreamResponse
	_ = json.Unmarshal(data, &prev)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c goopenai.ChatCompletionStreamResponse
			_ = decodeChunk(data, &c, &prev)
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c goopenai.ChatCompletionStreamResponse
			_ = json.Unmarshal(data, &c)
		}
	})
}
