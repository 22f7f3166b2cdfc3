package redact

import (
	"strings"
	"testing"
)

// benchAnswer is a model answer of ordinary prose and code (~2 KB) without a secret: what almost
// every outbound text is.
var benchAnswer = strings.Repeat("The deploy of api-gateway-v2 finished at 09:14; see https://ci.example.com/runs/4821 for the log. "+
	"Run `kubectl rollout status deploy/api -n prod` to check, then compare p99 latency (112 ms) with yesterday's.\n", 9)

func benchRedactor() *Redactor {
	return New([]string{"xoxb-0000000000-1111111111-abcdefabcdefabcdefabcdef", "sk-proj-AbCdEf0123456789AbCdEf0123456789", "a-database-password-1234"})
}

// BenchmarkRedact is what a final post, an edit or a tool result pays (report only).
func BenchmarkRedact(b *testing.B) {
	r := benchRedactor()
	b.SetBytes(int64(len(benchAnswer)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Redact(benchAnswer)
	}
}

// BenchmarkStream is what a streamed answer pays: the same text in 6-byte deltas, as a model
// streams it (one op = the whole answer).
func BenchmarkStream(b *testing.B) {
	r := benchRedactor()
	var deltas []string
	for i := 0; i < len(benchAnswer); i += 6 {
		deltas = append(deltas, benchAnswer[i:min(i+6, len(benchAnswer))])
	}
	b.SetBytes(int64(len(benchAnswer)))
	b.ReportAllocs()
	for b.Loop() {
		s := r.Stream()
		for _, d := range deltas {
			_ = s.Write(d)
		}
		_ = s.Flush()
	}
	b.ReportMetric(float64(len(deltas)), "deltas/op")
}
