package config

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// AgentConfig configures the turn loop, approvals and the generic file tools.
type AgentConfig struct {
	Tier            string   `toml:"tier"`             // capability tier for chat turns
	StepLimit       int      `toml:"step_limit"`       // model calls with tools per turn
	QueueLimit      int      `toml:"queue_limit"`      // turns waiting per chat
	ContextTokens   int      `toml:"context_tokens"`   // input window the budget assumes
	ApprovalTimeout Duration `toml:"approval_timeout"` // unanswered approvals resolve to deny
	ToolTimeout     Duration `toml:"tool_timeout"`
	// FileRoots confine the file tools; empty means the home directory.
	FileRoots []string `toml:"file_roots"`
}

// PolicyConfig configures the deterministic tool policy.
type PolicyConfig struct {
	// AutoApprove is the highest risk that runs without asking:
	// none, low, medium or high.
	AutoApprove string `toml:"auto_approve"`
	// DenyPrefixes disable whole tool namespaces (e.g. "mcp__").
	DenyPrefixes []string `toml:"deny_prefixes"`
}

func defaultAgent() AgentConfig {
	return AgentConfig{Tier: "tier-5", StepLimit: 50, QueueLimit: 4, ContextTokens: 32768,
		ApprovalTimeout: Duration(5 * time.Minute), ToolTimeout: Duration(2 * time.Minute)}
}

func defaultPolicy() PolicyConfig { return PolicyConfig{AutoApprove: "low"} }

func (a AgentConfig) validate() []error {
	var errs []error
	if !strings.HasPrefix(a.Tier, "tier-") || len(a.Tier) != 6 || a.Tier[5] < '1' || a.Tier[5] > '6' {
		errs = append(errs, &Error{Key: "agent.tier", Value: a.Tier, Allowed: "one of tier-1 … tier-6"})
	}
	if a.StepLimit < 1 || a.StepLimit > 500 {
		errs = append(errs, &Error{Key: "agent.step_limit", Value: strconv.Itoa(a.StepLimit), Allowed: "an integer from 1 to 500"})
	}
	if a.QueueLimit < 1 || a.QueueLimit > 100 {
		errs = append(errs, &Error{Key: "agent.queue_limit", Value: strconv.Itoa(a.QueueLimit), Allowed: "an integer from 1 to 100"})
	}
	if a.ContextTokens < 1024 || a.ContextTokens > 10_000_000 {
		errs = append(errs, &Error{Key: "agent.context_tokens", Value: strconv.Itoa(a.ContextTokens), Allowed: "an integer from 1024 to 10000000"})
	}
	if d := a.ApprovalTimeout.D(); d < time.Second || d > 24*time.Hour {
		errs = append(errs, &Error{Key: "agent.approval_timeout", Value: d.String(), Allowed: "a duration between 1s and 24h"})
	}
	if d := a.ToolTimeout.D(); d < time.Second || d > time.Hour {
		errs = append(errs, &Error{Key: "agent.tool_timeout", Value: d.String(), Allowed: "a duration between 1s and 1h"})
	}
	for _, r := range a.FileRoots {
		if !filepath.IsAbs(r) && !strings.HasPrefix(r, "~/") {
			errs = append(errs, &Error{Key: "agent.file_roots", Value: r, Allowed: "absolute paths or paths starting with ~/"})
		}
	}
	return errs
}

func (p PolicyConfig) validate() []error {
	var errs []error
	switch p.AutoApprove {
	case "none", "low", "medium", "high":
	default:
		errs = append(errs, &Error{Key: "policy.auto_approve", Value: p.AutoApprove, Allowed: "one of none, low, medium, high"})
	}
	for _, d := range p.DenyPrefixes {
		if strings.TrimSpace(d) == "" {
			errs = append(errs, &Error{Key: "policy.deny_prefixes", Value: d, Allowed: "non-empty tool name prefixes such as mcp__"})
		}
	}
	return errs
}
