package docs

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestStreamRoundTrip(t *testing.T) {
	doc := &Document{Format: PDF, Pages: []Page{{Number: 1, Text: "Ein Vertrag über\nKündigung"}, {Number: 2, Label: "ii", Text: ""}, {Number: 3, Text: "line \"quoted\" \\ and\n\ttabs"}},
		Headings: []Heading{{Title: "7. Termination", Level: 1, Page: 3, Offset: 4}}, Warnings: []string{"page 2 has no text"}}
	var b bytes.Buffer
	if err := writeStream(&b, doc); err != nil {
		t.Fatal(err)
	}
	got, err := readStream(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, doc) {
		t.Fatalf("got %+v\nwant %+v", got, doc)
	}
}

func TestStreamRefusesMalformedOutput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no header line"},
		{"{not json\nabc", "header"},
		{`{"format":"pdf","pages":[{"number":1,"len":5}]}` + "\nabc", "claims 5 bytes"},
		{`{"format":"pdf","pages":[{"number":1,"len":-1}]}` + "\n", "claims -1 bytes"},
		{`{"format":"pdf","pages":[{"number":1,"len":2}]}` + "\nabcdef", "hold 2 bytes but 6 followed"},
		{`{"format":"pdf","pages":[{"number":1,"len":9223372036854775807},{"number":2,"len":9223372036854775807}]}` + "\nab", "claims"},
	} {
		if _, err := readStream([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (want %q)", c.in, err, c.want)
		}
	}
	// Invalid UTF-8 from the child is repaired, not passed on.
	doc, err := readStream([]byte(`{"format":"txt","pages":[{"number":1,"len":3}]}` + "\na\xffb"))
	if err != nil || doc.Pages[0].Text != "a\uFFFDb" {
		t.Fatalf("%+v %v", doc, err)
	}
}

func FuzzReadStream(f *testing.F) {
	f.Add([]byte(`{"format":"pdf","pages":[{"number":1,"len":3}]}` + "\nabc"))
	f.Add([]byte(`{"format":"pdf","pages":[{"number":1,"len":1},{"number":2,"len":2}]}` + "\nabc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := readStream(b)
		if err != nil {
			return
		}
		n := 0
		for _, p := range doc.Pages {
			n += len(p.Text)
		}
		if n > 3*len(b) {
			t.Fatalf("%d bytes of text from %d bytes of input", n, len(b))
		}
	})
}
