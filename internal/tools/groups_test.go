package tools

import (
	"slices"
	"testing"
)

func TestGroupOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"mail_send": "mail", "read_file": "files", "now": CoreGroup, "tools_load": CoreGroup,
		"mcp__gh__list_issues": "mcp__gh", "mcp__odd": "mcp", "probe": "probe", "resolve_recipient": "contacts", "flow_create": "actions",
		"document_search": "document", "skill_load": "skill", "_x": "_x"} {
		if got := GroupOf(name); got != want {
			t.Errorf("GroupOf(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestCatalogue(t *testing.T) {
	t.Parallel()
	cat := Catalogue([]string{"mail_send", "now", "mail_search", "probe", "mcp__gh__issues", "tools_load"})
	var names []string
	for _, g := range cat {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, []string{"mail", "mcp__gh", "probe"}) || !slices.Equal(cat[0].Tools, []string{"mail_search", "mail_send"}) {
		t.Fatalf("catalogue %+v", cat)
	}
	want := "\n- mail: search, read, send, reply to and schedule mail; save attachments (mail_search, mail_send)" +
		"\n- mcp__gh: tools of the MCP server gh (mcp__gh__issues)\n- probe: probe"
	if got := CatalogueText(cat); got != want {
		t.Errorf("text %q\nwant %q", got, want)
	}
	if len(Catalogue(nil)) != 0 || CatalogueText(nil) != "" {
		t.Error("an empty catalogue is not empty")
	}
}
