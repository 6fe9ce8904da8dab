package graphcards

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/msgraph/graphmirror"
)

// StateFile is the mirror's dot-file in the folder.
const StateFile = ".hestia-graph.json"

// Folder is one contact folder of the mailbox.
type Folder struct {
	ID   string `json:"id"`
	Name string `json:"displayName"`
}

// Folders lists the mailbox's contact folders: the default one (Graph's
// well-known name "contacts") first, then the others /me/contactFolders
// lists.
func Folders(ctx context.Context, c *msgraph.Client) ([]Folder, error) {
	var out []Folder
	seen := map[string]bool{}
	var def Folder
	if _, err := c.GetJSON(ctx, "/me/contactFolders/contacts", msgraph.Prefer(0), &def); err == nil && def.ID != "" {
		if def.Name == "" {
			def.Name = "Contacts"
		}
		out, seen[def.ID] = append(out, def), true
	} else if err != nil && !errors.Is(err, msgraph.ErrNotFound) {
		return nil, fmt.Errorf("reading the default contact folder: %w", err)
	}
	err := c.List(ctx, "/me/contactFolders", msgraph.Prefer(0), func(items []json.RawMessage) error {
		for _, raw := range items {
			var f Folder
			if json.Unmarshal(raw, &f) != nil || f.ID == "" || seen[f.ID] {
				continue
			}
			seen[f.ID] = true
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing contact folders: %w", err)
	}
	return out, nil
}

// FolderName is the mirror folder of f among all the folders: its name
// made one safe path segment, with a short hash of its id when another
// folder has the same name.
func FolderName(f Folder, all []Folder) string {
	names := make([]string, len(all))
	for i, o := range all {
		names[i] = o.Name
	}
	return graphmirror.FolderName(f.ID, f.Name, names)
}

// FileName is the mirror's file of a contact.
func FileName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "graph-" + hex.EncodeToString(sum[:16]) + ".vcf"
}

type state struct {
	FolderID  string            `json:"folder_id"`
	DeltaLink string            `json:"delta_link,omitempty"`
	Items     map[string]string `json:"items"` // contact id → change key
}

// Collection mirrors one contact folder. Its passes are serialized.
type Collection struct {
	Client   *msgraph.Client
	Folder   Folder
	Dir      string
	Log      *slog.Logger
	PageSize int

	mu sync.Mutex // serializes passes (they share the state file)
}

// Modes of a pass.
const (
	ModeFull        = graphmirror.ModeFull
	ModeIncremental = graphmirror.ModeIncremental
)

// Stats reports one pass.
type Stats = graphmirror.Stats

func (c *Collection) load() *state {
	st := &state{FolderID: c.Folder.ID, Items: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(c.Dir, StateFile))
	if err != nil {
		return st
	}
	var got state
	if json.Unmarshal(b, &got) != nil || got.FolderID != c.Folder.ID {
		return st
	}
	if got.Items == nil {
		got.Items = map[string]string{}
	}
	return &got
}

// Sync brings the folder up to date (see the package doc). Files are
// written only after a whole round was read; a contact that cannot be
// read is skipped and named, its last good card kept.
func (c *Collection) Sync(ctx context.Context) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return Stats{}, err
	}
	prev := c.load()
	var (
		st      Stats
		next    *state
		writes  map[string][]byte
		removed map[string]bool
	)
	err := graphmirror.Round(&st, prev.DeltaLink == "", func(full bool) (err error) {
		next, writes, removed, err = c.round(ctx, prev, full, &st)
		return err
	})
	if st.Resynced && c.Log != nil {
		c.Log.Info("graphDeltaExpired", "folder", c.Folder.Name)
	}
	if err != nil {
		return st, fmt.Errorf("graph contacts %s: %w", c.Folder.Name, err)
	}
	for id, data := range writes {
		if err := st.Write(c.Dir, FileName(id), data); err != nil {
			return st, err
		}
	}
	stale := map[string]bool{}
	for id := range removed {
		stale[FileName(id)] = true
	}
	if st.Mode == ModeFull {
		// Everything the new round did not list goes.
		keep := map[string]bool{}
		for id := range next.Items {
			keep[FileName(id)] = true
		}
		for _, name := range graphmirror.Files(c.Dir, ".vcf") {
			if !keep[name] {
				stale[name] = true
			}
		}
	}
	for name := range stale {
		st.Remove(c.Dir, name)
	}
	st.Files = len(next.Items)
	b, err := json.Marshal(next)
	if err != nil {
		return st, err
	}
	return st, atomicfile.Write(filepath.Join(c.Dir, StateFile), b, 0o600)
}

func (c *Collection) round(ctx context.Context, prev *state, full bool, st *Stats) (*state, map[string][]byte, map[string]bool, error) {
	next := &state{FolderID: c.Folder.ID, Items: map[string]string{}}
	start := "/me/contactFolders/" + msgraph.Quote(c.Folder.ID) + "/contacts/delta"
	if !full {
		for k, v := range prev.Items {
			next.Items[k] = v
		}
		start = prev.DeltaLink
	}
	writes, removed := map[string][]byte{}, map[string]bool{}
	link, err := c.Client.Delta(ctx, start, msgraph.Prefer(c.PageSize), func(items []msgraph.Item) error {
		for _, it := range items {
			if it.ID == "" {
				st.Skipped++
				st.Warn("an entry without an id was skipped")
				continue
			}
			if it.Removed {
				if _, ok := next.Items[it.ID]; ok {
					delete(next.Items, it.ID)
					delete(writes, it.ID)
					removed[it.ID] = true
					st.Removed++
				}
				continue
			}
			var ct Contact
			if err := json.Unmarshal(it.Raw, &ct); err != nil {
				st.Skipped++
				st.Warn("contact %s skipped: malformed JSON: %v", it.ID, err)
				if _, had := prev.Items[it.ID]; had && full {
					next.Items[it.ID] = prev.Items[it.ID] // keep its last good card
				}
				continue
			}
			data, err := Card(&ct)
			if err != nil {
				st.Skipped++
				st.Warn("contact %s skipped: %v", it.ID, err)
				if _, had := next.Items[it.ID]; had {
					delete(next.Items, it.ID)
					removed[it.ID] = true
				}
				continue
			}
			next.Items[it.ID] = ct.ChangeKey
			delete(removed, it.ID)
			writes[it.ID] = data
			st.Changed++
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	next.DeltaLink = link
	return next, writes, removed, nil
}
