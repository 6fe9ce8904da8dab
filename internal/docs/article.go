package docs

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
)

// Article is a web page read for its main article: go-readability picks
// the article from a full DOM parse, then the streaming HTML reader turns
// it into text. No file extension maps to it; web_fetch hands fetched HTML
// to the extraction child with it, because that DOM parse is where a
// hostile page costs: a 4.5 MB misnested page made 2 GB of nodes and 11 s
// of CPU in the daemon. In the child it runs under the rlimits and the
// timeout, and behind a node budget (MaxArticleNodes) checked first.
const Article Format = "article"

// MaxArticleNodes bounds the nodes a page may make when parsed into a DOM
// for article extraction (about 500 bytes each in readability, so ~250 MB).
// A page estimated above it is read whole by the streaming reader instead,
// with a warning naming the limit.
const MaxArticleNodes = 500_000

func extractArticle(ctx context.Context, data []byte, b *builder) error {
	est, title := estimateNodes(data, MaxArticleNodes)
	b.doc.Title = title
	if est > MaxArticleNodes {
		b.warn(fmt.Sprintf("the page's markup would make over %d elements when parsed (the article-extraction limit); its whole text is shown instead of the article", MaxArticleNodes))
		return extractHTML(data, b)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	art, err := readability.FromReader(bytes.NewReader(data), nil)
	if err != nil || art.Node == nil {
		return extractHTML(data, b)
	}
	if t := strings.TrimSpace(art.Title()); t != "" {
		b.doc.Title = t
	}
	var buf bytes.Buffer
	if art.RenderHTML(&buf) != nil {
		return extractHTML(data, b)
	}
	// The article's text, unless it holds none; then the whole page's.
	probe := newBuilder(Article, b.maxChars)
	probe.page("")
	htmlText(buf.Bytes(), probe)
	probe.flush()
	if !hasText(probe.doc.Pages) {
		return extractHTML(data, b)
	}
	return extractHTML(buf.Bytes(), b)
}

// formattingTags are HTML's formatting elements. A parser keeps them in
// its list of active formatting elements and, after a misnested page
// closed their parent, re-creates each of them before the next text or
// element (WHATWG HTML, "reconstruct the active formatting elements"):
// eight unclosed <b>s before a million <div>x</div> make eight million
// nodes.
var formattingTags = map[string]bool{
	"a": true, "b": true, "big": true, "code": true, "em": true, "font": true, "i": true,
	"nobr": true, "s": true, "small": true, "strike": true, "strong": true, "tt": true, "u": true,
}

// estimateNodes estimates, from the tokens alone, how many nodes a DOM
// parse of data would make: one per element and text run (plus the four a
// parser always adds), and, after an end tag that closed elements while
// formatting elements were still open, those formatting elements again
// (they may be re-created before the next node). Like a parser it keeps at
// most three identical formatting elements open (the "Noah's Ark" clause).
// It errs high, never low, costs one pass of the tokenizer, and stops
// counting past limit. It also returns the <title>.
func estimateNodes(data []byte, limit int) (n int, title string) {
	z := html.NewTokenizer(bytes.NewReader(data))
	z.SetMaxBuf(16 << 20)
	n = 4                           // document, html, head, body
	open := 0                       // formatting elements not closed
	same := map[string]int{}        // open formatting elements by tag and attributes
	byName := map[string][]string{} // their keys by tag name, in order
	pending := 0                    // formatting elements a parser may re-create next
	inTitle := false
	for n <= limit {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return n, title
		case html.StartTagToken, html.SelfClosingTagToken:
			raw := string(z.Raw())
			name, _ := z.TagName()
			n += 1 + pending
			pending = 0
			switch {
			case tt == html.StartTagToken && formattingTags[string(name)]:
				if same[raw] < 3 {
					same[raw]++
					byName[string(name)] = append(byName[string(name)], raw)
					open++
				}
			case string(name) == "title" && title == "":
				inTitle = tt == html.StartTagToken
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch {
			case formattingTags[string(name)]:
				if keys := byName[string(name)]; len(keys) > 0 {
					same[keys[len(keys)-1]]--
					byName[string(name)] = keys[:len(keys)-1]
					open--
				}
			case string(name) == "title":
				inTitle = false
			default:
				pending = open
			}
		case html.TextToken:
			n += 1 + pending
			pending = 0
			if inTitle && len(title) < 1000 {
				title = strings.Join(strings.Fields(title+" "+string(z.Text())), " ")
			}
		}
	}
	return n, title
}
