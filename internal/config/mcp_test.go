package config

import (
	"strings"
	"testing"
)

func TestMCPValidation(t *testing.T) {
	t.Parallel()
	ok := map[string]MCPServer{
		"files":  {Command: "/usr/bin/mcp-files", Args: []string{"--root", "/tmp"}, Env: []string{"FOO_BAR"}},
		"remote": {URL: "https://mcp.example/mcp", HeadersEnv: map[string]string{"Authorization": "REMOTE_TOKEN"}},
		"local":  {URL: "http://127.0.0.1:9000/mcp", HeadersFile: map[string]string{"X-Key": "/run/key"}},
	}
	if errs := (MCPConfig{Servers: ok}).validate(); len(errs) != 0 {
		t.Fatalf("valid servers refused: %v", errs)
	}
	for name, tc := range map[string]struct {
		srv  map[string]MCPServer
		want string
	}{
		"no transport":    {map[string]MCPServer{"a": {}}, "mcp.servers.a.command"},
		"both":            {map[string]MCPServer{"a": {Command: "x", URL: "https://h/"}}, "not both"},
		"bad name":        {map[string]MCPServer{"A-b": {Command: "x"}}, "server name"},
		"double _":        {map[string]MCPServer{"a__b": {Command: "x"}}, "server name"},
		"plain remote":    {map[string]MCPServer{"a": {URL: "http://mcp.example/"}}, "https://"},
		"ftp":             {map[string]MCPServer{"a": {URL: "ftp://h/"}}, "http:// or https://"},
		"creds in url":    {map[string]MCPServer{"a": {URL: "https://u:p@h/"}}, "without credentials"},
		"env name":        {map[string]MCPServer{"a": {Command: "x", Env: []string{"A=B"}}}, "mcp.servers.a.env"},
		"relative dir":    {map[string]MCPServer{"a": {Command: "x", Dir: "rel"}}, "absolute path"},
		"header env name": {map[string]MCPServer{"a": {URL: "https://h/", HeadersEnv: map[string]string{"Authorization": "not valid"}}}, "headers_env.Authorization"},
		"header file rel": {map[string]MCPServer{"a": {URL: "https://h/", HeadersFile: map[string]string{"Authorization": "tok"}}}, "absolute path of a file"},
		"stdio headers":   {map[string]MCPServer{"a": {Command: "x", HeadersEnv: map[string]string{"A": "B"}}}, "only apply to HTTP"},
		"timeout":         {map[string]MCPServer{"a": {Command: "x", Timeout: Duration(1)}}, "between 1s and 30m"},
	} {
		errs := (MCPConfig{Servers: tc.srv}).validate()
		if len(errs) == 0 {
			t.Errorf("%s: accepted", name)
			continue
		}
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		if !strings.Contains(strings.Join(all, "\n"), tc.want) {
			t.Errorf("%s: errors %v do not mention %q", name, all, tc.want)
		}
	}
}

func TestMCPFromTOML(t *testing.T) {
	t.Parallel()
	cfg := Default()
	err := decodeFile([]byte("[mcp.servers.gh]\nurl = \"https://api.example/mcp\"\nheaders_env = { Authorization = \"GH_TOKEN\" }\n[mcp.servers.fs]\ncommand = \"mcp-fs\"\nargs = [\"/tmp\"]\n"), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MCP.Servers["gh"].HeadersEnv["Authorization"] != "GH_TOKEN" || cfg.MCP.Servers["fs"].Args[0] != "/tmp" {
		t.Fatalf("decoded %+v", cfg.MCP)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := decodeFile([]byte("[mcp.servers.gh]\nurll = \"x\"\n"), &cfg); err == nil || !strings.Contains(err.Error(), "mcp.servers.gh.urll") {
		t.Fatalf("unknown key: %v", err)
	}
}
