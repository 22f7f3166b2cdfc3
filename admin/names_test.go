package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// idlePipeline is a pipeline with the default agent only, which accepts no events.
type idlePipeline struct{}

func (idlePipeline) Agents() pipeline.Agents      { return pipeline.Agents{} }
func (idlePipeline) Refusals() []pipeline.Refusal { return nil }
func (idlePipeline) Submit(context.Context, echogate.InboundEvent) error {
	return pipeline.ErrNotRunning
}

func TestNames(t *testing.T) {
	api, err := New(Config{}, Deps{Store: pipelinetest.NewMemStore(), Pipeline: idlePipeline{},
		Names: func(ids []string) map[string]string {
			out := map[string]string{}
			for _, id := range ids {
				if id == "slack:U1" {
					out[id] = "ann"
				}
			}
			return out
		}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Register(mux)
	for name, tt := range map[string]struct {
		query  string
		status int
		want   string
	}{
		"known and unknown": {"?ids=slack:U1,%20slack:U2,", 200, `{"names":{"slack:U1":"ann"}}`},
		"no ids":            {"", 400, "ids is required"},
		"too many":          {"?ids=" + strings.Repeat("x,", maxNameIDs+1), 400, "at most 500"},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/names"+tt.query, nil))
		body := strings.TrimSpace(rec.Body.String())
		if rec.Code != tt.status || !strings.Contains(body, tt.want) || !json.Valid([]byte(body)) {
			t.Errorf("%s: GET /api/names%s = %d %s, want %d with %s", name, tt.query, rec.Code, body, tt.status, tt.want)
		}
	}
}

func TestNewRefusesMissingParts(t *testing.T) {
	if _, err := New(Config{}, Deps{Pipeline: idlePipeline{}}); err == nil || !strings.Contains(err.Error(), "store") {
		t.Errorf("New without a store = %v, want an error naming the store", err)
	}
	if _, err := New(Config{}, Deps{Store: pipelinetest.NewMemStore()}); err == nil || !strings.Contains(err.Error(), "pipeline") {
		t.Errorf("New without a pipeline = %v, want an error naming the pipeline", err)
	}
}
