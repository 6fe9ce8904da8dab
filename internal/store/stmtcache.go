package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// The driver compiles each statement that database/sql hands it as text
// (db.Query, tx.Exec, …) and throws it away afterwards: a mail search of a
// few queries spent a sixth of its time in SQLite's parser. Each
// connection here keeps its last stmtCacheSize statements compiled, by
// text, and runs a repeated text from its compiled form. A statement still
// reading rows when its text comes again (the same query nested in its own
// loop) is not shared: the second use is compiled apart, as before.
// SQLite recompiles a kept statement by itself when the schema changes.
const stmtCacheSize = 64

// cachingConnector opens the package-level modernc.org/sqlite driver's
// connections (its registered functions apply), keeping their statements.
type cachingConnector struct{ base driver.Connector }

func newCachingConnector(dsn string) (cachingConnector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return cachingConnector{}, err
	}
	return cachingConnector{base: base}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c cachingConnector) Driver() driver.Driver { return c.base.Driver() }

// sqliteConn is what database/sql and this package use of the driver's
// connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	backuper
}

type cachingConn struct {
	sqliteConn
	byText map[string]*list.Element // of *cachedStmt
	lru    list.List                // front: most recently used
}

type cachedStmt struct {
	text string
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	// busy: its rows are still open.
	busy bool
}

func newCachingConn(c driver.Conn) (*cachingConn, error) {
	sc, ok := c.(sqliteConn)
	if !ok {
		c.Close()
		return nil, errors.New("the sqlite driver's connection lacks methods this store needs")
	}
	return &cachingConn{sqliteConn: sc, byText: map[string]*list.Element{}}, nil
}

// stmtFor returns the compiled statement of text, compiling and keeping it
// if needed, or nil when its kept statement is busy.
func (c *cachingConn) stmtFor(ctx context.Context, text string) (*cachedStmt, error) {
	if e, ok := c.byText[text]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		return cs, nil
	}
	s, err := c.sqliteConn.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	st, ok := s.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		s.Close()
		return nil, errors.New("the sqlite driver's statement lacks methods this store needs")
	}
	cs := &cachedStmt{text: text, stmt: st}
	c.byText[text] = c.lru.PushFront(cs)
	c.evict()
	return cs, nil
}

// evict closes the least recently used idle statements past the size.
func (c *cachingConn) evict() {
	for e := c.lru.Back(); e != nil && c.lru.Len() > stmtCacheSize; {
		prev := e.Prev()
		if cs := e.Value.(*cachedStmt); !cs.busy {
			c.lru.Remove(e)
			delete(c.byText, cs.text)
			cs.stmt.Close()
		}
		e = prev
	}
}

func (c *cachingConn) QueryContext(ctx context.Context, text string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.stmtFor(ctx, text)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.QueryContext(ctx, text, args)
	}
	rows, err := cs.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	sr, ok := rows.(sqliteRows)
	if !ok {
		rows.Close()
		return nil, errors.New("the sqlite driver's rows lack methods this store needs")
	}
	cs.busy = true
	return &cachedRows{sqliteRows: sr, cs: cs}, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, text string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.stmtFor(ctx, text)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.ExecContext(ctx, text, args)
	}
	return cs.stmt.ExecContext(ctx, args)
}

// Unwrap is the driver's connection (sqlite.Limit looks for it).
func (c *cachingConn) Unwrap() driver.Conn { return c.sqliteConn }

// Close finalizes the kept statements before the connection.
func (c *cachingConn) Close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedStmt).stmt.Close()
	}
	c.lru.Init()
	clear(c.byText)
	return c.sqliteConn.Close()
}

// sqliteRows is what the driver's rows offer.
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeScanType
}

type cachedRows struct {
	sqliteRows
	cs *cachedStmt
}

// Close resets the statement (the driver does, for a statement it did not
// compile for this one query) and hands it back.
func (r *cachedRows) Close() error {
	err := r.sqliteRows.Close()
	r.cs.busy = false
	return err
}
