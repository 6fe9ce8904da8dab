package lazyre

import (
	"sync"
	"testing"
)

func TestCompilesOnFirstUseOnce(t *testing.T) {
	t.Parallel()
	re := New(`(\w+)@(\w+)\.org`)
	if re.String() != `(\w+)@(\w+)\.org` {
		t.Errorf("String = %q", re.String())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if m := re.FindStringSubmatch("ann@example.org"); len(m) != 3 || m[1] != "ann" {
				t.Errorf("submatch = %q", m)
			}
		})
	}
	wg.Wait()
	if first, second := re.Get(), re.Get(); first != second {
		t.Error("compiled twice")
	}
	if got := re.ReplaceAllString("bob@x.org and c@y.org", "$1"); got != "bob and c" {
		t.Errorf("replace = %q", got)
	}
}

func TestBadExpressionPanicsOnUse(t *testing.T) {
	t.Parallel()
	re := New(`(`) // constructing it must not panic: nothing compiles at start
	// Every use panics, not only the first: a caller that recovered once
	// must not get a nil expression the next time.
	for i := range 2 {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("use %d: a bad expression did not panic", i+1)
				}
			}()
			re.MatchString("x")
		}()
	}
}
