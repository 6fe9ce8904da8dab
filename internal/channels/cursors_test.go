package channels_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/channeltest"
	"github.com/hestia-dev/hestia/internal/store"
)

func TestCursorsKeepAPlacePerConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath(t), channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Each write one second after the last, so activity orders plainly.
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	st := channels.NewStore(db, clock)
	cs := channels.NewCursors(st, "slack", "D_OWNER")

	if v, err := cs.Get(ctx, "D1"); err != nil || v != "" {
		t.Fatalf("Get before any Set = %q, %v; want empty", v, err)
	}
	for _, v := range []string{"100.000001", "100.000002"} {
		if err := cs.Set(ctx, "D1", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := cs.Get(ctx, "D1"); v != "100.000002" {
		t.Errorf("Get after two Sets = %q, want the last", v)
	}
	// Another channel's cursors are its own.
	other := channels.NewCursors(st, "work-slack", "")
	if v, _ := other.Get(ctx, "D1"); v != "" {
		t.Errorf("another channel sees cursor %q", v)
	}

	// Conversations: those with a chat, the most recently active first
	// (a chat made, or a message delivered), then the owner's.
	for _, conv := range []string{"D1", "D2", "D3"} {
		if err := st.SetChat(ctx, channels.Mapping{Channel: "slack", Conv: conv, Sender: "U1", ChatID: "c-" + conv}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetChat(ctx, channels.Mapping{Channel: "work-slack", Conv: "D9", Sender: "U1", ChatID: "c-D9"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Set(ctx, "D2", "200.000001"); err != nil {
		t.Fatal(err)
	}
	got, err := cs.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"D2", "D3", "D1", "D_OWNER"}; !slices.Equal(got, want) {
		t.Errorf("Conversations = %q, want %q", got, want)
	}
	// The owner's conversation is not listed twice once it has a chat.
	if err := st.SetChat(ctx, channels.Mapping{Channel: "slack", Conv: "D_OWNER", Sender: "U1", ChatID: "c-owner"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := cs.Conversations(ctx); !slices.Equal(got, []string{"D_OWNER", "D2", "D3", "D1"}) {
		t.Errorf("Conversations = %q", got)
	}
	if got, _ := other.Conversations(ctx); !slices.Equal(got, []string{"D9"}) {
		t.Errorf("the other channel's Conversations = %q", got)
	}
}

// catchingUp is the fake platform with catch-up: it records the cursors
// the relay lent it and whether that came before Receive.
type catchingUp struct {
	*channeltest.Platform
	mu      sync.Mutex
	cursors *channels.Cursors
	early   bool
}

func (c *catchingUp) CatchUpWith(cs *channels.Cursors) {
	c.mu.Lock()
	c.cursors = cs
	c.mu.Unlock()
}

func (c *catchingUp) Receive(ctx context.Context, h channels.Handler) error {
	c.mu.Lock()
	c.early = c.cursors != nil
	c.mu.Unlock()
	return c.Platform.Receive(ctx, h)
}

func (c *catchingUp) lent() (*channels.Cursors, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursors, c.early
}

func TestRelayLendsCursorsBeforeReceiving(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	plat := &catchingUp{Platform: p}
	newHarness(t, dbPath(t), p, hopts{platform: plat})
	p.Deliver(msg(owner, dm, "hello"))
	channeltest.WaitFor(t, "the reply", func() bool { _, ok := p.FindText(dm, "You said: hello"); return ok })
	cs, early := plat.lent()
	if cs == nil || !early {
		t.Fatalf("cursors lent %v, before Receive %v; want both", cs != nil, early)
	}
	// The conversation the owner wrote in is where a catch-up looks.
	if got, err := cs.Conversations(context.Background()); err != nil || !slices.Equal(got, []string{dm}) {
		t.Errorf("Conversations = %q, %v; want [%s]", got, err, dm)
	}
}
