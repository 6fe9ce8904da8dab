package httpjson

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	type body struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	cases := []struct {
		in, ct, want string
	}{
		{`{"name":"a","count":1}`, "application/json", ""},
		{``, "", "empty"},
		{`{"name":`, "", "not valid JSON"},
		{`{"name":"a","extra":1}`, "", `unknown field "extra"`},
		{`{"count":"x"}`, "", `field "count" must be int`},
		{`[1,2]`, "", "must be a JSON object"},
		{`{"name":"a"} {"name":"b"}`, "", "data after"},
		{`{"name":"a"}`, "text/plain", "not application/json"},
		{`{"name":"` + strings.Repeat("x", 200) + `"}`, "", "larger than 100 bytes"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.in))
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		var b body
		err := DecodeLimit(httptest.NewRecorder(), r, &b, 100)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestErrorShape(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	Error(rec, 404, "not_found", "chat 1 does not exist")
	if rec.Code != 404 || rec.Body.String() != `{"error":{"code":"not_found","message":"chat 1 does not exist"}}`+"\n" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
