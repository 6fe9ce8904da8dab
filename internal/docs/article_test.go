package docs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func tangled(size, open int) []byte {
	var b bytes.Buffer
	b.WriteString("<html><head><title>Tangled</title></head><body><div>")
	for i := 0; i < open; i++ {
		fmt.Fprintf(&b, "<b class=c%d>", i)
	}
	b.WriteString("</div>")
	for b.Len() < size {
		b.WriteString("<div>x</div>")
	}
	return b.Bytes()
}

func countNodes(t *testing.T, page []byte) int {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		n++
		for c := x.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return n
}

// The estimate is never below what a parser really builds, on tangled and
// on ordinary pages, and stays close on ordinary ones.
func TestEstimateNodesErrsHigh(t *testing.T) {
	t.Parallel()
	ordinary := "<html><head><title>Plain</title></head><body><nav>a | b</nav>" + strings.Repeat("<p>Some <b>bold</b> and <a href=x>linked</a> text.</p>\n<ul><li>one<li>two</ul>", 400) + "</body></html>"
	for _, c := range []struct {
		name string
		page []byte
	}{
		{"tangled 8", tangled(60_000, 8)},
		{"tangled 40", tangled(60_000, 40)},
		{"ordinary", []byte(ordinary)},
		{"unclosed p and b", []byte(strings.Repeat("<p><b>x<i>y</p>", 300))},
	} {
		real := countNodes(t, c.page)
		est, _ := estimateNodes(c.page, 1<<30)
		t.Logf("%s: %d nodes, estimated %d", c.name, real, est)
		if est < real {
			t.Errorf("%s: estimated %d nodes, a parse makes %d", c.name, est, real)
		}
		if c.name == "ordinary" && est > 2*real {
			t.Errorf("ordinary page: estimated %d nodes for %d", est, real)
		}
	}
	if _, title := estimateNodes([]byte(ordinary), 10); title != "Plain" {
		t.Errorf("title %q", title)
	}
}

// An ordinary page gives its article and title; a tangled one gives its
// whole text with a warning naming the limit, without a DOM parse.
func TestArticle(t *testing.T) {
	t.Parallel()
	page := `<html><head><title>Contract law basics</title><script>steal()</script></head><body>
<nav>Home | About | Careers</nav><article><h1>Contract law basics</h1><p>A contract may be terminated by either party with notice as agreed.</p>
<p>` + strings.Repeat("Courts look at the termination clause first, then at statutory notice periods. ", 20) + `</p></article></body></html>`
	doc, err := Extract(context.Background(), []byte(page), Article, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	text := doc.Pages[0].Text
	if doc.Title != "Contract law basics" || !strings.Contains(text, "terminated by either party") || strings.Contains(text, "steal()") || strings.Contains(text, "Careers") || len(doc.Warnings) > 0 {
		t.Errorf("title %q warnings %q text %q", doc.Title, doc.Warnings, text)
	}
	doc, err = Extract(context.Background(), tangled(4_500_000, 8), Article, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Tangled" || len(doc.Warnings) == 0 || !strings.Contains(doc.Warnings[0], fmt.Sprint(MaxArticleNodes)) || !strings.HasPrefix(doc.Pages[0].Text, "x\nx\n") {
		t.Errorf("tangled: title %q warnings %q", doc.Title, doc.Warnings)
	}
	if _, err := Extract(context.Background(), []byte("<html><body><script>x()</script></body></html>"), Article, Limits{}); err == nil {
		t.Error("a page without text gave a document")
	}
}
