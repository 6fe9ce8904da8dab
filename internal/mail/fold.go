package mail

import (
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"

	"github.com/hestia-dev/hestia/internal/search"
)

// foldFunc is the SQL function hestia_fold(text): text lower-cased with its
// diacritics removed (search.Fold). The trigram index (detail=none) only
// narrows candidates; substring filters then check
// instr(hestia_fold(column), folded value), folding accents as the index
// does ("cafe" finds "Café"). NULL gives NULL.
const foldFunc = "hestia_fold"

// registerFold adds hestia_fold to the SQLite driver. The driver keeps it
// for every connection opened afterwards, process-wide, so it runs once,
// before the mail database's first connection.
var registerFold = sync.OnceValue(func() error {
	return sqlite.RegisterDeterministicScalarFunction(foldFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case nil:
			return nil, nil
		case string:
			return search.Fold(v), nil
		case []byte:
			return search.Fold(string(v)), nil
		default:
			return search.Fold(fmt.Sprint(v)), nil
		}
	})
})
