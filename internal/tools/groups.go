package tools

import (
	"sort"
	"strings"
)

// LoadToolName is the tool that loads a group's full definitions on demand
// (internal/tools/builtin.ToolsLoad). When it is registered, the agent
// offers only the core group in full and names every other available tool
// in a one-line-per-group catalogue, so a small model's window is not
// filled with definitions it may never use.
const LoadToolName = "tools_load"

// CoreGroup is the group whose definitions are always offered.
const CoreGroup = "core"

// tableGroup places the tools whose names do not start with their group
// (files, chats, agents, Action Center) and the core tools; every other
// tool's group is its name up to the first underscore (mail_send → mail),
// and an MCP tool's is its server (mcp__NAME__TOOL → mcp__NAME).
func tableGroup(name string) string {
	switch name {
	case "now", "ask_user", LoadToolName:
		return CoreGroup
	case "read_file", "list_dir", "write_file", "edit_file", "find_files":
		return "files"
	case "resolve_recipient":
		return "contacts"
	case "chat_search", "chat_read":
		return "chats"
	case "delegate", "research":
		return "agents"
	case "actions_list", "action_read", "flow_create":
		return "actions"
	}
	return ""
}

// groupSummary is the catalogue's words for a known group; a group
// without any is described by its tool names alone.
func groupSummary(g string) string {
	switch g {
	case "files":
		return "read, list, find, write and edit the user's files"
	case "document":
		return "search and read PDFs and office documents"
	case "shell":
		return "run allow-listed read-only commands, or any program with approval"
	case "web":
		return "fetch web pages and search the web"
	case "mail":
		return "search, read, send, reply to and schedule mail; save attachments"
	case "contacts":
		return "find contacts and resolve a name to an email address"
	case "calendar":
		return "agenda, search, free time; create, change and delete events"
	case "wiki":
		return "the user's notes wiki: search, read, links, write, edit"
	case "memory":
		return "add to, change or remove the user's saved profile memory"
	case "chats":
		return "search and read earlier chats"
	case "watch":
		return "watch a train, page, file or mail search and act when it changes"
	case "actions":
		return "the Action Center: items planned from new mail, and flows"
	case "skill":
		return "load an installed skill's instructions"
	case "agents":
		return "hand a read-only subtask to a helper agent"
	}
	if server, ok := strings.CutPrefix(g, "mcp__"); ok {
		return "tools of the MCP server " + server
	}
	return ""
}

// GroupOf is the catalogue group of the tool with that name.
func GroupOf(name string) string {
	if g := tableGroup(name); g != "" {
		return g
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if server, _, ok := strings.Cut(rest, "__"); ok {
			return "mcp__" + server
		}
	}
	if g, _, ok := strings.Cut(name, "_"); ok && g != "" {
		return g
	}
	return name
}

// Group is one catalogue entry: a group's tools, sorted by name.
type Group struct {
	Name    string
	Summary string
	Tools   []string
}

// Catalogue groups tool names, groups sorted by name; the core group is
// left out (its tools are always offered in full).
func Catalogue(names []string) []Group {
	by := map[string][]string{}
	for _, n := range names {
		if g := GroupOf(n); g != CoreGroup {
			by[g] = append(by[g], n)
		}
	}
	out := make([]Group, 0, len(by))
	for g, ts := range by {
		sort.Strings(ts)
		out = append(out, Group{Name: g, Summary: groupSummary(g), Tools: ts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CatalogueText is the catalogue as one line per group, the same bytes for
// the same groups (it sits in the cached prompt prefix).
func CatalogueText(gs []Group) string {
	var b strings.Builder
	for _, g := range gs {
		b.WriteString("\n- ")
		b.WriteString(g.Name)
		b.WriteString(": ")
		if g.Summary != "" {
			b.WriteString(g.Summary)
			b.WriteString(" (")
			b.WriteString(strings.Join(g.Tools, ", "))
			b.WriteString(")")
		} else {
			b.WriteString(strings.Join(g.Tools, ", "))
		}
	}
	return b.String()
}
