package openai

import (
	"context"
	"fmt"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/echogate/echogate"
)

// Embed returns one embedding per text, in order, computed with model in batches of
// Config.EmbeddingBatch inputs. dims > 0 asks for vectors of that size (text-embedding-3 and
// later) and is checked against the answer; 0 leaves the size to the model.
//
// It blocks until every batch is done, ctx ends or a batch fails for good (batches are retried
// like chat attempts). The usage (Kind UsageEmbedding) sums the batches done, also on error, when
// it has Failed set. Errors are *Error values as for Generate; bad arguments wrap ErrBadRequest.
func (p *Provider) Embed(ctx context.Context, model string, dims int, texts []string) ([][]float32, echogate.Usage, error) {
	usage := echogate.Usage{Kind: echogate.UsageEmbedding, Model: model}
	switch {
	case model == "":
		usage.Failed = true
		return nil, usage, fmt.Errorf("openai: embed: no model given: set ECHOGATE_EMBEDDING_MODEL or embeddings.model: %w", ErrBadRequest)
	case dims < 0:
		usage.Failed = true
		return nil, usage, fmt.Errorf("openai: embed with %s: dimensions %d is negative: use 0 for the model's size: %w", model, dims, ErrBadRequest)
	}
	for i, t := range texts {
		if t == "" {
			usage.Failed = true
			return nil, usage, fmt.Errorf("openai: embed with %s: text %d is empty: the API rejects empty inputs, drop it before embedding: %w", model, i, ErrBadRequest)
		}
	}
	out := make([][]float32, len(texts))
	for start := 0; start < len(texts); start += p.cfg.EmbeddingBatch {
		end := min(start+p.cfg.EmbeddingBatch, len(texts))
		batch := texts[start:end]
		var res goopenai.EmbeddingResponse
		err := p.retry(ctx, "embed", model, func(actx context.Context) (int, error) {
			// One request: the idle clock bounds it whole.
			actx, idle, stop := p.watchIdle(actx)
			defer stop()
			var err error
			res, err = p.client.CreateEmbeddings(actx, goopenai.EmbeddingRequestStrings{
				Input:      batch,
				Model:      goopenai.EmbeddingModel(model),
				Dimensions: dims,
			})
			if err != nil && idle.timedOut() {
				return 0, &idleTimeout{p.cfg.Timeout}
			}
			return 0, err
		})
		if err != nil {
			usage.Failed = true
			return nil, usage, err
		}
		usage.InputTokens += int64(res.Usage.PromptTokens)
		if len(res.Data) != len(batch) {
			usage.Failed = true
			return nil, usage, fmt.Errorf("openai: embed with %s at %s: sent %d inputs, got %d embeddings: the endpoint is not OpenAI-compatible for embeddings", model, p.base, len(batch), len(res.Data))
		}
		for _, d := range res.Data {
			if d.Index < 0 || d.Index >= len(batch) || out[start+d.Index] != nil {
				usage.Failed = true
				return nil, usage, fmt.Errorf("openai: embed with %s at %s: embedding index %d is out of range or repeated", model, p.base, d.Index)
			}
			if dims > 0 && len(d.Embedding) != dims {
				usage.Failed = true
				return nil, usage, fmt.Errorf("openai: embed with %s at %s: asked for %d dimensions, got %d: set embeddings.dimensions to %d or use a model that supports dimensions", model, p.base, dims, len(d.Embedding), len(d.Embedding))
			}
			if len(d.Embedding) == 0 {
				usage.Failed = true
				return nil, usage, fmt.Errorf("openai: embed with %s at %s: embedding %d is empty", model, p.base, start+d.Index)
			}
			out[start+d.Index] = d.Embedding
		}
	}
	return out, usage, nil
}
