package llm

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// Local embedder parameters. Changing any of them changes every vector, so
// the model name carries a version and indexes built with another name must
// be rebuilt.
const (
	// LocalEmbedDim is the dimension of local-embed vectors.
	LocalEmbedDim = 384
	// LocalEmbedModel names the embedder in usage rows and index metadata.
	LocalEmbedModel = "hestia-hash-384-v1"
	// LocalProvider is the provider name the embedder records; usage keeps
	// its calls apart as local, unbilled work.
	LocalProvider = "local"
	// LocalEmbedMaxInput bounds the bytes of one input that are embedded;
	// the rest is ignored.
	LocalEmbedMaxInput = 32 << 10
)

// LocalEmbedder is the offline embedder behind local-embed when no remote
// embedding model is configured. It needs no model server and no weights:
// a text's vector is the feature-hashed bag of its lowercased word unigrams
// (weight 1) and the character trigrams of each word with boundary marks
// (weight 1/2 spread over the word's trigrams), each feature hashed to one
// of LocalEmbedDim signed buckets, then L2-normalised.
//
// What it is good for: the same text always gives the same vector; texts
// sharing words or word stems ("invoice", "invoices") are closer than
// unrelated ones; it works for any script that separates words. What it is
// not: it knows no synonyms or meaning ("car" and "automobile" are
// unrelated), no word order, and no cross-language similarity. Empty or
// symbol-only input gives the zero vector.
type LocalEmbedder struct{}

// NewLocalEmbedder returns the offline embedder.
func NewLocalEmbedder() *LocalEmbedder { return &LocalEmbedder{} }

func (*LocalEmbedder) target() Target {
	return Target{Provider: LocalProvider, Kind: KindLocal, Model: LocalEmbedModel}
}

// Embed implements Embedder. It never fails except on a cancelled context.
func (l *LocalEmbedder) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	out := EmbedResponse{Dimension: LocalEmbedDim, Provider: LocalProvider, Model: LocalEmbedModel, Vectors: make([][]float32, len(req.Inputs))}
	for i, s := range req.Inputs {
		if i%64 == 0 && ctx.Err() != nil {
			return out, classifyTransport(ctx, ctx.Err())
		}
		out.Vectors[i] = LocalVector(s)
		out.Usage.InputTokens += len(strings.Fields(s))
	}
	return out, nil
}

// Stream implements Client; the local embedder cannot chat.
func (l *LocalEmbedder) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	return l.Complete(ctx, req)
}

// Complete implements Client; the local embedder cannot chat.
func (l *LocalEmbedder) Complete(context.Context, Request) (Response, error) {
	return Response{}, &Error{Code: CodeModelUnavailable, Message: "The local embedder cannot answer chat requests.", Provider: LocalProvider, Model: LocalEmbedModel}
}

// LocalVector returns the local-embed vector of s.
func LocalVector(s string) []float32 {
	if len(s) > LocalEmbedMaxInput {
		s = strings.ToValidUTF8(s[:LocalEmbedMaxInput], "")
	}
	acc := make([]float64, LocalEmbedDim)
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		addFeature(acc, "w:"+w, 1)
		rs := []rune("^" + w + "$")
		n := len(rs) - 2
		if n < 1 {
			continue
		}
		weight := 0.5 / math.Sqrt(float64(n))
		for i := 0; i+3 <= len(rs); i++ {
			addFeature(acc, "c:"+string(rs[i:i+3]), weight)
		}
	}
	var norm float64
	for _, v := range acc {
		norm += v * v
	}
	out := make([]float32, LocalEmbedDim)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, v := range acc {
		out[i] = float32(v / norm)
	}
	return out
}

// addFeature adds weight to the feature's bucket with the sign taken from a
// separate hash bit, so collisions cancel out on average instead of adding.
func addFeature(acc []float64, feature string, weight float64) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(feature))
	v := h.Sum64()
	bucket := int(v % uint64(len(acc)))
	if v>>63 == 1 {
		weight = -weight
	}
	acc[bucket] += weight
}

// Cosine returns the cosine similarity of two vectors of equal length (0
// when either is zero or the lengths differ).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
