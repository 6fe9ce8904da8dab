package calendar

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// placed renders nestTasks' answer as "uid<parent@depth" in uid order.
func placed(n map[string]nesting) string {
	var out []string
	for uid, p := range n {
		out = append(out, fmt.Sprintf("%s<%s@%d", uid, p.parent, p.depth))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestNestTasks(t *testing.T) {
	t.Parallel()
	chain := map[string]string{"t0": ""}
	for i := 1; i < 12; i++ {
		chain[fmt.Sprintf("t%d", i)] = fmt.Sprintf("t%d", i-1)
	}
	for _, c := range []struct {
		name    string
		parents map[string]string
		want    string
	}{
		{"flat", map[string]string{"a": "", "b": ""}, "a<@0 b<@0"},
		{"one level", map[string]string{"move": "", "van": "move", "kitchen": "move"}, "kitchen<move@1 move<@0 van<move@1"},
		{"grandchild", map[string]string{"move": "", "kitchen": "move", "plates": "kitchen"}, "kitchen<move@1 move<@0 plates<kitchen@2"},
		{"parent not in the list", map[string]string{"a": "gone", "b": "a"}, "a<@0 b<a@1"},
		{"itself", map[string]string{"a": "a", "b": "a"}, "a<@0 b<a@1"},
		{"two-cycle", map[string]string{"a": "b", "b": "a"}, "a<@0 b<@0"},
		{"three-cycle with a tail hanging below it", map[string]string{"a": "b", "b": "c", "c": "a", "d": "a", "e": "d"},
			"a<@0 b<@0 c<@0 d<a@1 e<d@2"},
		{"a cycle below a tree stays apart", map[string]string{"root": "", "x": "y", "y": "x", "z": "root"}, "root<@0 x<@0 y<@0 z<root@1"},
		// Five levels (0–4); the sixth starts again at the top, its own
		// subtasks under it.
		{"depth capped", chain, "t0<@0 t10<@0 t11<t10@1 t1<t0@1 t2<t1@2 t3<t2@3 t4<t3@4 t5<@0 t6<t5@1 t7<t6@2 t8<t7@3 t9<t8@4"},
		{"empty uid parent", map[string]string{"": "", "a": ""}, "<@0 a<@0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The answer never depends on the map's order: the same
			// every time.
			first := placed(nestTasks(c.parents))
			if first != c.want {
				t.Fatalf("got  %s\nwant %s", first, c.want)
			}
			for range 20 {
				if got := placed(nestTasks(c.parents)); got != first {
					t.Fatalf("unstable: %s, then %s", first, got)
				}
			}
		})
	}
}

// FuzzNestTasks: any parents at all (cycles, self-references, dangling
// names, long chains) give a forest: every parent is in the list, depth
// is the parent's plus one and below MaxTaskDepth, and only a to-do whose
// parent as written could not be kept is moved to the top.
func FuzzNestTasks(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 0})
	f.Add([]byte{0, 0, 1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6})
	f.Add([]byte{0, 9, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		parents := map[string]string{}
		for i := 0; i+1 < len(data); i += 2 {
			uid := fmt.Sprintf("u%d", data[i]%32)
			p := ""
			if data[i+1] != 255 {
				p = fmt.Sprintf("u%d", data[i+1]%40) // u32–u39 are not in the list
			}
			parents[uid] = p
		}
		n := nestTasks(parents)
		if len(n) != len(parents) {
			t.Fatalf("placed %d of %d", len(n), len(parents))
		}
		for uid, p := range n {
			if p.parent == "" {
				if p.depth != 0 {
					t.Fatalf("%s at top with depth %d", uid, p.depth)
				}
				continue
			}
			if p.parent != parents[uid] {
				t.Fatalf("%s placed under %s, written under %s", uid, p.parent, parents[uid])
			}
			pp, ok := n[p.parent]
			if !ok || p.depth != pp.depth+1 || p.depth >= MaxTaskDepth {
				t.Fatalf("%s under %s at depth %d (parent %+v, %v)", uid, p.parent, p.depth, pp, ok)
			}
		}
	})
}

const treeICS = `BEGIN:VCALENDAR
VERSION:2.0
PRODID:x
BEGIN:VTODO
UID:%s
DTSTAMP:20260301T080000Z
SUMMARY:%s
%sEND:VTODO
END:VCALENDAR
`

// TestTaskTreeIndexed: subtasks from a vdir nest under their parent (with
// RELTYPE=PARENT or none, any case), a CHILD or SIBLING relation nests
// nothing, a parent in another list or deleted leaves the child at top
// level, a cycle is broken; the counts say how many subtasks are done; a
// search finds a subtask with its parent's title.
func TestTaskTreeIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	st := taskStore(t, time.Date(2026, 3, 20, 10, 0, 0, 0, loc))
	home, work := filepath.Join(t.TempDir(), "home"), filepath.Join(t.TempDir(), "work")
	todo := func(dir, uid, summary, extra string) {
		writeTaskFile(t, dir, uid+".ics", fmt.Sprintf(treeICS, uid, summary, extra))
	}
	todo(home, "move", "Move house", "RELATED-TO;RELTYPE=CHILD:van\n")
	todo(home, "van", "Book the van", "RELATED-TO;RELTYPE=PARENT:move\nDUE;VALUE=DATE:20260321\n")
	todo(home, "kitchen", "Pack the kitchen", "RELATED-TO:move\nRELATED-TO;RELTYPE=SIBLING:van\n")
	todo(home, "plates", "Wrap the plates", "RELATED-TO;RELTYPE=parent:kitchen\nSTATUS:COMPLETED\nCOMPLETED:20260319T100000Z\n")
	todo(home, "glasses", "Wrap the glasses", "RELATED-TO;RELTYPE=Parent: kitchen \n")
	todo(home, "cousin", "Call the cousin", "RELATED-TO;RELTYPE=SIBLING:move\n")
	todo(home, "orphan", "Return the keys", "RELATED-TO:deleted-long-ago\n")
	todo(home, "cross", "Sign the lease", "RELATED-TO:report\n")
	todo(home, "egg", "Chicken", "RELATED-TO:hen\n")
	todo(home, "hen", "Egg", "RELATED-TO:egg\n")
	todo(home, "self", "Itself", "RELATED-TO:self\n")
	todo(home, "blank", "Blank parent", "RELATED-TO:\nRELATED-TO;RELTYPE=PARENT:   \n")
	todo(home, "esc", "Escaped", `RELATED-TO:a\,b`+"\n")
	todo(home, "a,b", "Comma in its uid", "")
	todo(work, "report", "Quarterly report", "")
	for _, src := range []Source{{Name: "home", Path: home}, {Name: "work", Path: work}} {
		if _, err := st.Sync(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := st.Todos(ctx, TodoQuery{IncludeDone: true})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Task{}
	for _, x := range ts {
		by[x.UID] = x
	}
	for _, c := range []struct {
		uid, parent, parentSummary string
		subtasks, done             int
	}{
		{"move", "", "", 2, 0},
		{"van", "move", "Move house", 0, 0},
		{"kitchen", "move", "Move house", 2, 1},
		{"plates", "kitchen", "Pack the kitchen", 0, 0},
		{"glasses", "kitchen", "Pack the kitchen", 0, 0},
		{"cousin", "", "", 0, 0},
		{"orphan", "", "", 0, 0},
		{"cross", "", "", 0, 0}, // its parent is in another list
		{"egg", "", "", 0, 0},
		{"hen", "", "", 0, 0},
		{"self", "", "", 0, 0},
		{"blank", "", "", 0, 0},
		{"esc", "a,b", "Comma in its uid", 0, 0},
		{"report", "", "", 0, 0},
	} {
		got, ok := by[c.uid]
		if !ok || got.Parent != c.parent || got.ParentSummary != c.parentSummary || got.Subtasks != c.subtasks || got.SubtasksDone != c.done {
			t.Errorf("%s: parent %q (%q), %d of %d done; want %q (%q), %d of %d", c.uid, got.Parent, got.ParentSummary,
				got.SubtasksDone, got.Subtasks, c.parent, c.parentSummary, c.done, c.subtasks)
		}
	}
	if w := strings.Join(by["self"].Warnings, ";"); !strings.Contains(w, "RELATED-TO names the task itself") {
		t.Errorf("self warnings %q", w)
	}
	if w := strings.Join(by["blank"].Warnings, ";"); !strings.Contains(w, "empty RELATED-TO ignored") {
		t.Errorf("blank warnings %q", w)
	}
	// A search finds the subtask alone, with its parent's title.
	found, err := st.Todos(ctx, TodoQuery{Text: "kitchen"})
	if err != nil || len(found) != 1 || found[0].ParentSummary != "Move house" || found[0].Subtasks != 2 || found[0].SubtasksDone != 1 {
		t.Fatalf("search: %+v %v", found, err)
	}
	due, err := st.Todos(ctx, TodoQuery{DueBefore: time.Date(2026, 3, 22, 0, 0, 0, 0, loc)})
	if err != nil || len(due) != 1 || due[0].UID != "van" || due[0].Parent != "move" {
		t.Fatalf("due: %+v %v", due, err)
	}
	tree, err := st.TaskTree(ctx, "home")
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, n := range tree.Descendants("move") {
		desc = append(desc, fmt.Sprintf("%s@%d", n.UID, n.Depth))
	}
	// Subtasks in summary order ("Book the van" before "Pack the
	// kitchen"), each before its own.
	if got := strings.Join(desc, " "); got != "van@1 kitchen@1 glasses@2 plates@2" {
		t.Fatalf("descendants %s", got)
	}
	if h := tree.Height("move"); h != 2 {
		t.Fatalf("height %d", h)
	}
	if n, ok := tree.Node("cross"); !ok || n.Parent != "" || n.Related != "report" {
		t.Fatalf("cross %+v", n)
	}
	if _, err := st.TaskTree(ctx, "nope"); err == nil {
		t.Fatal("a tree of an unknown list")
	}
	// The parent deleted: its subtasks go to the top, the grandchildren
	// stay under theirs.
	if err := os.Remove(filepath.Join(home, "move.ics")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sync(ctx, Source{Name: "home", Path: home}); err != nil {
		t.Fatal(err)
	}
	after, err := st.Todos(ctx, TodoQuery{Text: "pack kitchen"})
	if err != nil || len(after) != 1 || after[0].Parent != "" || after[0].ParentSummary != "" || after[0].Subtasks != 2 {
		t.Fatalf("after the parent went: %+v %v", after, err)
	}
}

// TestParseRelatedTo: the parent is read from RELATED-TO as clients write
// it, and what cannot be a parent is dropped and said.
func TestParseRelatedTo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, props, parent, warning string
	}{
		{"no reltype", "RELATED-TO:p1", "p1", ""},
		{"parent", "RELATED-TO;RELTYPE=PARENT:p1", "p1", ""},
		{"lower case", "RELATED-TO;RELTYPE=parent:p1", "p1", ""},
		{"child only", "RELATED-TO;RELTYPE=CHILD:c1", "", ""},
		{"sibling then parent", "RELATED-TO;RELTYPE=SIBLING:s1\nRELATED-TO:p1", "p1", ""},
		{"rfc 9253 types", "RELATED-TO;RELTYPE=DEPENDS-ON:d1\nRELATED-TO;RELTYPE=X-NEXT:n1", "", ""},
		{"two parents", "RELATED-TO:p1\nRELATED-TO;RELTYPE=PARENT:p2\nRELATED-TO:p3", "p1", `several parents in RELATED-TO; "p1" is used`},
		{"same parent twice", "RELATED-TO:p1\nRELATED-TO:p1", "p1", ""},
		{"empty", "RELATED-TO:", "", "empty RELATED-TO ignored"},
		{"itself", "RELATED-TO:me", "", "RELATED-TO names the task itself"},
		{"spaces and escapes", `RELATED-TO: x\;y `, "x;y", ""},
		{"uri value", "RELATED-TO;VALUE=URI:urn:uuid:1234", "urn:uuid:1234", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VTODO\r\nUID:me\r\nSUMMARY:x\r\n" +
				strings.ReplaceAll(c.props, "\n", "\r\n") + "\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
			o, err := ParseObjects(bytes.NewReader([]byte(data)), time.UTC)
			if err != nil || len(o.Todos) != 1 {
				t.Fatalf("%+v %v", o, err)
			}
			td := o.Todos[0]
			w := strings.Join(td.Warnings, ";")
			if td.Parent != c.parent || (c.warning == "") != (w == "") || !strings.Contains(w, c.warning) {
				t.Fatalf("parent %q, warnings %q; want %q, %q", td.Parent, w, c.parent, c.warning)
			}
		})
	}
}
