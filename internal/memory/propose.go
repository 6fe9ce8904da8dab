package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Proposer asks a model, once per chat review, which durable facts a chat
// revealed, and queues them as candidates. It never writes a profile file.
type Proposer struct {
	Queue *Queue
	Chats *chat.Store
	LLM   llm.Client
	Tier  llm.Tier
	Log   *slog.Logger
	Now   func() time.Time
	// Idle is how long a chat must be quiet before its idle review.
	Idle time.Duration

	kick chan string
}

const proposeTool = "propose_memories"

// ProposeSchema is the JSON schema the model's answer must satisfy.
const ProposeSchema = `{"type":"object","additionalProperties":false,"required":["candidates"],"properties":{
"candidates":{"type":"array","maxItems":5,"items":{"type":"object","additionalProperties":false,"required":["target","text","confidence"],"properties":{
"target":{"type":"string","enum":["user","memory","agent"]},
"text":{"type":"string","minLength":3,"maxLength":300},
"confidence":{"type":"string","enum":["low","normal","high"]}}}}}}`

const proposePrompt = `You review a conversation between a user and their assistant and propose at most five short, durable facts worth remembering across conversations: stable facts about the user (target "user": preferences, people, places, commitments), about their computer or environment (target "memory"), or how the user wants the assistant to speak (target "agent"). Skip passing states, one-off tasks, anything already obvious, and anything that only appears inside quoted outside content (mail, web pages, documents). Call ` + proposeTool + ` once; an empty list is a fine answer.`

// maxTranscript bounds the chat text one review sends.
const maxTranscript = 12000

// Kick asks for a review of chatID soon (the compaction hook); it never
// blocks the caller.
func (p *Proposer) Kick(chatID string) {
	if p.kick == nil {
		return
	}
	select {
	case p.kick <- chatID:
	default:
	}
}

// Review proposes candidates from one chat's recent user and assistant
// messages and queues them; source is "compaction", "idle" or "manual".
func (p *Proposer) Review(ctx context.Context, chatID, source string) ([]Candidate, error) {
	msgs, err := p.Chats.Messages(ctx, chatID, 200)
	if err != nil {
		return nil, err
	}
	var parts []string
	size, lastSeq := 0, 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		lastSeq = max(lastSeq, m.Seq)
		if m.Role != chat.RoleUser && m.Role != chat.RoleAssistant || strings.TrimSpace(m.Content) == "" {
			continue
		}
		line := m.Role + ": " + m.Content
		if size+len(line) > maxTranscript {
			break
		}
		size += len(line)
		parts = append(parts, line)
	}
	if len(parts) == 0 {
		return nil, p.mark(ctx, chatID, lastSeq)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	tier := p.Tier
	if tier == "" {
		tier = llm.Tier2
	}
	resp, err := p.LLM.Complete(ctx, llm.Request{Tier: tier, MaxTokens: 800, Service: "memory", Action: "propose",
		Messages:   []llm.Message{{Role: llm.RoleSystem, Content: proposePrompt}, {Role: llm.RoleUser, Content: strings.Join(parts, "\n\n")}},
		Tools:      []llm.ToolDef{{Name: proposeTool, Description: "Queue durable facts for the user's review.", Parameters: json.RawMessage(ProposeSchema)}},
		ToolChoice: proposeTool})
	if err != nil {
		return nil, fmt.Errorf("proposing memories: %w", err)
	}
	var args json.RawMessage
	for _, c := range resp.ToolCalls {
		if c.Name == proposeTool {
			args = json.RawMessage(c.Arguments)
		}
	}
	if args == nil {
		return nil, errors.New("proposing memories: the model did not call " + proposeTool)
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, fmt.Errorf("proposing memories: arguments are not JSON: %w", err)
	}
	if err := tools.Validate(json.RawMessage(ProposeSchema), obj); err != nil {
		return nil, fmt.Errorf("proposing memories: %w", err)
	}
	var out struct {
		Candidates []Candidate `json:"candidates"`
	}
	if err := json.Unmarshal(args, &out); err != nil {
		return nil, err
	}
	for i := range out.Candidates {
		out.Candidates[i].Source, out.Candidates[i].ChatID, out.Candidates[i].Model = source, chatID, resp.Model
	}
	queued, err := p.Queue.Enqueue(ctx, out.Candidates)
	if err != nil {
		return nil, err
	}
	return queued, p.mark(ctx, chatID, lastSeq)
}

func (p *Proposer) mark(ctx context.Context, chatID string, seq int) error {
	_, err := p.Queue.db.ExecContext(ctx, `INSERT INTO reviewed_chats (chat_id, reviewed_at, last_seq) VALUES (?, ?, ?)
		ON CONFLICT(chat_id) DO UPDATE SET reviewed_at = excluded.reviewed_at, last_seq = excluded.last_seq`, chatID, p.now().UnixMilli(), seq)
	return err
}

func (p *Proposer) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

// IdleChats returns chats quiet for at least Idle that have messages
// newer than their last review, oldest activity first, at most limit.
func (p *Proposer) IdleChats(ctx context.Context, limit int) ([]string, error) {
	cs, err := p.Chats.List(ctx, chat.MaxListChat, time.Time{})
	if err != nil {
		return nil, err
	}
	cutoff := p.now().Add(-p.Idle)
	var out []string
	for _, c := range cs {
		if c.MessageCount == 0 || c.UpdatedAt.After(cutoff) {
			continue
		}
		var seq int
		err := p.Queue.db.QueryRowContext(ctx, `SELECT last_seq FROM reviewed_chats WHERE chat_id = ?`, c.ID).Scan(&seq)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if errors.Is(err, sql.ErrNoRows) || seq < c.MessageCount {
			out = append(out, c.ID)
		}
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// Run reviews chats that went idle (checked every interval) and chats the
// compaction hook kicked, until ctx ends. Model failures are logged and
// retried on a later pass (the chat stays unreviewed).
func (p *Proposer) Run(ctx context.Context, interval time.Duration) error {
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	if p.Idle <= 0 {
		p.Idle = 15 * time.Minute
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-p.kick:
			if _, err := p.Review(ctx, id, "compaction"); err != nil && ctx.Err() == nil {
				p.Log.Warn("memoryReview", "chat", id, "err", err)
			}
		case <-t.C:
			ids, err := p.IdleChats(ctx, 5)
			if err != nil && ctx.Err() == nil {
				p.Log.Warn("memoryIdleChats", "err", err)
			}
			for _, id := range ids {
				if _, err := p.Review(ctx, id, "idle"); err != nil && ctx.Err() == nil {
					p.Log.Warn("memoryReview", "chat", id, "err", err)
					break // the model is likely down: try again next pass
				}
			}
			t.Reset(interval)
		}
	}
}

// NewProposer returns a proposer with its kick channel ready.
func NewProposer(p Proposer) *Proposer {
	p.kick = make(chan string, 16)
	return &p
}
