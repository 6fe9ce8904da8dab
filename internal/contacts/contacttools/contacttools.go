// Package contacttools exposes the address books to the agent:
// contacts_search and resolve_recipient (read-only, low risk). Names and
// addresses come from other people's cards and mail headers, so results
// are marked untrusted content.
package contacttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Deps are what the tools work with.
type Deps struct {
	Store *contacts.Store
	// Mail finds correspondents in the mail mirror; nil without mail.
	Mail contacts.CorrespondentFinder
	Now  func() time.Time
}

// SearchArgs are contacts_search's arguments.
type SearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}

// SearchResult is contacts_search's answer.
type SearchResult struct {
	People []contacts.Person `json:"people"`
}

// Search runs contacts_search.
func (d Deps) Search(ctx context.Context, a SearchArgs) (SearchResult, error) {
	ps, err := d.Store.Search(ctx, a.Query, a.Limit)
	return SearchResult{People: ps}, err
}

// ResolveArgs are resolve_recipient's arguments.
type ResolveArgs struct {
	Name string `json:"name"`
}

// Resolve runs resolve_recipient.
func (d Deps) Resolve(ctx context.Context, a ResolveArgs) (contacts.Resolution, error) {
	return d.Store.Resolve(ctx, a.Name, d.Mail, d.Now())
}

// Tools returns the contact tools bound to d.
func Tools(d Deps) []tools.Tool {
	read := tools.Spec{Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true, MaxResult: 20000}
	return []tools.Tool{
		tool(spec(read, "contacts_search", "Search the user's address books by name, nickname, organisation or address (word prefixes). Cards of one person in several books are merged. People the user only exchanged mail with (no card) come after them, marked seen_in_mail; mail counts and last contact are under mail.", searchSchema), d.Search),
		tool(spec(read, "resolve_recipient", "Turn a name as the user said it (\"Marco\", \"Anna from Polimi\") into email candidates ranked by address-book cards and how often and recently they were mailed, with that evidence. Call it before mail_send when the user names a person instead of giving an address. If status is ambiguous, show the candidates and ask the user which one; never pick one yourself. If none, ask for the address.", resolveSchema), d.Resolve),
	}
}

func spec(base tools.Spec, name, desc, schema string) tools.Spec {
	base.Name, base.Description, base.Schema = name, desc, json.RawMessage(schema)
	return base
}

func tool[A, R any](spec tools.Spec, fn func(context.Context, A) (R, error)) tools.Tool {
	return &tools.Func{S: spec, Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
		var a A
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return tools.Result{Content: fmt.Sprintf("arguments for %s could not be read: %v", spec.Name, err), IsError: true}, nil
		}
		r, err := fn(ctx, a)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return tools.Result{}, err
			}
			return tools.Result{Content: err.Error(), IsError: true}, nil
		}
		b, err := json.Marshal(r)
		if err != nil {
			return tools.Result{}, err
		}
		return tools.Result{Content: tools.Cap(string(b), spec.MaxResult)}, nil
	}}
}

const searchSchema = `{"type":"object","additionalProperties":false,"required":["query"],"properties":{
"query":{"type":"string","minLength":1,"maxLength":200},"limit":{"type":"integer","minimum":1,"maximum":50}}}`

const resolveSchema = `{"type":"object","additionalProperties":false,"required":["name"],"properties":{
"name":{"type":"string","minLength":1,"maxLength":200,"description":"a name, optionally with a hint: \"Anna from Polimi\""}}}`
