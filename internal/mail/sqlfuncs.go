package mail

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"

	"modernc.org/sqlite"

	"github.com/hestia-dev/hestia/internal/search"
)

// SQL functions the mail schema and queries use.
const (
	// bodyFunc is hestia_body(stored body): the body's text (see body.go).
	// The messages_text view, which the full-text tables index, and every
	// query that reads a body go through it.
	bodyFunc = "hestia_body"
	// packFunc is hestia_pack(text): the body as stored (see
	// bodyCodec.pack). The migration that compresses old rows uses it.
	packFunc = "hestia_pack"
	// containsFunc is hestia_contains(column, folded): whether the
	// column's text (a stored body is unpacked) contains folded once
	// lower-cased with its diacritics removed (search.Fold), as the
	// trigram tokenizer with remove_diacritics folds it ("cafe" finds
	// "Café"); the caller folds the value. The trigram index (detail=none)
	// only narrows candidates, and substring filters check each one with
	// this. It hands no text back to SQLite: copying every candidate's
	// body out and in again cost more than unpacking it.
	containsFunc = "hestia_contains"
)

// registerFuncs adds the mail SQL functions to the SQLite driver and
// returns the body codec they share. The driver keeps them for every
// connection opened afterwards, process-wide, so it runs once, before the
// mail database's first connection.
var registerFuncs = sync.OnceValues(func() (*bodyCodec, error) {
	codec := newBodyCodec()
	err := sqlite.RegisterDeterministicScalarFunction(bodyFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if args[0] == nil {
			return nil, nil
		}
		return codec.unpack(args[0])
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", bodyFunc, err)
	}
	err = sqlite.RegisterDeterministicScalarFunction(packFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		if s, ok := args[0].(string); ok {
			return codec.pack(s)
		}
		return args[0], nil
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", packFunc, err)
	}
	err = sqlite.RegisterDeterministicScalarFunction(containsFunc, 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		needle, ok := args[1].(string)
		if !ok || args[0] == nil {
			return nil, nil
		}
		text, err := codec.unpack(args[0])
		if err != nil {
			return nil, err
		}
		if strings.Contains(search.Fold(text), needle) {
			return int64(1), nil
		}
		return int64(0), nil
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", containsFunc, err)
	}
	return codec, nil
})
