// Package wikitools exposes the wiki to the agent: wiki_search, wiki_read
// and wiki_links (read-only, allowed) and wiki_write and wiki_edit (gated
// writes whose approval card carries a unified diff of the change).
//
// Results that carry content from outside (mail-derived notes, imported
// files, pages whose sources name mail or files) are wrapped as untrusted
// content and mark the turn tainted, exactly as reading the mail itself
// would: a promoted mail cannot steer a later write in the same turn
// without the user seeing a card that names it.
package wikitools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/untrusted"
	"github.com/hestia-dev/hestia/internal/wiki"
)

// Tools returns the wiki tools bound to w.
func Tools(w *wiki.Wiki) []tools.Tool {
	read := tools.Spec{Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, MaxResult: 40000}
	write := tools.Spec{Risk: tools.RiskMedium}
	return []tools.Tool{
		&tools.Func{S: spec(read, "wiki_search", "Search the user's long-term memory wiki (Markdown pages with provenance) by words, partial words and meaning. Returns pages with a snippet; read one with wiki_read.", searchSchema),
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					Query string `json:"query"`
					Limit int    `json:"limit"`
				}
				if err := json.Unmarshal(c.Args, &a); err != nil {
					return badArgs("wiki_search", err), nil
				}
				res, err := w.Search(ctx, a.Query, a.Limit)
				if err != nil {
					return errResult(err)
				}
				var from []string
				for _, h := range res.Hits {
					if h.Untrusted {
						from = append(from, h.Path)
					}
				}
				return result(ctx, c, "wiki_search", res, from)
			}},
		&tools.Func{S: spec(read, "wiki_read", "Read a wiki page by path, file name or title: front matter (sources, review_by), backlinks and a window of the text; continue with offset=next_offset.", readSchema),
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					Page   string `json:"page"`
					Offset int64  `json:"offset"`
					Limit  int    `json:"limit"`
				}
				if err := json.Unmarshal(c.Args, &a); err != nil {
					return badArgs("wiki_read", err), nil
				}
				res, err := w.Read(ctx, a.Page, a.Offset, a.Limit)
				if err != nil {
					return errResult(err)
				}
				var from []string
				if res.Untrusted {
					from = []string{res.Path}
				}
				return result(ctx, c, "wiki_read", res, from)
			}},
		&tools.Func{S: spec(read, "wiki_links", "List a wiki page's outgoing [[links]] (resolved or broken) and the pages that link to it.", linksSchema),
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					Page string `json:"page"`
				}
				if err := json.Unmarshal(c.Args, &a); err != nil {
					return badArgs("wiki_links", err), nil
				}
				res, err := w.PageLinks(ctx, a.Page)
				if err != nil {
					return errResult(err)
				}
				return result(ctx, c, "wiki_links", res, nil)
			}},
		&writeTool{w: w, s: spec(write, "wiki_write", "Create or replace a wiki page (path under pages/, ending in .md) with the full Markdown content, front matter included. Needs the user's approval; the card shows the diff.", writeSchema)},
		&writeTool{w: w, edit: true, s: spec(write, "wiki_edit", "Replace one exact, unique passage (old_text) of a wiki page with new_text. Needs the user's approval; the card shows the diff.", editSchema)},
	}
}

func spec(base tools.Spec, name, desc, schema string) tools.Spec {
	base.Name, base.Description, base.Schema = name, desc, json.RawMessage(schema)
	return base
}

func badArgs(tool string, err error) tools.Result {
	return tools.Result{Content: fmt.Sprintf("arguments for %s could not be read: %v", tool, err), IsError: true}
}

func errResult(err error) (tools.Result, error) {
	if errors.Is(err, context.Canceled) {
		return tools.Result{}, err
	}
	return tools.Result{Content: err.Error(), IsError: true}, nil
}

// result encodes v; when it carries content from untrusted pages (from),
// the turn is marked tainted with those pages as the source and the text
// is wrapped so the model treats it as data.
func result(ctx context.Context, c tools.Call, name string, v any, from []string) (tools.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tools.Result{}, err
	}
	content := string(b)
	if len(from) == 0 {
		return tools.Result{Content: content}, nil
	}
	if tr := taint.From(ctx); tr != nil {
		tr.Mark(taint.Source{Tool: name, Detail: "page " + from[0], CallID: c.ID})
	}
	bd, err := untrusted.NewBoundary(nil)
	if err != nil {
		return tools.Result{}, err
	}
	wrapped, _ := bd.Wrap(name, tools.Cap(content, 40000))
	return tools.Result{Content: wrapped}, nil
}

// writeTool is wiki_write and wiki_edit.
type writeTool struct {
	w    *wiki.Wiki
	s    tools.Spec
	edit bool
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	OldText string `json:"old_text"`
	NewText string `json:"new_text"`
}

func (t *writeTool) Spec() tools.Spec                { return t.s }
func (t *writeTool) Available(context.Context) error { return nil }

// Target is the page path, so trust rules can name pages ("pages/*").
func (t *writeTool) Target(args json.RawMessage) string {
	var a writeArgs
	_ = json.Unmarshal(args, &a)
	return a.Path
}

// next returns the current and proposed text of the page.
func (t *writeTool) next(a writeArgs) (old, next string, existed bool, err error) {
	old, existed, err = t.w.Current(a.Path)
	if err != nil {
		return "", "", false, err
	}
	if !t.edit {
		return old, a.Content, existed, nil
	}
	next, err = t.w.EditPreview(a.Path, a.OldText, a.NewText)
	return old, next, existed, err
}

// Preview is the card's one line.
func (t *writeTool) Preview(_ context.Context, args json.RawMessage) string {
	var a writeArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return ""
	}
	old, next, existed, err := t.next(a)
	if err != nil {
		return fmt.Sprintf("%s %s: will fail: %v", t.s.Name, a.Path, err)
	}
	if !existed {
		return fmt.Sprintf("create wiki page %s (%d bytes)", a.Path, len(next))
	}
	return fmt.Sprintf("change wiki page %s (%d → %d bytes)", a.Path, len(old), len(next))
}

// Diff is the unified diff the card shows.
func (t *writeTool) Diff(_ context.Context, args json.RawMessage) string {
	var a writeArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return ""
	}
	old, next, _, err := t.next(a)
	if err != nil {
		return ""
	}
	return wiki.UnifiedDiff(a.Path, old, next)
}

func (t *writeTool) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	var a writeArgs
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return badArgs(t.s.Name, err), nil
	}
	var res wiki.WriteResult
	var err error
	if t.edit {
		res, err = t.w.Edit(ctx, a.Path, a.OldText, a.NewText, "agent")
	} else {
		res, err = t.w.Write(ctx, a.Path, a.Content, "agent")
	}
	if err != nil {
		return errResult(err)
	}
	res.Diff = "" // the model wrote it; no need to echo it back
	b, err := json.Marshal(res)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: string(b)}, nil
}

const searchSchema = `{"type":"object","additionalProperties":false,"required":["query"],"properties":{
"query":{"type":"string","minLength":1,"maxLength":500},"limit":{"type":"integer","minimum":1,"maximum":20}}}`

const readSchema = `{"type":"object","additionalProperties":false,"required":["page"],"properties":{
"page":{"type":"string","minLength":1,"maxLength":512,"description":"path (pages/Foo.md), file name or title"},
"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":200,"maximum":32000}}}`

const linksSchema = `{"type":"object","additionalProperties":false,"required":["page"],"properties":{
"page":{"type":"string","minLength":1,"maxLength":512}}}`

const writeSchema = `{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{
"path":{"type":"string","minLength":4,"maxLength":512,"description":"e.g. pages/Project Apollo.md"},
"content":{"type":"string","maxLength":1048576}}}`

const editSchema = `{"type":"object","additionalProperties":false,"required":["path","old_text","new_text"],"properties":{
"path":{"type":"string","minLength":4,"maxLength":512},
"old_text":{"type":"string","minLength":1,"maxLength":100000},"new_text":{"type":"string","maxLength":100000}}}`
