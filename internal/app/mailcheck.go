package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/mail"
)

// mailPageReaderCheck is doctor's mail.fts5_reader row: whether one-word
// ranking reads the FTS5 index pages (the linked FTS5 is the build the
// reader was verified with) or, slower, the fts5vocab table.
func mailPageReaderCheck(st *mail.Store) doctor.Check {
	return doctor.Check{Name: "mail.fts5_reader", Run: func(context.Context) (doctor.Status, string) {
		c := st.PageReader()
		if !c.OK {
			return doctor.Warn, c.String()
		}
		return doctor.OK, c.String()
	}}
}
