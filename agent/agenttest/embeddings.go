package agenttest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
)

func (f *FakeOpenAI) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed; use POST", "invalid_request_error", "")
		return
	}
	if !f.authorize(w, r) {
		return
	}
	req, inputErr, err := decodeEmbeddingRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", "")
		return
	}
	f.mu.Lock()
	f.embedSeq++
	req.Seq = f.embedSeq
	if !f.opts.Forget {
		f.embeds = append(f.embeds, req)
	}
	var a Answer
	if len(f.embedQueue) > 0 {
		a = f.embedQueue[0]
		f.embedQueue = f.embedQueue[1:]
	}
	f.mu.Unlock()

	if msg := validateEmbedding(req, inputErr); msg != "" {
		writeError(w, http.StatusBadRequest, msg, "invalid_request_error", "")
		return
	}
	if !f.modelExists(req.Model) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", "model_not_found")
		return
	}
	if !waitCtx(r.Context(), a.Latency) {
		return
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		writeAnswerError(w, a)
		return
	}
	if a.Drop {
		hijackClose(w)
		return
	}
	f.writeEmbeddings(w, req)
}

// decodeEmbeddingRequest reads the body; inputErr names an input that is neither a string nor an
// array of strings, err a body that is not JSON.
func decodeEmbeddingRequest(r *http.Request) (req EmbeddingRequest, inputErr string, err error) {
	var raw struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		Dimensions     int             `json:"dimensions"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&raw); err != nil {
		return req, "", err
	}
	req = EmbeddingRequest{Model: raw.Model, Dimensions: raw.Dimensions, EncodingFormat: raw.EncodingFormat, Header: r.Header.Clone()}
	var one string
	if err := json.Unmarshal(raw.Input, &one); err == nil {
		req.Input = []string{one}
	} else if err := json.Unmarshal(raw.Input, &req.Input); err != nil {
		inputErr = "'input' must be a string or an array of strings (token arrays are not supported by the fake)"
	}
	return req, inputErr, nil
}

// validateEmbedding returns OpenAI's message for a request it refuses with 400, or "";
// inputErr is decodeEmbeddingRequest's.
func validateEmbedding(req EmbeddingRequest, inputErr string) string {
	switch {
	case req.Model == "":
		return "you must provide a model parameter"
	case inputErr != "":
		return inputErr
	case len(req.Input) == 0 || len(req.Input) > 2048:
		return "'$.input' is invalid: it must hold 1 to 2048 inputs"
	case req.Dimensions < 0:
		return "Invalid value for 'dimensions' = " + strconv.Itoa(req.Dimensions) + ". Must be greater than 0."
	}
	for i, in := range req.Input {
		if in == "" {
			return fmt.Sprintf("'$.input[%d]' is invalid: empty strings are not allowed", i)
		}
	}
	return ""
}

// writeEmbeddings answers with each input's hash embedding, as floats or base64 as asked.
func (f *FakeOpenAI) writeEmbeddings(w http.ResponseWriter, req EmbeddingRequest) {
	dims := req.Dimensions
	if dims == 0 {
		dims = f.opts.EmbeddingDims
	}
	if dims <= 0 {
		dims = 1536
	}
	type b64Embedding struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding string `json:"embedding"`
	}
	var tokens int64
	floats := make([]wireEmbedding, 0, len(req.Input))
	b64s := make([]b64Embedding, 0, len(req.Input))
	for i, in := range req.Input {
		tokens += EstimateTokens(in)
		v := HashEmbedding(in, dims)
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for k, x := range v {
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(x))
			}
			b64s = append(b64s, b64Embedding{Object: "embedding", Index: i, Embedding: base64.StdEncoding.EncodeToString(b)})
			continue
		}
		floats = append(floats, wireEmbedding{Object: "embedding", Index: i, Embedding: v})
	}
	usage := wireEmbedUsage{PromptTokens: tokens, TotalTokens: tokens}
	if req.EncodingFormat == "base64" {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": b64s, "model": req.Model, "usage": usage})
		return
	}
	writeJSON(w, http.StatusOK, wireEmbeddingList{Object: "list", Data: floats, Model: req.Model, Usage: usage})
}
