package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestEmbeddingsBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, tc := range []struct{ body, want string }{
		{`{"model":"local-embed"}`, `input`},
		{`{"model":"local-embed","input":null}`, `input`},
		{`{"model":"local-embed","input":[]}`, `1 to 2048`},
		{`{"model":"local-embed","input":[1,2,3]}`, `token arrays`},
		{`{"model":"local-embed","input":"x","encoding_format":"int8"}`, `encoding_format`},
	} {
		req, _ := http.NewRequest("POST", e.url+"/embeddings", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s → %d %s, want 400 naming %q", tc.body, resp.StatusCode, b, tc.want)
		}
	}
}
