package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/httpjson"
)

func writeTodoFile(t *testing.T, dir, name, vtodo string) {
	t.Helper()
	writeCal(t, dir, name, "BEGIN:VTODO\nDTSTAMP:20260101T000000Z\n"+strings.TrimSpace(vtodo)+"\nEND:VTODO")
}

func TestTasksCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	now := time.Now().In(loc)
	day := func(n int) string { return now.AddDate(0, 0, n).Format("20060102") }
	dir := filepath.Join(t.TempDir(), "home")
	writeTodoFile(t, dir, "rent.ics", "UID:rent\nSUMMARY:Pay the rent\nDUE;VALUE=DATE:"+day(-2)+"\nPRIORITY:1")
	writeTodoFile(t, dir, "trip.ics", "UID:trip\nSUMMARY:Plan the trip\nDUE;VALUE=DATE:"+day(3))
	writeTodoFile(t, dir, "milk.ics", "UID:milk\nSUMMARY:Buy milk")
	writeTodoFile(t, dir, "oat.ics", "UID:oat\nSUMMARY:Buy oat milk")
	// A broken to-do is named, its file's other content kept.
	writeCal(t, dir, "broken.ics", "BEGIN:VTODO\nUID:bad\nDTSTAMP:20260101T000000Z\nRECURRENCE-ID:soon\nSUMMARY:lost\nEND:VTODO\nBEGIN:VTODO\nUID:kept\nDTSTAMP:20260101T000000Z\nSUMMARY:Kept task\nDUE:not-a-date\nEND:VTODO")

	if r := run(t, home, env, "tasks"); r.code != 0 || !strings.Contains(r.stdout, "no task lists") {
		t.Fatalf("empty: %+v", r)
	}
	r := run(t, home, env, "cal", "import", dir, "--name", "home")
	if r.code != 0 || !strings.Contains(r.stdout, "warning broken.ics: skipped VTODO bad") || !strings.Contains(r.stdout, "warning broken.ics: repaired VTODO kept: DUE ignored") {
		t.Fatalf("import: %+v", r)
	}
	r = run(t, home, env, "tasks")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 8 || lines[0] != "Overdue" || !strings.Contains(lines[1], "[ ] ") || !strings.Contains(lines[1], "Pay the rent !1  [home]  rent") ||
		lines[2] != "Next 7 days" || !strings.Contains(lines[3], "Plan the trip") || lines[4] != "No due date" {
		t.Fatalf("tasks:\n%s", r.stdout)
	}
	// Words filter; flags after positionals.
	r = run(t, home, env, "tasks", "list", "milk", "--json")
	var res struct {
		Tasks []struct{ UID, Summary string }
		Lists []string
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res.Tasks) != 2 || res.Lists[0] != "home" {
		t.Fatalf("tasks list milk --json: %+v", r)
	}
	if r = run(t, home, env, "tasks", "--due", "today"); r.code != 0 || strings.Contains(r.stdout, "trip") || !strings.Contains(r.stdout, "rent") {
		t.Fatalf("--due today: %+v", r)
	}
	if r = run(t, home, env, "tasks", "--due", "someday"); r.code != 2 {
		t.Fatalf("bad --due: %+v", r)
	}

	// Writes run through the authority here (no daemon): the command is
	// the approval of its one call.
	r = run(t, home, env, "tasks", "add", "Call the plumber", "--due", "2030-01-02", "--priority", "2", "--json")
	var out struct {
		Operation struct{ Kind, State, UID, Href, Calendar string }
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Operation.State != "done" || out.Operation.Calendar != "home" {
		t.Fatalf("add: %+v", r)
	}
	data, _ := os.ReadFile(filepath.Join(dir, out.Operation.Href))
	if !strings.Contains(string(data), "SUMMARY:Call the plumber") || !strings.Contains(string(data), "DUE;VALUE=DATE:20300102") || !strings.Contains(string(data), "PRIORITY:2") {
		t.Fatalf("added file:\n%s", data)
	}
	if r = run(t, home, env, "tasks", "done", "buy"); r.code == 0 || !strings.Contains(r.stderr, "2 open tasks match") {
		t.Fatalf("ambiguous done: %+v", r)
	}
	if r = run(t, home, env, "tasks", "done", "plumber"); r.code != 0 || !strings.Contains(r.stdout, `completed "Call the plumber" in home`) {
		t.Fatalf("done by text: %+v", r)
	}
	if r = run(t, home, env, "tasks", "done", "milk", "--list", "home", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"kind": "task_complete"`) {
		t.Fatalf("done by uid: %+v", r)
	}
	r = run(t, home, env, "tasks", "--done")
	if !strings.Contains(r.stdout, "Completed") || !strings.Contains(r.stdout, "[x] Buy milk") {
		t.Fatalf("--done: %+v", r)
	}
	if r = run(t, home, env, "cal", "ops"); !strings.Contains(r.stdout, "task_create") || !strings.Contains(r.stdout, "task_complete") {
		t.Fatalf("journal: %+v", r)
	}
	// The user's deny prefix still holds for their own command.
	denied := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[policy]\ndeny_prefixes = [\"tasks_\"]\n"), 0o644)
	if r = run(t, home, denied, "tasks", "add", "x"); r.code == 0 || !strings.Contains(r.stderr, "refused by policy") {
		t.Fatalf("denied add: %+v", r)
	}
	for _, bad := range [][]string{{"tasks", "add"}, {"tasks", "done"}, {"tasks", "frob"}, {"tasks", "add", "x", "--priority", "12"}} {
		if r = run(t, home, env, bad...); r.code != 2 {
			t.Errorf("%v: %+v", bad, r)
		}
	}
}

// TestTasksCalDAV: a Radicale task list configured in config.toml is
// mirrored by hestia cal sync, listed by hestia tasks, and written back by
// hestia tasks add/done.
func TestTasksCalDAV(t *testing.T) {
	t.Parallel()
	base := davtest.Start(t, "bob", davtest.Collection{Name: "todo", Display: "Todo", Components: "VTODO"})
	todo := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VTODO\r\nUID:tax\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:File the taxes\r\nDUE;VALUE=DATE:20300430\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
	req, _ := http.NewRequest(http.MethodPut, base+"bob/todo/tax.ics", strings.NewReader(todo))
	req.SetBasicAuth("bob", "x")
	req.Header.Set("Content-Type", "text/calendar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("seeding radicale: %v %v", err, resp)
	}
	resp.Body.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[calendar]\ntimezone = \"Europe/Rome\"\n[[calendar.caldav]]\nname = \"dav\"\nurl = \""+base+"\"\nusername = \"bob\"\npassword_env = \"BOB_PW\"\n"), 0o644)
	env := map[string]string{"BOB_PW": "x"}
	if r := run(t, home, env, "cal", "sync"); r.code != 0 || !strings.Contains(r.stdout, "dav/todo: 1 files, 1 added") {
		t.Fatalf("sync: %+v", r)
	}
	if r := run(t, home, env, "tasks"); r.code != 0 || !strings.Contains(r.stdout, "Tue 2030-04-30  File the taxes  [dav/todo]  tax") {
		t.Fatalf("tasks: %+v", r)
	}
	if r := run(t, home, env, "tasks", "add", "Send the receipts", "--due", "2030-04-20"); r.code != 0 || !strings.Contains(r.stdout, `added "Send the receipts" in dav/todo`) {
		t.Fatalf("add: %+v", r)
	}
	if r := run(t, home, env, "tasks", "done", "tax"); r.code != 0 || !strings.Contains(r.stdout, `completed "File the taxes"`) {
		t.Fatalf("done: %+v", r)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"bob/todo/tax.ics", nil)
	req.SetBasicAuth("bob", "x")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "STATUS:COMPLETED") {
		t.Fatalf("server copy:\n%s", b)
	}
	if r := run(t, home, env, "tasks"); r.code != 0 || strings.Contains(r.stdout, "taxes") || !strings.Contains(r.stdout, "Send the receipts") {
		t.Fatalf("tasks after writes: %+v", r)
	}
}

// With a daemon on the home's socket a task write is its request (marked
// as the command line's, with the home's token), never run here too; a
// daemon that hangs up is an error, not a second try; a stale socket
// sends the write to the stores here.
func TestTasksWriteThroughTheDaemon(t *testing.T) {
	home, err := os.MkdirTemp("", "ht") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	dir := filepath.Join(t.TempDir(), "home")
	writeTodoFile(t, dir, "milk.ics", "UID:milk\nSUMMARY:Buy milk")
	if r := run(t, home, env, "cal", "import", dir, "--name", "home"); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := authtoken.LoadOrCreate(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Hestia-Origin")+" "+string(b)+" "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		mu.Unlock()
		switch r.URL.Path {
		case "/api/tasks/complete":
			httpjson.Write(w, http.StatusOK, map[string]any{"operation": map[string]any{"id": 7, "kind": "task_complete", "calendar": "home", "uid": "milk", "summary": "Buy milk", "state": "done"}})
		case "/api/tasks":
			httpjson.Error(w, http.StatusConflict, "refused", "refused by policy: tasks_add was not run (deferred): your rule asks")
		default:
			panic(http.ErrAbortHandler)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clisock.Serve(ctx, clisock.Path(home), h, nil, time.Second) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(clisock.Path(home)); err == nil {
			break
		}
		if i == 400 {
			t.Fatal("no socket")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := run(t, home, env, "tasks", "done", "milk"); r.code != 0 || !strings.Contains(r.stdout, `completed "Buy milk" in home (milk)`) {
		t.Errorf("done through the daemon: %+v", r)
	}
	if r := run(t, home, env, "tasks", "add", "x"); r.code != 1 || !strings.Contains(r.stderr, "your rule asks") {
		t.Errorf("a daemon's refusal: %+v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := []string{`POST /api/tasks/complete cli {"uid":"milk"} ` + tok.Value(), `POST /api/tasks cli {"summary":"x"} ` + tok.Value()}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests %q, want %q", got, want)
	}
	mu.Unlock()
	// The file was not touched here: the daemon (here a fake) writes.
	if data, _ := os.ReadFile(filepath.Join(dir, "milk.ics")); strings.Contains(string(data), "COMPLETED") {
		t.Fatal("the command wrote beside the daemon")
	}
	// A socket left by a daemon that died: the write runs here.
	ln, err := net.Listen("unix", clisock.Path(home))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if r := run(t, home, env, "tasks", "done", "milk"); r.code != 0 || !strings.Contains(r.stdout, `completed "Buy milk"`) {
		t.Errorf("with a stale socket: %+v", r)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "milk.ics")); !strings.Contains(string(data), "STATUS:COMPLETED") {
		t.Fatalf("not completed here:\n%s", data)
	}
}

// TestTasksEditAndDelete: hestia tasks edit changes the fields given
// (and only those), clears with none, 0 and "", reopens; hestia tasks
// delete removes a task, a recurring one only with --series; every bad
// argument is said clearly.
func TestTasksEditAndDelete(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	dir := filepath.Join(t.TempDir(), "home")
	writeTodoFile(t, dir, "rent.ics", "UID:rent\nSUMMARY:Pay the rent\nDUE;VALUE=DATE:20300101\nPRIORITY:1\nDESCRIPTION:old notes")
	writeTodoFile(t, dir, "trip.ics", "UID:trip\nSUMMARY:Plan the trip")
	writeTodoFile(t, dir, "milk.ics", "UID:milk\nSUMMARY:Buy milk")
	writeTodoFile(t, dir, "oat.ics", "UID:oat\nSUMMARY:Buy oat milk")
	writeTodoFile(t, dir, "bins.ics", "UID:bins\nSUMMARY:Take the bins out\nDUE;VALUE=DATE:20260302\nRRULE:FREQ=WEEKLY;BYDAY=MO")
	if r := run(t, home, env, "cal", "import", dir, "--name", "home"); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	file := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	r := run(t, home, env, "tasks", "edit", "rent", "--due", "2030-01-05", "--priority", "0", "--notes", "by transfer")
	if r.code != 0 || r.stdout != "updated \"Pay the rent\" in home (rent)\n" {
		t.Fatalf("edit by uid: %+v", r)
	}
	if got := file("rent.ics"); !strings.Contains(got, "DUE;VALUE=DATE:20300105") || strings.Contains(got, "PRIORITY") || !strings.Contains(got, "DESCRIPTION:by transfer") || !strings.Contains(got, "SUMMARY:Pay the rent") {
		t.Fatalf("edited file:\n%s", got)
	}
	// By words, flags after them; --notes "" clears, --due none too.
	if r = run(t, home, env, "tasks", "edit", "plan", "the", "trip", "--summary", "Plan the summer trip", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"kind": "task_update"`) {
		t.Fatalf("edit by words: %+v", r)
	}
	if r = run(t, home, env, "tasks", "edit", "rent", "--due", "none", "--notes", ""); r.code != 0 {
		t.Fatalf("clear: %+v", r)
	}
	if got := file("rent.ics"); strings.Contains(got, "DUE") || strings.Contains(got, "DESCRIPTION") {
		t.Fatalf("cleared file:\n%s", got)
	}
	if got := file("trip.ics"); !strings.Contains(got, "SUMMARY:Plan the summer trip") {
		t.Fatalf("renamed file:\n%s", got)
	}
	// Reopen a completed task by its words.
	if r = run(t, home, env, "tasks", "done", "milk"); r.code != 0 {
		t.Fatalf("done: %+v", r)
	}
	if r = run(t, home, env, "tasks", "edit", "buy", "milk", "--reopen"); r.code != 0 || !strings.Contains(r.stdout, `updated "Buy milk" in home (milk)`) {
		t.Fatalf("reopen: %+v", r)
	}
	if got := file("milk.ics"); !strings.Contains(got, "STATUS:NEEDS-ACTION") {
		t.Fatalf("reopened file:\n%s", got)
	}
	// Bad arguments: each says what is wrong.
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"tasks", "edit"}, 2, []string{"usage: hestia tasks edit"}},
		{[]string{"tasks", "edit", "rent"}, 2, []string{"nothing to change", "--summary"}},
		{[]string{"tasks", "edit", "rent", "--colour", "red"}, 2, []string{"-colour"}},
		{[]string{"tasks", "edit", "buy", "--summary", "x"}, 1, []string{"2 open tasks match", `"Buy milk" (uid milk, list home)`, `"Buy oat milk" (uid oat, list home)`}},
		{[]string{"tasks", "edit", "rent", "--due", "someday"}, 1, []string{`"someday" is not a time`}},
		{[]string{"tasks", "edit", "rent", "--due", ""}, 2, []string{"due"}},
		{[]string{"tasks", "edit", "rent", "--priority", "12"}, 2, []string{"priority"}},
		{[]string{"tasks", "edit", "rent", "--summary", " "}, 1, []string{"summary cannot be emptied"}},
		{[]string{"tasks", "edit", "nothing like it", "--summary", "x"}, 1, []string{`no open task matches "nothing like it"`}},
		{[]string{"tasks", "edit", "trip", "--reopen"}, 1, []string{"is not completed"}},
		{[]string{"tasks", "delete"}, 2, []string{"usage: hestia tasks delete"}},
		{[]string{"tasks", "delete", "bins"}, 1, []string{"repeats", "--series"}},
		{[]string{"tasks", "delete", "milk", "--series"}, 1, []string{"does not repeat"}},
		{[]string{"tasks", "delete", "buy"}, 1, []string{"2 open tasks match"}},
		{[]string{"tasks", "delete", "milk", "--all"}, 2, []string{"-all"}},
	} {
		r := run(t, home, env, c.args...)
		ok := r.code == c.code
		for _, w := range c.want {
			ok = ok && strings.Contains(r.stderr, w)
		}
		if !ok {
			t.Errorf("%q: %+v, want exit %d saying %q", c.args, r, c.code, c.want)
		}
	}
	// Delete: by uid, by words, a series with --series.
	if r = run(t, home, env, "tasks", "delete", "oat"); r.code != 0 || r.stdout != "deleted \"Buy oat milk\" from home (oat)\n" {
		t.Fatalf("delete: %+v", r)
	}
	if r = run(t, home, env, "tasks", "delete", "take", "the", "bins", "--series"); r.code != 0 || !strings.Contains(r.stdout, `deleted "Take the bins out"`) {
		t.Fatalf("delete the series: %+v", r)
	}
	for _, name := range []string{"oat.ics", "bins.ics"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", name, err)
		}
	}
	if r = run(t, home, env, "tasks"); r.code != 0 || strings.Contains(r.stdout, "bins") || strings.Contains(r.stdout, "oat") || !strings.Contains(r.stdout, "Plan the summer trip") {
		t.Fatalf("tasks after the writes: %+v", r)
	}
	if r = run(t, home, env, "cal", "ops"); !strings.Contains(r.stdout, "task_update") || !strings.Contains(r.stdout, "task_delete") {
		t.Fatalf("journal: %+v", r)
	}
	if r = run(t, home, env, "tasks", "-h"); !strings.Contains(r.stdout, "edit UID|TEXT") || !strings.Contains(r.stdout, "delete UID|TEXT [--series]") {
		t.Fatalf("help: %+v", r)
	}
}

// TestTasksEditCalDAV: hestia tasks edit and delete write a Radicale task
// list back to the server.
func TestTasksEditCalDAV(t *testing.T) {
	t.Parallel()
	base := davtest.Start(t, "dora", davtest.Collection{Name: "todo", Display: "Todo", Components: "VTODO"})
	put := func(name, body string) {
		req, _ := http.NewRequest(http.MethodPut, base+"dora/todo/"+name, strings.NewReader(body))
		req.SetBasicAuth("dora", "x")
		req.Header.Set("Content-Type", "text/calendar")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("seeding radicale: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	get := func(name string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"dora/todo/"+name, nil)
		req.SetBasicAuth("dora", "x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	todo := func(uid, summary string) string {
		return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VTODO\r\nUID:" + uid + "\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:" + summary + "\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
	}
	put("tax.ics", todo("tax", "File the taxes"))
	put("dentist.ics", todo("dentist", "Book the dentist"))
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[calendar]\ntimezone = \"Europe/Rome\"\n[[calendar.caldav]]\nname = \"dav\"\nurl = \""+base+"\"\nusername = \"dora\"\npassword_env = \"DORA_PW\"\n"), 0o644)
	env := map[string]string{"DORA_PW": "x"}
	if r := run(t, home, env, "cal", "sync"); r.code != 0 {
		t.Fatalf("sync: %+v", r)
	}
	if r := run(t, home, env, "tasks", "edit", "tax", "--due", "2030-04-30", "--priority", "1", "--summary", "File the 2029 taxes"); r.code != 0 || !strings.Contains(r.stdout, `updated "File the 2029 taxes" in dav/todo (tax)`) {
		t.Fatalf("edit: %+v", r)
	}
	if _, b := get("tax.ics"); !strings.Contains(b, "SUMMARY:File the 2029 taxes") || !strings.Contains(b, "DUE;VALUE=DATE:20300430") || !strings.Contains(b, "PRIORITY:1") {
		t.Fatalf("server copy:\n%s", b)
	}
	if r := run(t, home, env, "tasks", "delete", "dentist"); r.code != 0 || !strings.Contains(r.stdout, `deleted "Book the dentist" from dav/todo`) {
		t.Fatalf("delete: %+v", r)
	}
	if code, _ := get("dentist.ics"); code != http.StatusNotFound {
		t.Fatalf("the deleted task answers %d", code)
	}
	if r := run(t, home, env, "tasks"); r.code != 0 || strings.Contains(r.stdout, "dentist") || !strings.Contains(r.stdout, "File the 2029 taxes !1") {
		t.Fatalf("tasks after the writes: %+v", r)
	}
}

// With a daemon, tasks edit and delete are its requests, marked as the
// command line's.
func TestTasksEditThroughTheDaemon(t *testing.T) {
	home, err := os.MkdirTemp("", "ht") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	dir := filepath.Join(t.TempDir(), "home")
	writeTodoFile(t, dir, "milk.ics", "UID:milk\nSUMMARY:Buy milk")
	if r := run(t, home, env, "cal", "import", dir, "--name", "home"); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	// The home's token: the command sends it to the daemon.
	if _, _, err := authtoken.LoadOrCreate(paths.TokenFile()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Hestia-Origin")+" "+string(b))
		mu.Unlock()
		switch r.URL.Path {
		case "/api/tasks/update":
			httpjson.Write(w, http.StatusOK, map[string]any{"operation": map[string]any{"id": 8, "kind": "task_update", "calendar": "home", "uid": "milk", "summary": "Buy oat milk", "state": "done"}})
		case "/api/tasks/delete":
			httpjson.Error(w, http.StatusConflict, "failed", "task write failed: task \"Buy milk\" repeats")
		default:
			panic(http.ErrAbortHandler)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clisock.Serve(ctx, clisock.Path(home), h, nil, time.Second) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(clisock.Path(home)); err == nil {
			break
		}
		if i == 400 {
			t.Fatal("no socket")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := run(t, home, env, "tasks", "edit", "milk", "--summary", "Buy oat milk", "--priority", "0", "--notes", ""); r.code != 0 || !strings.Contains(r.stdout, `updated "Buy oat milk" in home (milk)`) {
		t.Errorf("edit through the daemon: %+v", r)
	}
	if r := run(t, home, env, "tasks", "delete", "milk"); r.code != 1 || !strings.Contains(r.stderr, "repeats") {
		t.Errorf("a daemon's refusal: %+v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`POST /api/tasks/update cli {"uid":"milk","summary":"Buy oat milk","priority":0,"notes":""}`, `POST /api/tasks/delete cli {"uid":"milk"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests %q, want %q", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "milk.ics")); !strings.Contains(string(data), "SUMMARY:Buy milk") {
		t.Fatalf("the command wrote beside the daemon:\n%s", data)
	}
}
